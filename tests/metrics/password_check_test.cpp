// Basic authentication's bcrypt check: right, wrong and unknown users against hashes made here with
// libcrypt itself, the success cache (same answers, no second bcrypt, 64 entries), and what is refused
// before bcrypt runs.
#include "metrics/password_check.hpp"

#include <crypt.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gpuctk::metrics {
namespace {

// A hash of `password` made now by libcrypt (crypt_gensalt_rn's random salt): `prefix` "$2b$" (cost 4, the
// cheapest bcrypt), "$2a$",
// "$2y$", or another method's ("$6$").
std::string make_hash(const std::string& password, const char* prefix = "$2b$") {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  const unsigned long cost = std::string_view(prefix).starts_with("$2") ? 4 : 0;
  if (::crypt_gensalt_rn(prefix, cost, nullptr, 0, salt, sizeof salt) == nullptr) {
    ADD_FAILURE() << "crypt_gensalt_rn " << prefix;
    return "";
  }
  // crypt_r, not the crypt_rn PasswordCheck calls: its failure is a string starting with '*'.
  const auto data = std::make_unique<crypt_data>();
  const std::string hash = ::crypt_r(password.c_str(), salt, data.get());
  if (hash.starts_with('*')) {
    ADD_FAILURE() << "crypt_r " << salt;
    return "";
  }
  return hash;
}

TEST(BcryptHash, TheFormsHtpasswdAndGoWrite) {
  const std::string tail(53, 'a');
  EXPECT_TRUE(is_bcrypt_hash("$2a$10$" + tail));
  EXPECT_TRUE(is_bcrypt_hash("$2b$04$" + tail));
  EXPECT_TRUE(is_bcrypt_hash("$2y$31$" + tail));
  EXPECT_TRUE(is_bcrypt_hash("$2y$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"));
  EXPECT_TRUE(is_bcrypt_hash(make_hash("secret")));
}

TEST(BcryptHash, EverythingElseIsRefused) {
  const std::string tail(53, 'a');
  EXPECT_FALSE(is_bcrypt_hash(""));
  EXPECT_FALSE(is_bcrypt_hash("secret"));
  EXPECT_FALSE(is_bcrypt_hash("$2x$10$" + tail));                  // crypt_blowfish's buggy variant
  EXPECT_FALSE(is_bcrypt_hash("$2$10$" + tail + "a"));             // the oldest form, no minor letter
  EXPECT_FALSE(is_bcrypt_hash("$2b$03$" + tail));                  // cost below 4
  EXPECT_FALSE(is_bcrypt_hash("$2b$32$" + tail));                  // cost above 31
  EXPECT_FALSE(is_bcrypt_hash("$2b$1a$" + tail));                  // cost not two digits
  EXPECT_FALSE(is_bcrypt_hash("$2b$10$" + tail.substr(1)));        // 59 characters
  EXPECT_FALSE(is_bcrypt_hash("$2b$10$" + tail + "a"));            // 61
  EXPECT_FALSE(is_bcrypt_hash("$2b$10$" + tail.substr(1) + "+"));  // not bcrypt's base64
  EXPECT_FALSE(is_bcrypt_hash("$2b$10-" + tail));
  EXPECT_FALSE(is_bcrypt_hash(make_hash("secret", "$6$")));
}

// The reference vectors of SipHash-2-4-128 (key 00..0f, message 00..len-1): lengths that end on a word,
// inside one, and the empty message.
TEST(SipHash128, ReferenceVectors) {
  const std::array<uint64_t, 2> key = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  std::string message;
  for (char c = 0; c < 16; ++c) {
    message.push_back(c);
  }
  using Out = std::array<uint64_t, 2>;
  EXPECT_EQ(detail::siphash128(key, message.substr(0, 0)),
            (Out{0xe6a825ba047f81a3ULL, 0x930255c71472f66dULL}));
  EXPECT_EQ(detail::siphash128(key, message.substr(0, 7)),
            (Out{0x53c1dbd8beebf1a1ULL, 0x3982f01fa64ab8c0ULL}));
  EXPECT_EQ(detail::siphash128(key, message.substr(0, 8)),
            (Out{0x61f55862baa9623bULL, 0xb49714f364e2830fULL}));
  EXPECT_EQ(detail::siphash128(key, message.substr(0, 15)),
            (Out{0x11a8b03399e99354ULL, 0xd9c3cf970fec087eULL}));
}

class PasswordCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_alice_hash = make_hash("alice's secret");
    m_bob_hash = make_hash("bob's secret");
  }
  PasswordCheck check() { return PasswordCheck({{"alice", m_alice_hash}, {"bob", m_bob_hash}}); }

  std::string m_alice_hash, m_bob_hash;
};

TEST_F(PasswordCheckTest, RightPasswordIsAllowedWrongOneIsNot) {
  auto users = check();
  EXPECT_TRUE(users.allowed("alice", "alice's secret"));
  EXPECT_TRUE(users.allowed("bob", "bob's secret"));
  EXPECT_FALSE(users.allowed("alice", "bob's secret"));
  EXPECT_FALSE(users.allowed("alice", "alice's secreT"));
  EXPECT_FALSE(users.allowed("alice", ""));
  EXPECT_FALSE(users.allowed("Alice", "alice's secret"));
  EXPECT_EQ(users.bcrypt_runs(), 6u);
}

TEST_F(PasswordCheckTest, EveryBcryptPrefixIsChecked) {
  PasswordCheck users(
      {{"a", make_hash("pa", "$2a$")}, {"b", make_hash("pb", "$2b$")}, {"y", make_hash("py", "$2y$")}});
  EXPECT_TRUE(users.allowed("a", "pa"));
  EXPECT_TRUE(users.allowed("b", "pb"));
  EXPECT_TRUE(users.allowed("y", "py"));
  EXPECT_FALSE(users.allowed("y", "pa"));
}

TEST_F(PasswordCheckTest, AnUnknownUserSpendsOneBcryptAndIsRefused) {
  auto users = check();
  // Even with the password of the user whose hash stands in for the unknown one.
  EXPECT_FALSE(users.allowed("mallory", "alice's secret"));
  EXPECT_EQ(users.bcrypt_runs(), 1u);
  EXPECT_FALSE(users.allowed("", ""));
  EXPECT_EQ(users.bcrypt_runs(), 2u);
}

TEST_F(PasswordCheckTest, SuccessesAreCachedFailuresAreNot) {
  auto users = check();
  EXPECT_TRUE(users.allowed("alice", "alice's secret"));
  EXPECT_EQ(users.bcrypt_runs(), 1u);
  EXPECT_TRUE(users.allowed("alice", "alice's secret"));  // the cache: same answer, no bcrypt
  EXPECT_TRUE(users.allowed("alice", "alice's secret"));
  EXPECT_EQ(users.bcrypt_runs(), 1u);
  // A success of alice's says nothing of bob with her password, nor of a wrong one.
  EXPECT_FALSE(users.allowed("bob", "alice's secret"));
  EXPECT_FALSE(users.allowed("alice", "alice's secret "));
  EXPECT_FALSE(users.allowed("alice", "alice's secret "));
  EXPECT_EQ(users.bcrypt_runs(), 4u);
}

TEST_F(PasswordCheckTest, TheCacheHoldsSixtyFourSuccesses) {
  std::map<std::string, std::string, std::less<>> hashes;
  for (int i = 0; i < 65; ++i) {
    hashes.emplace("user" + std::to_string(100 + i), make_hash("password" + std::to_string(i)));
  }
  PasswordCheck users(hashes);
  for (int i = 0; i < 65; ++i) {
    ASSERT_TRUE(users.allowed("user" + std::to_string(100 + i), "password" + std::to_string(i)));
  }
  EXPECT_EQ(users.bcrypt_runs(), 65u);
  // The 65th took the oldest entry's place (user100's); user101 to user164 are still there.
  EXPECT_TRUE(users.allowed("user164", "password64"));
  EXPECT_TRUE(users.allowed("user101", "password1"));
  EXPECT_EQ(users.bcrypt_runs(), 65u);
  EXPECT_TRUE(users.allowed("user100", "password0"));
  EXPECT_EQ(users.bcrypt_runs(), 66u);
}

// bcrypt sees the first 72 bytes of a password, and a C string ends at NUL: what it would not see must
// not be allowed to differ.
TEST_F(PasswordCheckTest, PasswordsBcryptWouldCutAreRefusedWithoutBcrypt) {
  const std::string long_password(72, 'p');
  PasswordCheck users({{"carol", make_hash(long_password)}, {"dave", make_hash("short")}});
  EXPECT_TRUE(users.allowed("carol", long_password));
  EXPECT_EQ(users.bcrypt_runs(), 1u);
  EXPECT_FALSE(users.allowed("carol", long_password + "x"));
  EXPECT_FALSE(users.allowed("dave", std::string("short\0tail", 10)));
  EXPECT_FALSE(users.allowed("nobody", std::string(73, 'p')));
  EXPECT_EQ(users.bcrypt_runs(), 1u);
}

TEST_F(PasswordCheckTest, AUserWhoseHashIsNotBcryptIsNeverAllowed) {
  PasswordCheck users({{"erin", make_hash("sha", "$6$")}});
  EXPECT_FALSE(users.allowed("erin", "sha"));
}

TEST_F(PasswordCheckTest, NoUsersRefusesEveryoneWithoutBcrypt) {
  PasswordCheck users({});
  EXPECT_FALSE(users.allowed("alice", "alice's secret"));
  EXPECT_EQ(users.bcrypt_runs(), 0u);
}

TEST_F(PasswordCheckTest, ChecksFromSeveralThreadsGetTheirOwnAnswers) {
  auto users = check();
  std::vector<std::thread> threads;
  std::vector<int> wrong_answers(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&users, &wrong_answers, t] {
      for (int i = 0; i < 20; ++i) {
        const bool right = (i + t) % 2 == 0;
        const bool alice = t % 2 == 0;
        const std::string password =
            std::string(alice ? "alice's" : "bob's") + (right ? " secret" : " guess");
        if (users.allowed(alice ? "alice" : "bob", password) != right) {
          ++wrong_answers[t];
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(wrong_answers, std::vector<int>(4, 0));
  // Every wrong guess ran bcrypt (40); each user's right password at least once, at most once per thread.
  EXPECT_GE(users.bcrypt_runs(), 42u);
  EXPECT_LE(users.bcrypt_runs(), 44u);
}

}  // namespace
}  // namespace gpuctk::metrics
