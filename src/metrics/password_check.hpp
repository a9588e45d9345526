#pragma once
// Basic authentication's password check for gpuctk-exporter: the bcrypt hashes of the web config file's
// basic_auth_users, checked with libcrypt (crypt_rn). Compiled into the library gpuctk_password_check,
// which only gpuctk-exporter and the tests link (libcrypt stays out of gpuctk).
//
// bcrypt is slow on purpose (cost 10: ~70 ms of CPU), and Prometheus scrapes every few seconds with the
// same credentials, so successes are cached, as exporter-toolkit caches them: up to 64 entries, keyed by
// a keyed hash (SipHash-2-4 under a random per-object key, 128 bits) of the user, the password and the
// stored hash, so the cache holds no password and no one can aim a password at an entry. Failures are
// never cached: each costs a bcrypt, which is what slows guessing down.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctk::metrics {

// Whether `hash` is a bcrypt hash as htpasswd -B and Go's bcrypt write it: "$2a$", "$2b$" or "$2y$", a
// two-digit cost from 04 to 31, "$", then 53 characters of bcrypt's base64 ("./A-Za-z0-9": 22 of salt, 31
// of hash), 60 characters in all. libcrypt would take other methods' hashes too (DES, MD5, SHA-crypt,
// yescrypt); the web config file allows bcrypt only, as exporter-toolkit does.
constexpr bool is_bcrypt_hash(std::string_view hash) {
  constexpr std::string_view k_versions = "aby";
  constexpr std::string_view k_alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (hash.size() != 60 || !hash.starts_with("$2") || k_versions.find(hash[2]) == std::string_view::npos ||
      hash[3] != '$' || !digit(hash[4]) || !digit(hash[5]) || hash[6] != '$') {
    return false;
  }
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  return cost >= 4 && cost <= 31 && hash.find_first_not_of(k_alphabet, 7) == std::string_view::npos;
}

class PasswordCheck {
 public:
  // `users`: user -> bcrypt hash, as load_web_config checked them; a user whose hash is not bcrypt
  // (is_bcrypt_hash) is left out, so never allowed.
  explicit PasswordCheck(std::map<std::string, std::string, std::less<>> users);

  // Whether `password` is `user`'s. Thread-safe; bcrypt runs one at a time (it is CPU-bound work, as the
  // toolkit serialises it), cache hits do not wait for it. An unknown user costs one bcrypt all the same
  // (against the first configured user's hash, so it takes as long as a known user with that cost), and is
  // refused: timing does not tell which users exist. A password with a NUL byte or of more than 72 bytes is
  // refused without a bcrypt: bcrypt would only see what comes before the NUL, or the first 72 bytes, so any
  // ending would pass.
  bool allowed(std::string_view user, std::string_view password);

  // How many checks ran bcrypt (the cache's misses): for the tests, which cannot see time.
  [[nodiscard]] uint64_t bcrypt_runs() const;

 private:
  using Tag = std::array<uint64_t, 2>;

  bool verify(const std::string& hash, std::string_view password);
  [[nodiscard]] Tag tag(std::string_view user, std::string_view password, std::string_view hash) const;
  bool cached(const Tag& tag) const;
  void remember(const Tag& tag);

  std::map<std::string, std::string, std::less<>> m_users;
  std::string m_dummy_hash;         // what an unknown user is checked against
  std::array<uint64_t, 2> m_key{};  // SipHash key, from getrandom
  bool m_cache_on = false;          // no random key: no cache (every check pays bcrypt)

  mutable std::mutex m_cache_mutex;
  std::vector<Tag> m_cache;  // at most k_cache_size, replaced round-robin
  size_t m_next = 0;

  mutable std::mutex m_bcrypt_mutex;
  uint64_t m_bcrypt_runs = 0;  // under m_bcrypt_mutex
};

namespace detail {
// SipHash-2-4 with a 128-bit output (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012, the
// 128-bit variant): exposed for its test vectors.
std::array<uint64_t, 2> siphash128(const std::array<uint64_t, 2>& key, std::string_view data);
}  // namespace detail

}  // namespace gpuctk::metrics
