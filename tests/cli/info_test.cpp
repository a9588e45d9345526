// gpuctk info on hosts of every vendor: what it says there is, and what is wrong.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/run_gpuctk.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk {
namespace {

class CliInfoTest : public test::FixtureHostTest {
 protected:
  void SetUpHost() override {
    // The specs info reads are the config's: an empty directory here, whatever the machine has.
    m_config = m_dir.write("gpuctk.yaml", "spec-dirs: [" + m_dir.path() + "/cdi]\nlog-file: \"\"\n");
    std::filesystem::create_directories(m_dir.path() + "/cdi");
  }
  test::RunResult info(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"info", "--driver-root", m_fixture->host.driver_root, "--dev-root",
                                  m_fixture->host.dev_root};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuctk(args, m_dir.path(), {.env = {"GPUCTK_CONFIG=" + m_config}});
  }

  test::TempDir m_dir;
  std::string m_config;
};

// An AMD-only node is not an NVIDIA error: its GPUs, as `labels` finds them.
TEST_F(CliInfoTest, AnAmdOnlyHostListsItsGpus) {
  use_host("mi300x-amd");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const auto r = info();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.starts_with(
      "AMD GPUs:    15\n"
      "  GPU 0  amdgpu  0000:05:00.0  /dev/dri/renderD128  0x2C9E4B6D10F58A31  AMD Instinct "
      "MI300X OAM\n"))
      << r.out;
  EXPECT_NE(
      r.out.find("\n  GPU 3  amdgpu  0000:46:00.0  /dev/dri/renderD136  0x5B03E7C28D914AF6  AMD Instinct "
                 "MI300X OAM  partition 1 of 8\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nNote:        no NVIDIA driver loaded (" + m_fixture->host.dev_root +
                       "/proc/driver/nvidia missing)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Driver:"), std::string::npos) << r.out;
  const auto json = nlohmann::json::parse(info({"--json"}).out);
  EXPECT_EQ(json["nvidiaDriver"], false);
  EXPECT_EQ(json["otherGpus"].size(), 15u);
  EXPECT_EQ(json["otherGpus"][0]["busId"], "0000:05:00.0");
}

TEST_F(CliInfoTest, AMixedHostListsEveryVendor) {
  use_host("mixed-nvidia-intel");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const auto r = info();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("Driver:      ")) << r.out;
  EXPECT_NE(r.out.find("\nIntel GPUs:  1\n  GPU 0  xe  0000:03:00.0  /dev/dri/renderD"), std::string::npos)
      << r.out;
}

// The specs the hooks would read, and a hook program of theirs that is gone.
TEST_F(CliInfoTest, SaysWhenASpecsHookProgramDoesNotExist) {
  use_host("t4-debian");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const std::string gone = m_dir.path() + "/build/gpuctk";
  const std::string spec = m_dir.path() + "/cdi/nvidia.yaml";
  const auto generated =
      test::run_gpuctk({"cdi", "generate", "--driver-root", m_fixture->host.driver_root, "--dev-root",
                        m_fixture->host.dev_root, "--mode", "proc", "--hook-path", gone, "--output", spec},
                       m_dir.path(), {.env = {"GPUCTK_CONFIG=" + m_config}});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const auto r = info();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nCDI specs:   " + spec + " (3 devices)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nWarnings:    1\n  " + spec + ": hook program " + gone +
                       " does not exist: every container given a device of this spec fails\n"),
            std::string::npos)
      << r.out;
}

TEST_F(CliInfoTest, NoGpuAtAllIsOneLine) {
  use_host("t4-debian");
  if (IsSkipped() || HasFatalFailure()) {
    return;
  }
  const std::string empty = m_dir.path() + "/empty";
  std::filesystem::create_directories(empty);
  const auto r = test::run_gpuctk({"info", "--driver-root", empty, "--dev-root", empty}, m_dir.path(),
                                  {.env = {"GPUCTK_CONFIG=" + m_config}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpuctk: error: no GPU on this host: no NVIDIA driver loaded (" + empty +
                       "/proc/driver/nvidia missing), no AMD or Intel GPU in " + empty + "/sys/class/drm\n");
  const auto missing = test::run_gpuctk({"info", "--driver-root", empty + "/nonexistent"}, m_dir.path(),
                                        {.env = {"GPUCTK_CONFIG=" + m_config}});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "gpuctk: error: driver root " + empty + "/nonexistent does not exist\n");
}

}  // namespace
}  // namespace gpuctk
