#include "metrics/password_check.hpp"

#include <crypt.h>
#include <string.h>
#include <sys/random.h>

#include <bit>
#include <memory>

namespace gpuctk::metrics {

namespace {

constexpr size_t k_cache_size = 64;
// bcrypt uses the first 72 bytes of a password and ignores the rest: a longer one is refused, so that no
// other ending passes for it.
constexpr size_t k_max_password = 72;

// Byte-wise comparison whose time depends on the length only, not on where the first difference is: the
// stored hash must not leak a byte at a time to someone who measures replies.
bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  unsigned difference = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  }
  return difference == 0;
}

uint64_t load_le64(const char* bytes, size_t count) {
  uint64_t word = 0;
  for (size_t i = 0; i < count; ++i) {
    word |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return word;
}

struct SipState {
  uint64_t v0, v1, v2, v3;

  void rounds(int count) {
    for (int i = 0; i < count; ++i) {
      v0 += v1;
      v1 = std::rotl(v1, 13) ^ v0;
      v0 = std::rotl(v0, 32);
      v2 += v3;
      v3 = std::rotl(v3, 16) ^ v2;
      v0 += v3;
      v3 = std::rotl(v3, 21) ^ v0;
      v2 += v1;
      v1 = std::rotl(v1, 17) ^ v2;
      v2 = std::rotl(v2, 32);
    }
  }
  void absorb(uint64_t word) {  // 2 compression rounds (SipHash-2-4)
    v3 ^= word;
    rounds(2);
    v0 ^= word;
  }
  [[nodiscard]] uint64_t fold() const { return v0 ^ v1 ^ v2 ^ v3; }
};

// The user, the password and the stored hash, each behind its length, so that no two triples encode
// alike ("ab"+"c" and "a"+"bc" differ).
std::string cache_key_input(std::string_view user, std::string_view password, std::string_view hash) {
  std::string input;
  for (const std::string_view part : {user, password, hash}) {
    const uint64_t size = part.size();
    input.append(reinterpret_cast<const char*>(&size), sizeof size);
    input.append(part);
  }
  return input;
}

}  // namespace

namespace detail {

std::array<uint64_t, 2> siphash128(const std::array<uint64_t, 2>& key, std::string_view data) {
  SipState s{key[0] ^ 0x736f6d6570736575ULL, key[1] ^ 0x646f72616e646f6dULL ^ 0xee,
             key[0] ^ 0x6c7967656e657261ULL, key[1] ^ 0x7465646279746573ULL};
  const size_t whole = data.size() / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) {
    s.absorb(load_le64(data.data() + i, 8));
  }
  // The last word: the remaining bytes, and the length's low byte on top.
  s.absorb(load_le64(data.data() + whole, data.size() - whole) | (static_cast<uint64_t>(data.size()) << 56));
  s.v2 ^= 0xee;
  s.rounds(4);
  const uint64_t first = s.fold();
  s.v1 ^= 0xdd;
  s.rounds(4);
  return {first, s.fold()};
}

}  // namespace detail

PasswordCheck::PasswordCheck(std::map<std::string, std::string, std::less<>> users)
    : m_users(std::move(users)) {
  std::erase_if(m_users, [](const auto& user) { return !is_bcrypt_hash(user.second); });
  // An unknown user is checked against a real user's hash: same method, same cost. With no user at all
  // there is no one whose existence could leak.
  if (!m_users.empty()) {
    m_dummy_hash = m_users.begin()->second;
  }
  // Without a random key the cache could be aimed at; it is simply not used then.
  m_cache_on = ::getrandom(m_key.data(), sizeof m_key, 0) == static_cast<ssize_t>(sizeof m_key);
  m_cache.reserve(k_cache_size);
}

bool PasswordCheck::allowed(std::string_view user, std::string_view password) {
  if (password.size() > k_max_password || password.find('\0') != std::string_view::npos) {
    return false;
  }
  const auto found = m_users.find(user);
  if (found == m_users.end()) {
    if (!m_dummy_hash.empty()) {
      (void)verify(m_dummy_hash, password);  // spent for its time only
    }
    return false;
  }
  const Tag key = tag(user, password, found->second);
  if (m_cache_on && cached(key)) {
    return true;
  }
  if (!verify(found->second, password)) {
    return false;
  }
  if (m_cache_on) {
    remember(key);
  }
  return true;
}

uint64_t PasswordCheck::bcrypt_runs() const {
  const std::scoped_lock lock(m_bcrypt_mutex);
  return m_bcrypt_runs;
}

bool PasswordCheck::verify(const std::string& hash, std::string_view password) {
  std::string phrase(password);  // crypt_rn takes a NUL-terminated string
  // crypt_rn's work area (32 KiB), zeroed as it asks before its first use.
  const auto data = std::make_unique<crypt_data>();
  bool ok = false;
  {
    const std::scoped_lock lock(m_bcrypt_mutex);
    ++m_bcrypt_runs;
    const char* out = ::crypt_rn(phrase.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
    ok = out != nullptr && equal_constant_time(out, hash);
  }
  ::explicit_bzero(phrase.data(), phrase.size());
  ::explicit_bzero(data.get(), sizeof(crypt_data));
  return ok;
}

PasswordCheck::Tag PasswordCheck::tag(std::string_view user, std::string_view password,
                                      std::string_view hash) const {
  std::string input = cache_key_input(user, password, hash);
  const Tag result = detail::siphash128(m_key, input);
  ::explicit_bzero(input.data(), input.size());
  return result;
}

bool PasswordCheck::cached(const Tag& tag) const {
  const std::scoped_lock lock(m_cache_mutex);
  bool found = false;
  for (const Tag& entry : m_cache) {
    found |= ((entry[0] ^ tag[0]) | (entry[1] ^ tag[1])) == 0;
  }
  return found;
}

void PasswordCheck::remember(const Tag& tag) {
  const std::scoped_lock lock(m_cache_mutex);
  for (const Tag& entry : m_cache) {
    if (entry == tag) {
      return;  // two checks of the same credentials ran bcrypt at once
    }
  }
  if (m_cache.size() < k_cache_size) {
    m_cache.push_back(tag);
    return;
  }
  m_cache[m_next] = tag;
  m_next = (m_next + 1) % k_cache_size;
}

}  // namespace gpuctk::metrics
