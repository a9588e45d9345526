// `gpuctk system create-device-nodes` through the real binary: a line per node on stdout, notes on stderr,
// --control-devices (nvidia-ctk's), --dry-run, GPUCTK_SYSTEM_CREATE_DEVICE_NODES_*, one error line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk {
namespace {

class CliCreateDeviceNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "mknod needs root";
    }
    std::filesystem::create_directories(m_dir.path() + "/dev");
    // A driver without nvidia-uvm loaded yet, one GPU.
    m_dir.write("proc/devices", "Character devices:\n195 nvidia\n195 nvidiactl\n\nBlock devices:\n");
    m_dir.write("proc/driver/nvidia/gpus/0000:3b:00.0/information",
                "Model: \t\t Tesla T4\nBus Location: \t 0000:3b:00.0\nDevice Minor: \t 0\n");
  }
  test::RunResult run(std::vector<std::string> extra, std::vector<std::string> env = {}) {
    std::vector<std::string> args{"system", "create-device-nodes"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuctk(args, m_dir.path(), {.env = std::move(env)});
  }
  test::TempDir m_dir;
};

TEST_F(CliCreateDeviceNodesTest, MakesTheNodesAndSaysWhatIsMissing) {
  const std::string dev = m_dir.path() + "/dev/";
  const std::string note =
      "gpuctk: note: nvidia-uvm is not loaded (no nvidia-uvm in /proc/devices): no /dev/nvidia-uvm or "
      "/dev/nvidia-uvm-tools\n";
  auto r = run({"--dev-root", m_dir.path(), "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "would make " + dev + "nvidiactl (195:255, mode 0666)\nwould make " + dev +
                       "nvidia-modeset (195:254, mode 0666)\nwould make " + dev +
                       "nvidia0 (195:0, mode 0666)\n");
  EXPECT_EQ(r.err, note);
  EXPECT_FALSE(std::filesystem::exists(dev + "nvidiactl"));

  r = run({"--dev-root", m_dir.path(), "--control-devices"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "made " + dev + "nvidiactl (195:255, mode 0666)\nmade " + dev +
                       "nvidia-modeset (195:254, mode 0666)\n");
  // nvidia-uvm loaded since: the environment's way of giving the options.
  m_dir.write("proc/devices", "Character devices:\n195 nvidia\n195 nvidiactl\n511 nvidia-uvm\n");
  r = run({}, {"GPUCTK_SYSTEM_CREATE_DEVICE_NODES_DEV_ROOT=" + m_dir.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "unchanged " + dev + "nvidiactl (195:255)\nunchanged " + dev +
                       "nvidia-modeset (195:254)\nmade " + dev + "nvidia-uvm (511:0, mode 0666)\nmade " +
                       dev + "nvidia-uvm-tools (511:1, mode 0666)\nmade " + dev +
                       "nvidia0 (195:0, mode 0666)\n");
  EXPECT_EQ(r.err, "");
  struct stat st {};
  ASSERT_EQ(::lstat((dev + "nvidia-uvm").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(511, 0));
  EXPECT_EQ(st.st_mode & 07777, 0666u);
}

TEST_F(CliCreateDeviceNodesTest, ErrorsAreOneLine) {
  std::filesystem::remove(m_dir.path() + "/proc/devices");
  auto r = run({"--dev-root", m_dir.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gpuctk: error: read " + m_dir.path() + "/proc/devices: No such file or directory\n");
  r = run({"--dev-root", "dev"});
  EXPECT_EQ(
      test::usage_error(r),
      "gpuctk: error: --dev-root: \"dev\" is not an absolute path (see gpuctk system create-device-nodes "
      "--help)\n");
  r = run({"--load-kernel-modules"});
  EXPECT_EQ(test::usage_error(r),
            "gpuctk: error: unknown option \"--load-kernel-modules\" (see gpuctk system create-device-nodes "
            "--help)\n");
}

}  // namespace
}  // namespace gpuctk
