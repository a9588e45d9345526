// gpuctk hook precreate as podman runs it (config.json on stdin, the result on stdout), and what every
// injection point shares with it (cli/hook_precreate.cpp): a broken config file never stops a container
// that asks for no GPU, and fails one that does with one line naming the file, the line and the key; the
// log says which container each line is about; stdin that is empty or a terminal is refused at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

using Json = nlohmann::ordered_json;

// A spec of a device that only sets an env variable: enough to see that a GPU request was carried out.
constexpr const char* k_spec =
    "cdiVersion: \"0.5.0\"\nkind: \"example.com/gpu\"\ndevices:\n  - name: \"a\"\n    containerEdits:\n"
    "      env: [\"EXAMPLE_GPU=a\"]\n";

class CliHookPrecreateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_dir.write("cdi/example.yaml", k_spec);
    m_log = m_dir.path() + "/gpuctk.log";
  }

  // A config file: the spec directory, the log, and `extra` lines.
  std::string config(const std::string& extra) {
    return m_dir.write("gpuctk.yaml",
                       "spec-dirs: [" + m_dir.path() + "/cdi]\nlog-file: " + m_log + "\n" + extra);
  }

  // config.json with process.env `env` and annotations `annotations`, written where stdin reads it.
  std::string input(const std::vector<std::string>& env, const Json& annotations = Json::object()) {
    Json c = {{"ociVersion", "1.0.2"},
              {"hostname", "382a12181436"},
              {"process", {{"args", {"/bin/true"}}, {"env", env}}},
              {"root", {{"path", "rootfs"}}}};
    if (!annotations.empty()) {
      c["annotations"] = annotations;
    }
    return m_dir.write("config.json", c.dump());
  }

  test::RunResult precreate(const std::string& config_path, const std::string& stdin_path) {
    return test::run_gpuctk({"hook", "precreate", "--config", config_path}, m_dir.path(),
                            {.stdin_path = stdin_path});
  }

  [[nodiscard]] std::string log() const { return read_file(m_log).value_or(""); }

  test::TempDir m_dir;
  std::string m_log;
};

// `accept-volume-mounts: ture` is on line 3 of config(): after spec-dirs and log-file.
const std::string k_bad_value = "accept-volume-mounts: ture\n";

TEST_F(CliHookPrecreateTest, ABrokenConfigLetsAContainerWithoutAGpuThroughByteForByte) {
  const std::string cfg = config(k_bad_value);
  const std::string in = input({"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=void"});
  const auto r = precreate(cfg, in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, read_file(in).value());
  const std::string warning = cfg + ":3: accept-volume-mounts: expected true or false, got \"ture\"; the " +
                              "container asks for no GPU: left as it is";
  EXPECT_EQ(r.err, "gpuctk: warning: " + warning + "\n");
  // The log names the container by what podman gives the hook: its hostname, podman's short id.
  EXPECT_NE(log().find(" warning: container with hostname 382a12181436: " + warning + "\n"),
            std::string::npos)
      << log();
}

TEST_F(CliHookPrecreateTest, ABrokenConfigFailsAGpuContainerWithTheFileLineAndKey) {
  const std::string cfg = config(k_bad_value);
  const std::string error = cfg + ":3: accept-volume-mounts: expected true or false, got \"ture\"";
  for (const auto& [env, annotations] : std::vector<std::pair<std::vector<std::string>, Json>>{
           {{"NVIDIA_VISIBLE_DEVICES=0"}, Json::object()},
           // A legacy CUDA image asks for every GPU.
           {{"CUDA_VERSION=12.2.0"}, Json::object()},
           // annotation-prefixes may name any prefix: a value that names a CDI device is a request.
           {{}, Json{{"example.org/devices", "example.com/gpu=a"}}},
       }) {
    const auto r = precreate(cfg, input(env, annotations));
    EXPECT_EQ(r.exit_code, 1) << annotations.dump();
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "gpuctk: error: " + error + "\n");
  }
  EXPECT_NE(log().find(" error: container with hostname 382a12181436: " + error + "\n"), std::string::npos)
      << log();
}

TEST_F(CliHookPrecreateTest, BadYamlIsTheSame) {
  const std::string cfg = m_dir.write("gpuctk.yaml", "spec-dirs: [/etc/cdi\nlog-file: \"\"\n");
  // With the file unreadable, the log is the default one (/var/log/gpuctk.log, or a warning where it
  // cannot be opened): only the lines about the config are checked here.
  const std::string error = cfg + ":2: YAML syntax error (column 9): end of sequence flow not found";
  auto r = precreate(cfg, input({"PATH=/bin"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("gpuctk: warning: " + error + "; the container asks for no GPU: left as it is\n"),
            std::string::npos)
      << r.err;
  r = precreate(cfg, input({"NVIDIA_VISIBLE_DEVICES=all"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.err.ends_with("gpuctk: error: " + error + "\n")) << r.err;
}

// NVIDIA's toolkit ignores keys it does not know; so does gpuctk, with a warning, for GPU containers too.
TEST_F(CliHookPrecreateTest, AnUnknownKeyIsAWarningNamingTheNearestKey) {
  const std::string cfg = config("log_level: debug\n");
  const auto r = precreate(cfg, input({"PATH=/bin"}, Json{{"cdi.k8s.io/gpu", "example.com/gpu=a"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = cfg + ":3: unknown key \"log_level\" ignored (did you mean \"log-level\"?)";
  EXPECT_EQ(r.err, "gpuctk: warning: " + warning + "\n");
  const auto out = Json::parse(r.out);
  EXPECT_EQ(out["process"]["env"], Json::array({"PATH=/bin", "EXAMPLE_GPU=a"}));
  EXPECT_NE(log().find(" warning: container with hostname 382a12181436: " + warning + "\n"),
            std::string::npos)
      << log();
  EXPECT_NE(log().find(" info: container with hostname 382a12181436: injected example.com/gpu=a"),
            std::string::npos)
      << log();
}

TEST_F(CliHookPrecreateTest, ALogThatCannotBeOpenedOnlyFailsGpuContainers) {
  const std::string missing_dir_log = m_dir.path() + "/no-such-dir/gpuctk.log";
  const std::string cfg = m_dir.write(
      "gpuctk.yaml", "spec-dirs: [" + m_dir.path() + "/cdi]\nlog-file: " + missing_dir_log + "\n");
  const std::string error = "open log file " + missing_dir_log + ": No such file or directory";
  const std::string in = input({"PATH=/bin"});
  auto r = precreate(cfg, in);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, read_file(in).value());
  EXPECT_EQ(r.err, "gpuctk: warning: " + error + "; the container asks for no GPU: left as it is\n");
  r = precreate(cfg, input({"NVIDIA_VISIBLE_DEVICES=0"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: " + error + "\n");
}

// A Kubernetes container is named by its pod (CRI-O's and containerd's annotations).
TEST_F(CliHookPrecreateTest, EveryLogLineSaysWhichContainer) {
  const std::string cfg = config("log-level: debug\n");
  const auto r = precreate(cfg, input({"PATH=/bin"}, Json{{"cdi.k8s.io/gpu", "example.com/gpu=b"},
                                                          {"io.kubernetes.pod.namespace", "ml"},
                                                          {"io.kubernetes.pod.name", "trainer-0"},
                                                          {"io.kubernetes.container.name", "cuda"}}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: unknown device \"example.com/gpu=b\" (devices: a)\n");
  const auto text = log();
  ASSERT_FALSE(text.empty());
  size_t lines = 0;
  for (size_t at = 0, end = 0; (end = text.find('\n', at)) != std::string::npos; at = end + 1, ++lines) {
    EXPECT_NE(text.substr(at, end - at).find(": container cuda of pod ml/trainer-0: "), std::string::npos)
        << text.substr(at, end - at);
  }
  EXPECT_GE(lines, 2u) << text;  // the request, the error
}

TEST_F(CliHookPrecreateTest, EmptyStdinIsRefusedInOneLine) {
  const auto r = precreate(config(""), "/dev/null");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: no OCI config.json on stdin (a runtime writes it there)\n");
}

// Issue 33 item 3: a FIFO at the log path blocked every hook in its open for ever. Now it is never opened:
// one warning, and the GPU is injected as without a log (timeout(1) ends a hook that hangs: status 124).
TEST_F(CliHookPrecreateTest, AFifoAtTheLogPathIsAWarningNotAHang) {
  ASSERT_EQ(::mkfifo(m_log.c_str(), 0600), 0);
  const std::string cfg = config("");
  const std::string in = input({"PATH=/bin"}, Json{{"cdi.k8s.io/gpu", "example.com/gpu=a"}});
  const auto r = test::run_gpuctk({"10", GPUCTK_BINARY, "hook", "precreate", "--config", cfg}, m_dir.path(),
                                  {.program = "/usr/bin/timeout", .stdin_path = in});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpuctk: warning: log file " + m_log +
                       ": not a regular file; not logging (name a regular file in a folder only root can "
                       "write)\n");
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(Json::parse(r.out)["process"]["env"], Json::array({"PATH=/bin", "EXAMPLE_GPU=a"}));
}

// config.json on stdin is bounded as the bundle's file is (oci::k_max_config_size, 16 MiB): a document of
// exactly the limit goes through byte for byte, one byte more fails with one line naming the limit (before
// the limit, a 40 MiB document was read and parsed, peaking at over 200 MB).
TEST_F(CliHookPrecreateTest, ConfigOnStdinIsBoundedAtSixteenMebibytes) {
  const std::string cfg = config("");
  const std::string small = read_file(input({"PATH=/bin"})).value();
  constexpr size_t k_limit = 16 << 20;
  ASSERT_LT(small.size(), k_limit);
  // JSON allows any amount of white space after the document's value.
  const std::string at_limit = m_dir.write("at-limit.json", small + std::string(k_limit - small.size(), ' '));
  auto r = precreate(cfg, at_limit);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.size(), k_limit);
  const std::string over = m_dir.write("over.json", small + std::string(k_limit + 1 - small.size(), ' '));
  r = precreate(cfg, over);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gpuctk: error: read the OCI config.json on standard input: larger than 16777216 bytes\n");
}

// Run by hand in a shell, a hook must not sit waiting for input that never comes.
TEST_F(CliHookPrecreateTest, ATerminalOnStdinIsRefusedAtOnce) {
  UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master || ::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0) {
    GTEST_SKIP() << "no pseudo-terminal here (/dev/ptmx)";
  }
  const std::string terminal = ::ptsname(master.get());
  const std::string cfg = config("");
  for (const std::vector<std::string>& hook :
       {std::vector<std::string>{"precreate", "--config", cfg},
        std::vector<std::string>{"prestart", "--config", cfg},
        std::vector<std::string>{"create-symlinks", "--config", cfg}}) {
    // timeout(1): before the fix the hook waited on the terminal for ever.
    std::vector<std::string> args{"5", GPUCTK_BINARY, "hook"};
    args.insert(args.end(), hook.begin(), hook.end());
    const auto r =
        test::run_gpuctk(args, m_dir.path(), {.program = "/usr/bin/timeout", .stdin_path = terminal});
    EXPECT_EQ(r.exit_code, 1) << hook[0];
    const std::string what = hook[0] == "precreate" ? "OCI config.json" : "OCI state";
    const std::string prefix = hook[0] == "precreate" ? "" : hook[0] + ": ";
    EXPECT_EQ(r.err, "gpuctk: error: " + prefix + "stdin is a terminal, not the " + what +
                         " a runtime writes (this is a hook: a runtime runs it)\n")
        << hook[0];
  }
}

}  // namespace
}  // namespace gpuctk
