// `gpuctk runtime configure` (src/cli/runtime_configure.cpp) through the real binary: what it prints, its
// exit codes, --dry-run, --remove, usage errors; and that the shim's own name, gpuctk-runtime, hands
// `configure` to the low-level runtime like any other argument.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk {
namespace {

class CliRuntimeConfigureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_daemon_json = m_dir.path() + "/daemon.json";
  }
  // `gpuctk runtime configure ARGS… --runtime-path <gpuctk itself>`: an executable, so no warning.
  test::RunResult configure(std::vector<std::string> args) {
    args.insert(args.begin(), {"runtime", "configure"});
    args.insert(args.end(), {"--runtime-path", GPUCTK_BINARY});
    return test::run_gpuctk(args, m_dir.path());
  }
  test::RunResult run(std::vector<std::string> args) {
    args.insert(args.begin(), {"runtime", "configure"});
    return test::run_gpuctk(args, m_dir.path());
  }
  static std::optional<std::string> contents(const std::string& path) {
    auto text = read_file(path);
    return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
  }

  test::TempDir m_dir;
  std::string m_daemon_json;
};

TEST_F(CliRuntimeConfigureTest, ConfiguresThenSaysUnchanged) {
  auto result = configure({"--runtime", "docker", "--config", m_daemon_json});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "docker: runtime \"nvidia\" (" GPUCTK_BINARY ") added; " + m_daemon_json +
                            " written; restart docker\n");
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(contents(m_daemon_json),
            "{\n    \"runtimes\": {\n        \"nvidia\": {\n            \"path\": \"" GPUCTK_BINARY
            "\"\n        }\n    }\n}\n");
  result = configure({"--runtime", "docker", "--config", m_daemon_json});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "docker: " + m_daemon_json +
                            " unchanged: runtime \"nvidia\" (" GPUCTK_BINARY ") is already configured\n");
}

TEST_F(CliRuntimeConfigureTest, DryRunPrintsTheFileAndWritesNothing) {
  const auto result =
      configure({"--runtime", "crio", "--config", m_dir.path() + "/99-gpuctk.conf", "--dry-run", "--cdi"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(
      result.out,
      "# The CRI-O runtime handler of gpuctk's runtime shim, written by `gpuctk runtime configure --runtime "
      "crio`;\n# `gpuctk runtime configure --runtime crio --remove` undoes it.\n"
      "[crio.runtime.runtimes.nvidia]\nruntime_path = \"" GPUCTK_BINARY
      "\"\nruntime_root = \"/run/gpuctk-runtime\"\nruntime_type = \"oci\"\n");
  EXPECT_EQ(result.err,
            "crio: runtime \"nvidia\" (" GPUCTK_BINARY ") added; dry run: " + m_dir.path() +
                "/99-gpuctk.conf not written; CDI needs nothing here: CRI-O always reads CDI specs "
                "(cdi_spec_dirs, default /etc/cdi and /var/run/cdi)\n");
  EXPECT_FALSE(std::filesystem::exists(m_dir.path() + "/99-gpuctk.conf"));
}

TEST_F(CliRuntimeConfigureTest, RemoveRestoresTheOriginal) {
  const std::string original = "{\"log-level\": \"warn\"}\n";
  m_dir.write("daemon.json", original);
  ASSERT_EQ(configure({"--runtime", "docker", "--config", m_daemon_json, "--set-as-default"}).exit_code, 0);
  const auto result = run({"--runtime", "docker", "--config", m_daemon_json, "--remove"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "docker: " + m_daemon_json + " restored from " + m_daemon_json +
                            ".gpuctk-backup; restart docker\n");
  EXPECT_EQ(contents(m_daemon_json), original);
  EXPECT_FALSE(std::filesystem::exists(m_daemon_json + ".gpuctk-backup"));
}

TEST_F(CliRuntimeConfigureTest, ABadFileIsOneErrorLineAndExit1) {
  m_dir.write("config.toml", "version = 2\n[plugins\n");
  const auto result = configure({"--runtime", "containerd", "--config", m_dir.path() + "/config.toml"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            "gpuctk: error: " + m_dir.path() +
                "/config.toml: Error while parsing table header: expected ']', saw '\\n' at line 2, "
                "column 9\n");
}

TEST_F(CliRuntimeConfigureTest, AMissingShimIsAWarning) {
  const auto result =
      run({"--runtime", "docker", "--config", m_daemon_json, "--runtime-path", "/nonexistent/shim"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(
      result.err,
      "gpuctk: warning: runtime path /nonexistent/shim: No such file or directory (the engine cannot run "
      "runtime \"nvidia\" until it is there)\n");
  EXPECT_TRUE(std::filesystem::exists(m_daemon_json));
}

TEST_F(CliRuntimeConfigureTest, UsageErrorsAreOneLineAndExit2) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--runtime"}, "--runtime needs a value"},
      {{"--runtime", "podman"}, "--runtime: unknown runtime \"podman\" (want containerd, crio or docker)"},
      {{"--runtime", "docker", "--bogus"}, "unknown option \"--bogus\""},
      {{"--runtime", "docker", "extra"}, "unexpected argument \"extra\""},
      {{"--runtime", "docker", "--config"}, "--config needs a value"},
      {{"--runtime", "docker", "--runtime-path", "bin/shim"},
       "--runtime-path: runtime path \"bin/shim\": not an absolute path"},
      {{"--runtime", "docker", "--runtime-name", "-x"},
       "--runtime-name: runtime name \"-x\": want 1 to 63 letters, digits, '-', '_' or '.', starting and "
       "ending "
       "with a letter or digit"},
      {{"--runtime", "containerd", "--containerd-config-version", "1"},
       "--containerd-config-version: \"1\" is not a containerd config version gpuctk writes (want 2 or 3)"},
      {{"--runtime", "docker", "--containerd-config-version", "3"},
       "--containerd-config-version is for --runtime containerd only"},
      {{"--runtime", "docker", "--remove", "--cdi"}, "--cdi excludes --remove"},
      {{"--runtime", "containerd", "--drop-in-config", "conf.d/99-gpuctk.toml"},
       "--drop-in-config: \"conf.d/99-gpuctk.toml\" is not a clean absolute path"},
      {{"--runtime", "crio", "--drop-in-config", "/etc/containerd/conf.d/99-gpuctk.toml"},
       "--drop-in-config is for --runtime containerd only"},
      {{"--runtime", "containerd", "--config-source", "dump"},
       "--config-source: \"dump\" is not a config source (want file or command)"},
      {{"--runtime", "crio", "--config-source", "command"},
       "--config-source command is for --runtime containerd (gpuctk reads CRI-O's files in CRI-O's order)"},
      {{"--runtime", "containerd", "--drop-in-config", "", "--config-source", "command"},
       "--config-source command needs a drop-in (not --drop-in-config \"\")"},
      {{"--runtime", "containerd", "--remove", "--config-source", "command"},
       "--config-source excludes --remove"},
  };
  for (const auto& [args, what] : cases) {
    const auto result = run(args);
    EXPECT_EQ(result.exit_code, 2) << what;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, "gpuctk: error: " + what + " (see gpuctk runtime configure --help)\n");
  }
  EXPECT_FALSE(std::filesystem::exists(m_daemon_json));
}

// containerd: a drop-in beside config.toml by default (conf.d/99-zz-gpuctk.toml), imported by config.toml;
// --remove without --drop-in-config takes the same default back.
TEST_F(CliRuntimeConfigureTest, ContainerdWritesADropInByDefault) {
  const std::string config = m_dir.path() + "/config.toml";
  const std::string drop_in = m_dir.path() + "/conf.d/99-zz-gpuctk.toml";
  m_dir.write("config.toml", "version = 2\n");
  auto result = configure({"--runtime", "containerd", "--config", config});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "containerd: runtime \"nvidia\" (" GPUCTK_BINARY ") added; " + drop_in +
                            " written; restart containerd\ncontainerd: import " + drop_in + " added; " +
                            config + " written (the original kept as " + config +
                            ".gpuctk-backup); restart containerd\n");
  EXPECT_EQ(contents(config), "imports = [ \"" + drop_in + "\" ]\nversion = 2\n");
  EXPECT_TRUE(contents(drop_in).value_or("").find("BinaryName = \"" GPUCTK_BINARY "\"") != std::string::npos);
  result = run({"--runtime", "containerd", "--config", config, "--remove"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(contents(config), "version = 2\n");
  EXPECT_FALSE(std::filesystem::exists(drop_in));
}

// --drop-in-config "" (as nvidia-ctk takes it): config.toml itself, no conf.d.
TEST_F(CliRuntimeConfigureTest, ContainerdEmptyDropInEditsTheConfig) {
  const std::string config = m_dir.path() + "/config.toml";
  m_dir.write("config.toml", "version = 2\n");
  const auto result = configure({"--runtime", "containerd", "--config", config, "--drop-in-config", ""});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "containerd: runtime \"nvidia\" (" GPUCTK_BINARY ") added; " + config +
                            " written (the original kept as " + config +
                            ".gpuctk-backup); restart containerd\n");
  EXPECT_FALSE(std::filesystem::exists(m_dir.path() + "/conf.d"));
}

// nvidia-ctk ignores --config-source and --executable-path for docker; gpuctk says so.
TEST_F(CliRuntimeConfigureTest, DockerIgnoresConfigSourceWithAWarning) {
  const auto result = configure({"--runtime", "docker", "--config", m_daemon_json, "--config-source",
                                 "command", "--executable-path", "/nonexistent/dockerd"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(
      result.err,
      "gpuctk: warning: --config-source and --executable-path are ignored for docker (daemon.json is its "
      "whole config)\n");
  EXPECT_TRUE(std::filesystem::exists(m_daemon_json));
}

TEST_F(CliRuntimeConfigureTest, HelpOnStdout) {
  auto result = run({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(result.out.find("Usage: gpuctk runtime configure [OPTIONS]") != std::string::npos)
      << result.out;
  EXPECT_TRUE(result.out.find("--containerd-config-version") != std::string::npos) << result.out;
  result = test::run_gpuctk({"runtime", "--help"}, m_dir.path());
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(result.out.find("`gpuctk runtime configure --help`") != std::string::npos) << result.out;
}

// Under the shim's name every argument is runc's: here the "runc" is /bin/echo, which shows what it got.
TEST_F(CliRuntimeConfigureTest, TheShimsNameNeverConfigures) {
  const std::string shim = m_dir.path() + "/bin/gpuctk-runtime";
  std::filesystem::create_directories(m_dir.path() + "/bin");
  ASSERT_EQ(::symlink(GPUCTK_BINARY, shim.c_str()), 0);
  const std::string config = m_dir.write("gpuctk.yaml", "runtimes: [/bin/echo]\nlog-file: \"\"\n");
  const auto result = test::run_gpuctk({"configure", "--runtime", "docker", "--config", m_daemon_json},
                                       m_dir.path(), {.program = shim, .env = {"GPUCTK_CONFIG=" + config}});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "configure --runtime docker --config " + m_daemon_json + "\n");
  EXPECT_FALSE(std::filesystem::exists(m_daemon_json));
}

// Under the name gpuctk, `configure` is gpuctk's only as runtime's first argument: after anything else (an
// option of runc's) it is runc's like any other word, whether or not a gpuctk option comes first.
TEST_F(CliRuntimeConfigureTest, ConfigureIsGpuctksOnlyAsRuntimesFirstArgument) {
  const std::string config = m_dir.write("gpuctk.yaml", "runtimes: [/bin/echo]\nlog-file: \"\"\n");
  const std::vector<std::string> runc = {"--debug", "configure", "--runtime",
                                         "docker",  "--config",  m_daemon_json};
  for (const std::vector<std::string>& before : {std::vector<std::string>{}, {"--quiet"}}) {
    std::vector<std::string> args = before;
    args.emplace_back("runtime");
    args.insert(args.end(), runc.begin(), runc.end());
    const auto result = test::run_gpuctk(args, m_dir.path(), {.env = {"GPUCTK_CONFIG=" + config}});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, "--debug configure --runtime docker --config " + m_daemon_json + "\n");
    EXPECT_EQ(result.err, "");
  }
  EXPECT_FALSE(std::filesystem::exists(m_daemon_json));
}

}  // namespace
}  // namespace gpuctk
