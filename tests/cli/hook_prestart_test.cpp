// gpuctk hook prestart as a runtime starts it, the name docker's --gpus runs (nvidia-container-runtime-hook),
// and the runtime shim's prestart mode. What the hook does inside a real container is tested end to end
// (tests/e2e/prestart_*.sh); here: the command surface and everything that must happen before a container
// is touched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

using Json = nlohmann::json;

class CliHookPrestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_config = m_dir.write("gpuctk.yaml", "spec-dirs: [" + m_dir.path() + "/cdi]\nlog-file: " + m_dir.path() +
                                              "/gpuctk.log\nlog-level: debug\n");
    m_dir.write("cdi/.keep", "");
  }

  // A bundle whose config.json has process.env `env`; returns the bundle directory.
  std::string bundle(const std::vector<std::string>& env) {
    Json config = {{"ociVersion", "1.0.2"},
                   {"process", {{"args", {"/bin/true"}}, {"env", env}, {"user", {{"uid", 0}, {"gid", 0}}}}},
                   {"root", {{"path", "rootfs"}}}};
    m_dir.write("bundle/config.json", config.dump());
    m_dir.write("bundle/rootfs/.keep", "");
    return m_dir.path() + "/bundle";
  }

  // The OCI state runc gives a prestart hook, in a file.
  std::string state(const std::string& bundle_dir, int pid) {
    return m_dir.write("state.json", Json{{"ociVersion", "1.0.2-dev"},
                                          {"id", "c1"},
                                          {"status", "creating"},
                                          {"pid", pid},
                                          {"bundle", bundle_dir}}
                                         .dump());
  }

  // A link to gpuctk named `name`, in the scratch directory.
  std::string link_named(const std::string& name) {
    const std::string path = m_dir.path() + "/bin/" + name;
    std::filesystem::create_directories(m_dir.path() + "/bin");
    EXPECT_EQ(::symlink(GPUCTK_BINARY, path.c_str()), 0);
    return path;
  }

  test::TempDir m_dir;
  std::string m_config;
};

TEST_F(CliHookPrestartTest, AContainerWithoutARequestIsNotTouched) {
  const std::string dir = bundle({"PATH=/bin"});
  const auto before = read_file(dir + "/config.json").value();
  // pid 1 is never entered: without a request nothing past reading config.json happens.
  const auto r = test::run_gpuctk({"hook", "prestart", "--config", m_config}, m_dir.path(),
                                  {.stdin_path = state(dir, 1)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(read_file(dir + "/config.json").value(), before);
  const auto log = read_file(m_dir.path() + "/gpuctk.log").value_or("");
  EXPECT_EQ(log.find("prestart: injected"), std::string::npos) << log;
}

TEST_F(CliHookPrestartTest, AnUnknownDeviceFailsWithOneLineBeforeTheContainerIsEntered) {
  const std::string dir = bundle({"NVIDIA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000000"});
  m_dir.write(
      "cdi/nvidia.yaml",
      "cdiVersion: \"0.5.0\"\nkind: \"nvidia.com/gpu\"\ndevices:\n  - name: \"0\"\n    containerEdits:\n"
      "      env: [\"A=1\"]\n");
  const auto r = test::run_gpuctk({"hook", "prestart", "--config", m_config}, m_dir.path(),
                                  {.stdin_path = state(dir, 1)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.err,
      "gpuctk: error: prestart: unknown device \"nvidia.com/gpu=GPU-00000000-0000-0000-0000-000000000000\" "
      "(devices: 0)\n");
  const auto log = read_file(m_dir.path() + "/gpuctk.log").value_or("");
  // The log says which container (the shim and precreate do too).
  EXPECT_NE(log.find(" error: container c1: prestart: unknown device"), std::string::npos) << log;
}

TEST_F(CliHookPrestartTest, AStateWithoutPidIsRefusedForAGpuContainer) {
  const std::string dir = bundle({"NVIDIA_VISIBLE_DEVICES=0"});
  m_dir.write(
      "cdi/nvidia.yaml",
      "cdiVersion: \"0.5.0\"\nkind: \"nvidia.com/gpu\"\ndevices:\n  - name: \"0\"\n    containerEdits:\n"
      "      env: [\"A=1\"]\n");
  const auto r = test::run_gpuctk({"hook", "prestart", "--config", m_config}, m_dir.path(),
                                  {.stdin_path = state(dir, 0)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("gpuctk: error: prestart: the OCI state has no pid"), std::string::npos) << r.err;
}

TEST_F(CliHookPrestartTest, UnderDockersNameItIsThePrestartHook) {
  const std::string hook = link_named("nvidia-container-runtime-hook");
  const std::string dir = bundle({"PATH=/bin"});
  // docker passes its own environment: GPUCTK_CONFIG selects the config there.
  auto r =
      test::run_gpuctk({"prestart"}, m_dir.path(),
                       {.program = hook, .stdin_path = state(dir, 1), .env = {"GPUCTK_CONFIG=" + m_config}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // A config that cannot be read does not stop a container without a GPU: it is said, and it passes.
  r = test::run_gpuctk({"prestart"}, m_dir.path(),
                       {.program = hook,
                        .stdin_path = state(dir, 1),
                        .env = {"GPUCTK_CONFIG=" + m_dir.path() + "/missing.yaml"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.err.find("gpuctk: warning: config: read " + m_dir.path() +
                 "/missing.yaml: No such file or directory; the container asks for no GPU: left as it is\n"),
      std::string::npos)
      << "the hook did not load the config named by GPUCTK_CONFIG: " << r.err;

  for (const char* stage : {"poststart", "poststop"}) {
    r = test::run_gpuctk({stage}, m_dir.path(), {.program = hook});
    EXPECT_EQ(r.exit_code, 0) << stage;
    EXPECT_EQ(r.out + r.err, "") << stage;
  }
  r = test::run_gpuctk({"--help"}, m_dir.path(), {.program = hook});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out.starts_with("usage: nvidia-container-runtime-hook prestart|poststart|poststop\n"))
      << r.out;

  r = test::run_gpuctk({"configure"}, m_dir.path(), {.program = hook});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "gpuctk: error: nvidia-container-runtime-hook: argument \"configure\" (want prestart, poststart or "
      "poststop; see nvidia-container-runtime-hook --help)\n");
  r = test::run_gpuctk({}, m_dir.path(), {.program = hook});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nvidia-container-runtime-hook: no argument"), std::string::npos) << r.err;
}

// A mistake in the config file never stops a container that asks for no GPU; one that asks fails with
// the file, the line and the key, before the container is entered.
TEST_F(CliHookPrestartTest, ABrokenConfigOnlyStopsGpuContainers) {
  m_config = m_dir.write("gpuctk.yaml", "spec-dirs: [" + m_dir.path() + "/cdi]\nlog-file: " + m_dir.path() +
                                            "/gpuctk.log\nlog-level: loud\n");
  const std::string error =
      m_config + ":3: log-level: unknown log level \"loud\" (want error, warning, info or debug)";
  std::string dir = bundle({"PATH=/bin"});
  auto r = test::run_gpuctk({"hook", "prestart", "--config", m_config}, m_dir.path(),
                            {.stdin_path = state(dir, 1)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpuctk: warning: " + error + "; the container asks for no GPU: left as it is\n");
  const auto log = read_file(m_dir.path() + "/gpuctk.log").value_or("");
  EXPECT_NE(log.find(" warning: container c1: " + error + "; the container asks for no GPU"),
            std::string::npos)
      << log;
  dir = bundle({"NVIDIA_VISIBLE_DEVICES=0"});
  r = test::run_gpuctk({"hook", "prestart", "--config", m_config}, m_dir.path(),
                       {.stdin_path = state(dir, 1)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: " + error + "\n");
}

TEST_F(CliHookPrestartTest, NoStateOnStdinIsOneLine) {
  const auto r = test::run_gpuctk({"hook", "prestart", "--config", m_config}, m_dir.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: prestart: no OCI state on stdin (a runtime writes it there)\n");
  const auto hook = test::run_gpuctk({"hook", "create-symlinks", "--config", m_config}, m_dir.path());
  EXPECT_EQ(hook.exit_code, 1);
  EXPECT_EQ(hook.err, "gpuctk: error: create-symlinks: no OCI state on stdin (a runtime writes it there)\n");
}

class CliShimPrestartModeTest : public CliHookPrestartTest {
 protected:
  void SetUp() override {
    CliHookPrestartTest::SetUp();
    // /bin/true stands in for runc: the shim's edit of config.json is what is tested.
    m_config = m_dir.write("shim.yaml", "spec-dirs: [" + m_dir.path() + "/cdi]\nruntime-mode: prestart\n" +
                                            "runtimes: [/bin/true]\nhook-path: /opt/gpuctk/bin/gpuctk\n");
    m_shim = link_named("gpuctk-runtime");
  }

  test::RunResult create(const std::string& dir) {
    return test::run_gpuctk({"create", "--bundle", dir, "c1"}, m_dir.path(),
                            {.program = m_shim, .env = {"GPUCTK_CONFIG=" + m_config}});
  }

  std::string m_shim;
};

TEST_F(CliShimPrestartModeTest, AGpuContainerGetsThePrestartHookAndNoCdiEdits) {
  const std::string dir = bundle({"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=0"});
  const auto r = create(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto config = Json::parse(read_file(dir + "/config.json").value());
  const Json expected = Json::array({{{"path", "/opt/gpuctk/bin/gpuctk"},
                                      {"args", {"gpuctk", "hook", "prestart", "--config", m_config}},
                                      {"env", {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}}}});
  EXPECT_EQ(config["hooks"]["prestart"], expected);
  EXPECT_FALSE(config.contains("linux")) << "no device was added: the hook adds them live";
  EXPECT_EQ(config["process"]["env"], Json::array({"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=0"}));
  // A second create (a retried start) does not add the hook twice.
  ASSERT_EQ(create(dir).exit_code, 0);
  EXPECT_EQ(Json::parse(read_file(dir + "/config.json").value())["hooks"]["prestart"], expected);
}

TEST_F(CliShimPrestartModeTest, AContainerWithoutARequestIsLeftByteForByte) {
  const std::string dir = bundle({"PATH=/bin"});
  const auto before = read_file(dir + "/config.json").value();
  ASSERT_EQ(create(dir).exit_code, 0);
  EXPECT_EQ(read_file(dir + "/config.json").value(), before);
}

TEST_F(CliShimPrestartModeTest, ABadRequestIsRefusedBeforeTheRuntimeRuns) {
  const std::string dir = bundle({"NVIDIA_VISIBLE_DEVICES=xyz"});
  const auto before = read_file(dir + "/config.json").value();
  const auto r = create(dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("could not inject GPUs into " + dir +
                       "/config.json: NVIDIA_VISIBLE_DEVICES: invalid device"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(dir + "/config.json").value(), before);
}

}  // namespace
}  // namespace gpuctk
