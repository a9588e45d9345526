// `gpuctk config` through the real binary: the effective configuration with each value's source, as
// YAML; --set writes the file the hooks read (atomically, its mode kept, every other byte kept), and
// refuses what they would refuse; a broken file is shown and then its one error line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string_view>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

class CliConfigTest : public ::testing::Test {
 protected:
  test::RunResult run(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), "config");
    return test::run_gpuctk(args, m_dir.path(), {.env = std::move(env)});
  }
  test::TempDir m_dir;
};

TEST_F(CliConfigTest, ShowsEveryKeyWithItsSourceAsYaml) {
  const std::string file = m_dir.write("c.yaml", "# mine\nlog-level: debug\nlog_file: /tmp/x\n");
  const auto r = run({"--config", file});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string hook_path = GPUCTK_INSTALLED_BINARY;
  // Every source comment starts in one column: two spaces after the longest "key: value".
  const size_t width = std::max(std::string_view("no-additional-gids-for-device-nodes: false").size(),
                                ("hook-path: " + hook_path).size()) +
                       2;
  const auto pad = [width](std::string line) { return line + std::string(width - line.size(), ' ') + "# "; };
  EXPECT_EQ(r.out, "# " + file + " (from --config)\n" + pad("spec-dirs: [/etc/cdi, /var/run/cdi]") +
                       "default\n" + pad("default-kind: nvidia.com/gpu") + "default\n" +
                       pad("annotation-prefixes: [cdi.k8s.io/]") + "default\n" +
                       pad("accept-envvar-when-unprivileged: true") + "default\n" +
                       pad("accept-volume-mounts: false") + "default\n" + pad("supported-capabilities: all") +
                       "default\n" + pad("disable-require: false") + "default\n" + pad("driver-root: /") +
                       "default\n" + pad("dev-root: /") + "default\n" + pad("hook-path: " + hook_path) +
                       "default\n" + pad("no-additional-gids-for-device-nodes: false") + "default\n" +
                       pad("allow-ldconfig-from-container: false") + "default\n" + pad("ld-cache: merge") +
                       "default\n" + pad("runtimes: [runc, crun]") + "default\n" + pad("runtime-mode: cdi") +
                       "default\n" + pad("mps-pipe-roots: [/run/nvidia/mps]") + "default\n" +
                       pad("mps-log-roots: [/run/nvidia/mps]") + "default\n" +
                       pad("log-file: /var/log/gpuctk.log") + "default\n" + pad("log-level: debug") + file +
                       ":2\n");
  EXPECT_EQ(r.err, "gpuctk: warning: " + file +
                       ":3: unknown key \"log_file\" ignored (did you mean \"log-file\"?)\n");
  // $GPUCTK_CONFIG picks the file as for the hooks, and says so.
  const auto env = run({}, {"GPUCTK_CONFIG=" + file});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  EXPECT_TRUE(env.out.starts_with("# " + file + " (from $GPUCTK_CONFIG)\n")) << env.out;
  EXPECT_EQ(env.out.substr(env.out.find('\n')), r.out.substr(r.out.find('\n')));
}

TEST_F(CliConfigTest, SetWritesTheKeysAndKeepsTheRest) {
  const std::string original = "# mine\nlog-level: info  # the level\nruntimes: [crun]\n";
  const std::string file = m_dir.write("c.yaml", original);
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  auto r = run({"--config", file, "--set", "log-level=debug", "--set", "driver-root=/run/nvidia/driver"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + file + "\nlog-level: debug (" + file +
                       ":2)\ndriver-root: /run/nvidia/driver (" + file + ":4)\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(read_file(file).value(),
            "# mine\nlog-level: debug  # the level\nruntimes: [crun]\ndriver-root: /run/nvidia/driver\n");
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  r = run({"--config", file, "--set", "log-level=debug"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "unchanged " + file + "\nlog-level: debug (" + file + ":2)\n");

  // A value the hooks would refuse: one line, the file as it was.
  const std::string before = read_file(file).value();
  r = run({"--config", file, "--set", "accept-volume-mounts=yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("gpuctk: error: " + file + ":5: accept-volume-mounts: ")) << r.err;
  EXPECT_EQ(std::ranges::count(r.err, '\n'), 1) << r.err;
  EXPECT_EQ(read_file(file).value(), before);
  r = run({"--config", file, "--set", "log-level"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: --set: \"log-level\" is not key=value (see gpuctk config --help)\n");
}

TEST_F(CliConfigTest, ABrokenFileIsShownThenItsError) {
  const std::string file = m_dir.write("c.yaml", "log-level: debug\naccept-volume-mounts: yes\n");
  const auto r = run({"--config", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\naccept-volume-mounts: false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# default\n"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.starts_with("gpuctk: error: " + file + ":2: accept-volume-mounts: ")) << r.err;
  const auto missing = run({"--config", m_dir.path() + "/none.yaml"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "gpuctk: error: read " + m_dir.path() + "/none.yaml: No such file or directory\n");
}

}  // namespace
}  // namespace gpuctk
