// The prepared claims' checkpoint: what is written reads back the same, a missing file is no claim, and
// every file that cannot be trusted whole (edited, cut short, another version, too large, not a regular
// file) is refused with one line.
#include "dra/checkpoint.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "claim_fixtures.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::dra {
namespace {

using gpuctk::test::TempDir;
using test::error_text;

using test::k_other_uid;
using test::k_uid;

Checkpoint two_claims() {
  Checkpoint checkpoint;
  checkpoint.claims[std::string(k_uid)] = PreparedClaim{
      "default",
      "train",
      {PreparedDevice{
           {"gpus"}, "node-1", "gpu-0", {"k8s.gpu.nvidia.com/claim=" + std::string(k_uid) + "-gpu-0"}},
       PreparedDevice{{"gpus", "big/mig"},
                      "node-1",
                      "gpu-1",
                      {"k8s.gpu.nvidia.com/claim=" + std::string(k_uid) + "-gpu-1"}}}};
  checkpoint.claims[std::string(k_other_uid)] = PreparedClaim{"prod", "infer", {}};
  return checkpoint;
}

// `text` with the first `from` replaced by `to`.
std::string replaced(std::string text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(DraCheckpoint, EncodesDeterministicallyAndReadsBack) {
  const std::string text = encode_checkpoint(two_claims());
  EXPECT_EQ(text, encode_checkpoint(two_claims()));
  EXPECT_TRUE(text.ends_with("}\n"));
  EXPECT_NE(text.find("\"version\": 1"), std::string::npos);
  EXPECT_NE(text.find("\"cdiIds\""), std::string::npos);
  auto parsed = parse_checkpoint(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, two_claims());
  auto empty = parse_checkpoint(encode_checkpoint({}));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->claims.empty());
}

TEST(DraCheckpoint, AChangedFileFailsItsChecksum) {
  const std::string text = encode_checkpoint(two_claims());
  for (const auto& changed :
       {replaced(text, "\"train\"", "\"trains\""), replaced(text, "\"gpu-1\"", "\"gpu-2\""),
        replaced(text, "\"prod\"", "\"prod\", \"extra\": 1")}) {
    auto parsed = parse_checkpoint(changed);
    ASSERT_FALSE(parsed);
    EXPECT_EQ(parsed.error().message, "checksum mismatch (the file was changed or cut short)");
  }
  // Formatting is not content: the same JSON on one line still passes.
  const std::string compact = nlohmann::json::parse(text).dump();
  EXPECT_TRUE(parse_checkpoint(compact)) << compact;
}

TEST(DraCheckpoint, ACutFileIsNotJson) {
  const std::string text = encode_checkpoint(two_claims());
  auto parsed = parse_checkpoint(text.substr(0, text.size() / 2));
  ASSERT_FALSE(parsed);
  EXPECT_TRUE(parsed.error().message.starts_with("not JSON: parse error at line ")) << parsed.error().message;
  EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos);
}

TEST(DraCheckpoint, AnotherVersionIsRefused) {
  const std::string text = encode_checkpoint(two_claims());
  auto parsed = parse_checkpoint(replaced(text, "\"version\": 1", "\"version\": 2"));
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "checkpoint version 2, not 1 (written by another gpuctk-dra-plugin)");
  EXPECT_EQ(error_text(parse_checkpoint(R"({"claims": {}})")), "no checkpoint version");
  EXPECT_EQ(error_text(parse_checkpoint("[1]")), "expected a JSON object");
}

// Files with a right checksum but content this version would misread: refused too.
TEST(DraCheckpoint, WellSummedButWrongContentIsRefused) {
  Checkpoint bad_uid;
  bad_uid.claims["../x"] = PreparedClaim{"default", "train", {}};
  EXPECT_EQ(error_text(parse_checkpoint(encode_checkpoint(bad_uid))),
            "claims[\"../x\"]: claim uid \"../x\" is not a UID (want 8-4-4-4-12 hexadecimal digits)");

  auto document = nlohmann::json::parse(encode_checkpoint(two_claims()));
  document["claims"][std::string(k_uid)]["devices"][0]["pool"] = 3;
  document["unknown"] = true;
  document.erase("checksum");
  // The checksum as the writer computes it: of the compact text without it.
  const auto resum = [](nlohmann::json doc) {
    uint64_t hash = 14695981039346656037ULL;
    for (const char c : doc.dump()) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    doc["checksum"] = hex;
    return doc.dump();
  };
  EXPECT_EQ(error_text(parse_checkpoint(resum(document))), "checkpoint: unknown field \"unknown\"");
  document.erase("unknown");
  EXPECT_EQ(error_text(parse_checkpoint(resum(document))),
            "claims[\"0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5\"].devices[0].pool: expected a string");
}

TEST(DraCheckpoint, AMissingFileIsNoClaim) {
  TempDir tmp("gpuctk-dra");
  auto read = read_checkpoint(tmp.path() + "/checkpoint.json");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_TRUE(read->claims.empty());
}

TEST(DraCheckpoint, WrittenAtomicallyPrivateAndReadBack) {
  TempDir tmp("gpuctk-dra");
  const std::string path = tmp.path() + "/checkpoint.json";
  ASSERT_TRUE(write_checkpoint(path, two_claims()));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600U);
  auto read = read_checkpoint(path);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(*read, two_claims());
  ASSERT_TRUE(write_checkpoint(path, {}));
  EXPECT_TRUE(read_checkpoint(path).value_or(two_claims()).claims.empty());
}

TEST(DraCheckpoint, ReadErrorsNameThePath) {
  TempDir tmp("gpuctk-dra");
  const std::string path =
      tmp.write("checkpoint.json", "{\"version\": 1, \"claims\": {}, \"checksum\": \"0\"}");
  EXPECT_EQ(error_text(read_checkpoint(path)),
            path + ": checksum mismatch (the file was changed or cut short)");
  const std::string fifo = tmp.path() + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_text(read_checkpoint(fifo)), "read " + fifo + ": not a regular file");
  const std::string big = tmp.write("big.json", std::string(k_max_checkpoint_bytes + 1, ' '));
  EXPECT_EQ(error_text(read_checkpoint(big)), "read " + big + ": larger than 4194304 bytes");
}

TEST(DraCheckpoint, NothingIsWrittenThatCouldNotBeReadAgain) {
  TempDir tmp("gpuctk-dra");
  const std::string path = tmp.path() + "/checkpoint.json";
  Checkpoint huge;
  for (int i = 0; i < 10000; ++i) {
    char uid[37];
    std::snprintf(uid, sizeof uid, "%08x-0000-4000-8000-000000000000", static_cast<unsigned>(i));
    huge.claims[uid] = PreparedClaim{"default", std::string(400, 'a'), {}};
  }
  auto written = write_checkpoint(path, huge);
  ASSERT_FALSE(written);
  EXPECT_TRUE(written.error().message.starts_with("write " + path + ": checkpoint of "));
  EXPECT_TRUE(written.error().message.ends_with(" bytes, more than 4194304"));
  EXPECT_TRUE(read_checkpoint(path).value_or(two_claims()).claims.empty());  // nothing there
  EXPECT_FALSE(write_checkpoint(tmp.path() + "/missing/checkpoint.json", two_claims()));
}

}  // namespace
}  // namespace gpuctk::dra
