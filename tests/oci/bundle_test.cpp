#include "oci/bundle.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/syscall_filter.hpp"
#include "support/temp_dir_test.hpp"
#include "util/file.hpp"

namespace gpuctk::oci {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

class OciBundle : public test::TempDirTest {
 protected:
  OciBundle() : TempDirTest("gpuctk-bundle") {}

  [[nodiscard]] std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(m_dir)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  [[nodiscard]] struct stat stat_config() const {
    struct stat st {};
    EXPECT_EQ(::stat((m_dir + "/config.json").c_str(), &st), 0);
    return st;
  }
};

std::string data_file(const std::string& name) {
  const auto text = read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/oci/" + name);
  EXPECT_TRUE(text) << (text ? "" : text.error().message);
  return text.value_or("");
}

TEST(OciConfig, ParseErrorsNameTheFileWithLineAndColumn) {
  const auto bad = parse_config("{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {\"env\": [\"A=1\",]}\n}");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "config.json: syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal "
            "at line 3, column 29");
  const auto array = parse_config("[]");
  ASSERT_FALSE(array);
  EXPECT_EQ(array.error().message, "config.json: the document is an array, expected an object");
}

TEST(OciConfig, DumpIsCompactAndKeepsKeyOrder) {
  const auto config = parse_config("{\n\t\"z\": 1,\n\t\"a\": {\"y\": [1, 2], \"b\": \"\\u00e9\"}\n}\n");
  ASSERT_TRUE(config);
  EXPECT_EQ(dump_config(*config), "{\"z\":1,\"a\":{\"y\":[1,2],\"b\":\"\xc3\xa9\"}}");
}

TEST(OciConfig, DumpReplacesInvalidUtf8InsteadOfThrowing) {
  Json config = Json::object();
  config["s"] = std::string(
      "a\xff"
      "b");
  EXPECT_EQ(dump_config(config),
            "{\"s\":\"a\xef\xbf\xbd"
            "b\"}");
}

TEST(OciConfig, RealPodmanConfigRoundTripsByteForByte) {
  const std::string text = data_file("podman-config.json");
  const auto config = parse_config(text);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(dump_config(*config), text);
}

TEST(OciConfig, RealRuncSpecConfigParses) {
  const auto config = parse_config(data_file("runc-spec-config.json"));
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ((*config)["ociVersion"], "1.0.2-dev");
  EXPECT_EQ((*config)["root"].dump(), R"({"path":"rootfs","readonly":true})");
}

TEST_F(OciBundle, ReadConfigErrorsNameThePath) {
  const auto missing = read_config(m_dir);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "read " + m_dir + "/config.json: No such file or directory");
  ASSERT_TRUE(write_file_atomic(m_dir + "/config.json", "{\"a\":\n\n", 0644));
  const auto bad = read_config(m_dir);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            m_dir +
                "/config.json: syntax error while parsing value - unexpected end of input; "
                "expected '[', '{', or a literal at line 3, column 1");
}

TEST_F(OciBundle, WriteConfigKeepsTheModeAndLeavesNoTemporaryFile) {
  ASSERT_TRUE(write_file_atomic(m_dir + "/config.json", "{\"old\":true}", 0640));
  Json config = Json::object();
  config["ociVersion"] = "1.0.2";
  config["process"] = Json::object();
  ASSERT_TRUE(write_config(m_dir, config));
  EXPECT_EQ(read_file(m_dir + "/config.json").value(), R"({"ociVersion":"1.0.2","process":{}})");
  EXPECT_EQ(stat_config().st_mode & 07777, 0640u);
  EXPECT_EQ(entries(), std::vector<std::string>{"config.json"});
  const auto back = read_config(m_dir + "/");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, config);
}

TEST_F(OciBundle, WriteConfigCreatesANewFileReadableByItsOwnerOnly) {
  const mode_t old_mask = ::umask(0);
  const auto written = write_config(m_dir, Json::object());
  ::umask(old_mask);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(stat_config().st_mode & 07777, 0600u);
  EXPECT_EQ(read_file(m_dir + "/config.json").value(), "{}");
}

TEST_F(OciBundle, WriteConfigKeepsTheOwnerWhenRunAsRoot) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to give the file to another owner";
  }
  const std::string path = m_dir + "/config.json";
  ASSERT_TRUE(write_file_atomic(path, "{}", 0600));
  ASSERT_EQ(::chown(path.c_str(), 4321, 8765), 0);
  ASSERT_TRUE(write_config(m_dir, Json::object()));
  const struct stat st = stat_config();
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 8765u);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(OciBundle, WriteConfigIntoAMissingDirectoryNamesThePath) {
  const auto written = write_config(m_dir + "/nope", Json::object());
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message, "write " + m_dir + "/nope/config.json: create temporary file in " +
                                         m_dir + "/nope: No such file or directory");
  EXPECT_TRUE(entries().empty());
}

TEST_F(OciBundle, ReadConfigRefusesASymlinkAndNeverShowsWhatItPointsTo) {
  // Whoever can write the bundle can point config.json at a host file: it is neither read nor echoed.
  const std::string host = m_dir + "/host-secret";
  ASSERT_TRUE(write_file_atomic(host, "root:$6$secret:19000:0:99999:7:::\n", 0600));
  const std::string path = m_dir + "/config.json";
  ASSERT_EQ(::symlink(host.c_str(), path.c_str()), 0);
  const auto linked = read_config(m_dir);
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().message,
            "read " + path + ": is a symbolic link, refused (bundle files are never followed)");
  // Also when the target is a valid config: runc would read it, but gpuctk edits only a regular file.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_TRUE(write_file_atomic(host, R"({"root":{"path":"/"}})", 0600));
  ASSERT_EQ(::symlink(host.c_str(), path.c_str()), 0);
  EXPECT_FALSE(read_config(m_dir));
}

TEST_F(OciBundle, ReadConfigRefusesAFifoWithoutBlocking) {
  const std::string path = m_dir + "/config.json";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const auto fifo = read_config(m_dir);
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().message, "read " + path + ": not a regular file");
}

TEST_F(OciBundle, ReadConfigRefusesAFileOverTheLimitBeforeReadingIt) {
  const std::string path = m_dir + "/config.json";
  ASSERT_TRUE(write_file_atomic(path, "{}", 0600));
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(k_max_config_size) + 1), 0);  // sparse: no disk used
  const auto large = read_config(m_dir);
  ASSERT_FALSE(large);
  EXPECT_EQ(large.error().message, "read " + path + ": larger than 16777216 bytes");
  // At the limit the file is read. The NUL bytes after "{}" end the input for nlohmann, as the end of
  // the first value ends it for runc's json.Decoder: both read {}.
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(k_max_config_size)), 0);
  const auto at_limit = read_config(m_dir);
  ASSERT_TRUE(at_limit) << at_limit.error().message;
  EXPECT_EQ(*at_limit, Json::object());
}

TEST_F(OciBundle, WriteConfigRefusesASymlinkOrFifoAndLeavesTheTargetAlone) {
  const std::string host = m_dir + "/host-file";
  ASSERT_TRUE(write_file_atomic(host, "host", 0644));
  const std::string path = m_dir + "/config.json";
  ASSERT_EQ(::symlink(host.c_str(), path.c_str()), 0);
  const auto linked = write_config(m_dir, Json::object());
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().message,
            "write " + path + ": is a symbolic link, refused (bundle files are never followed)");
  EXPECT_EQ(read_file(host).value(), "host");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const auto fifo = write_config(m_dir, Json::object());
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().message, "write " + path + ": not a regular file");
  EXPECT_EQ(entries(), (std::vector<std::string>{"config.json", "host-file"}));
}

TEST_F(OciBundle, WriteConfigGivesTheOwnerBackOnTheFdNeverByPath) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to give the file to another owner";
  }
  // A chown by path after the rename would follow a symlink swapped in meanwhile (root chowning a host
  // file): every owner or mode change must go through the temporary file's fd.
  const std::string path = m_dir + "/config.json";
  ASSERT_TRUE(write_file_atomic(path, "{}", 0640));
  ASSERT_EQ(::chown(path.c_str(), 4321, 8765), 0);
  const auto outcome = test::run_under_filter(test::forbid_path_chown(),
                                              [&] { return write_config(m_dir, Json::object()) ? 0 : 1; });
  if (outcome == test::FilterOutcome::unavailable) {
    GTEST_SKIP() << "seccomp is not available here";
  }
  ASSERT_EQ(outcome, test::FilterOutcome::clean) << test::to_string(outcome);
  const struct stat st = stat_config();
  EXPECT_EQ(st.st_uid, 4321u);
  EXPECT_EQ(st.st_gid, 8765u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(OciBundle, WriteConfigNeverFlushesToDisk) {
  // config.json is written on every container start and does not outlive the boot: no fsync (5-14 ms).
  ASSERT_TRUE(write_file_atomic(m_dir + "/config.json", "{}", 0644));
  Json config = Json::object();
  config["ociVersion"] = "1.0.2";
  const auto outcome =
      test::run_under_filter(test::forbid_sync(), [&] { return write_config(m_dir, config) ? 0 : 1; });
  if (outcome == test::FilterOutcome::unavailable) {
    GTEST_SKIP() << "seccomp is not available here";
  }
  EXPECT_EQ(outcome, test::FilterOutcome::clean) << test::to_string(outcome);
  EXPECT_EQ(read_file(m_dir + "/config.json").value(), R"({"ociVersion":"1.0.2"})");
}

TEST(OciConfig, KeysRuncReadsDifferentlyAreRefused) {
  const auto error_for = [](std::string_view text) {
    const auto result = parse_config(text);
    return result ? std::string("parsed") : result.error().message;
  };
  // Go's decoder merges a repeated struct: runc would run a read-only "/b".
  EXPECT_EQ(error_for(R"({"root":{"path":"/a","readonly":true},"root":{"path":"/b"}})"),
            R"(config.json: duplicate key "root" at line 1, column 39)");
  EXPECT_EQ(
      error_for(R"({"ociVersion":"1.0.2","Process":{"args":["sh"]}})"),
      R"(config.json: key "Process" is read by runc as the OCI field "process" (Go ignores case in keys) at line 1, column 23)");
  EXPECT_EQ(
      error_for("{\"hooks\":{\n \"CreateContainer\":[]}}"),
      R"(config.json: key "CreateContainer" is read by runc as the OCI field "createContainer" (Go ignores case in keys) at line 2, column 2)");
  EXPECT_EQ(
      error_for(R"({"mounts":[{"destination":"/a"},{"Destination":"/b"}]})"),
      R"(config.json: key "Destination" is read by runc as the OCI field "destination" (Go ignores case in keys) at line 1, column 34)");
  // U+017F (long s) folds to "s" in Go, whether escaped or raw UTF-8.
  EXPECT_EQ(
      error_for(R"({"proce\u017fs":{}})"),
      R"(config.json: key "proce\xc5\xbfs" is read by runc as the OCI field "process" (Go ignores case in keys) at line 1, column 2)");
  // Maps compare keys exactly in Go too: two annotations that differ in case are two annotations.
  EXPECT_EQ(error_for(R"({"annotations":{"a":"1","A":"2"},"linux":{"sysctl":{"x":"1","X":"2"}}})"), "parsed");
  EXPECT_EQ(error_for(R"({"annotations":{"a":"1","a":"2"}})"),
            R"(config.json: duplicate key "a" at line 1, column 25)");
  // A key that is no field is ignored by runc and by gpuctk.
  EXPECT_EQ(error_for(R"({"x-vendor":{"Process":1},"process":{"Environment":[]}})"), "parsed");
}

TEST(OciRootfs, RelativeRootIsResolvedAgainstTheBundle) {
  const auto config = parse_config(R"({"root":{"path":"rootfs","readonly":true}})");
  ASSERT_TRUE(config);
  EXPECT_EQ(rootfs_path(*config, "/run/b1").value(), "/run/b1/rootfs");
  EXPECT_EQ(rootfs_path(*config, "/run/b1/").value(), "/run/b1/rootfs");
  const auto dotted = parse_config(R"({"root":{"path":"./x/../rootfs/"}})");
  ASSERT_TRUE(dotted);
  EXPECT_EQ(rootfs_path(*dotted, "/run/b1").value(), "/run/b1/rootfs");
}

TEST(OciRootfs, AbsoluteRootIsKept) {
  const auto config = parse_config(R"({"root":{"path":"/var/lib/containers/storage/overlay/abc/merged/"}})");
  ASSERT_TRUE(config);
  EXPECT_EQ(rootfs_path(*config, "/run/b1").value(), "/var/lib/containers/storage/overlay/abc/merged");
}

TEST(OciRootfs, MissingOrBadRootIsAnError) {
  const auto error_for = [](std::string_view text) {
    const auto result = rootfs_path(parse_config(text).value(), "/b");
    return result ? "ok: " + *result : result.error().message;
  };
  EXPECT_EQ(error_for("{}"), "config.json: root.path is missing");
  EXPECT_EQ(error_for(R"({"root":{}})"), "config.json: root.path is missing");
  EXPECT_EQ(error_for(R"({"root":"rootfs"})"), "config.json: root is a string, expected an object");
  EXPECT_EQ(error_for(R"({"root":{"path":1}})"), "config.json: root.path is a number, expected a string");
  EXPECT_EQ(error_for(R"({"root":{"path":""}})"), "config.json: root.path is empty");
}

TEST(OciRootfs, ConfigPath) {
  EXPECT_EQ(config_path("/run/b"), "/run/b/config.json");
  EXPECT_EQ(config_path("/run/b/"), "/run/b/config.json");
}

}  // namespace
}  // namespace gpuctk::oci
