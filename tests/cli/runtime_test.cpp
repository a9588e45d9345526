// The runtime shim (gpuctk-runtime) with a broken config file: a bundle that asks for no GPU goes to the
// runtime unchanged, one that asks fails with the file, the line and the key, and every other runtime
// command still reaches the runtime the file names. /bin/echo stands in for runc: it shows what it got.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir_test.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

using Json = nlohmann::json;

class CliRuntimeShimTest : public test::TempDirTest {
 protected:
  void SetUpDir() override {
    m_shim = test::link_gpuctk_as(m_dir, "gpuctk-runtime");
    // `runtimes` is valid and applies; line 3 is not.
    m_config = m_tmp.write("gpuctk.yaml", "runtimes: [/bin/echo]\nlog-file: " + m_dir +
                                              "/gpuctk.log\naccept-volume-mounts: ture\n");
    m_error = m_config + ":3: accept-volume-mounts: expected true or false, got \"ture\"";
  }

  std::string bundle(const std::vector<std::string>& env) {
    const Json config = {{"ociVersion", "1.0.2"},
                         {"process", {{"args", {"/bin/true"}}, {"env", env}}},
                         {"root", {{"path", "rootfs"}}}};
    m_tmp.write("bundle/config.json", config.dump());
    return m_dir + "/bundle";
  }

  test::RunResult shim(const std::vector<std::string>& args) {
    return test::run_gpuctk(args, m_dir, {.program = m_shim, .env = {"GPUCTK_CONFIG=" + m_config}});
  }

  std::string m_shim;
  std::string m_config;
  std::string m_error;
};

TEST_F(CliRuntimeShimTest, ABrokenConfigPassesABundleWithoutAGpuToTheRuntime) {
  const std::string dir = bundle({"PATH=/bin"});
  const auto before = read_file(dir + "/config.json").value();
  const auto r = shim({"--log", m_dir + "/engine.log", "create", "--bundle", dir, "c1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "--log " + m_dir + "/engine.log create --bundle " + dir + " c1\n");
  const std::string warning = m_error + "; " + dir + "/config.json asks for no GPU: left as it is";
  EXPECT_EQ(r.err, "gpuctk: warning: " + warning + "\n");
  EXPECT_EQ(read_file(m_dir + "/engine.log").value_or(""), "gpuctk: warning: " + warning + "\n");
  EXPECT_EQ(read_file(dir + "/config.json").value(), before);
}

TEST_F(CliRuntimeShimTest, ABrokenConfigFailsAGpuBundleBeforeTheRuntimeRuns) {
  const std::string dir = bundle({"NVIDIA_VISIBLE_DEVICES=0"});
  const auto before = read_file(dir + "/config.json").value();
  const auto r = shim({"run", "--bundle", dir, "c1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gpuctk: error: could not inject GPUs into " + dir + "/config.json: " + m_error + "\n");
  EXPECT_EQ(read_file(dir + "/config.json").value(), before);
}

// state, kill, delete: the runtime the file names, without a word about the file.
TEST_F(CliRuntimeShimTest, OtherCommandsReachTheConfiguredRuntime) {
  const auto r = shim({"state", "c1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "state c1\n");
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace gpuctk
