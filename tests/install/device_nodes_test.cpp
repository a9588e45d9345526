// `gpuctk system create-device-nodes` (src/install/device_nodes.cpp): which nodes, with which numbers,
// from /proc/devices and the GPUs' information files; made as the driver makes them (0666), idempotent, a
// node whose dynamic major changed replaced, anything else at a node's path refused and kept.
#include "install/device_nodes.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::install {
namespace {

namespace fs = std::filesystem;

discover::CharDevices devices(std::map<std::string, uint32_t, std::less<>> majors) {
  return discover::CharDevices{.majors = std::move(majors)};
}

TEST(DeviceNodes, PlanHasTheControlNodesThenTheGpusWithTheDriversNumbers) {
  const auto plan = plan_device_nodes(devices({{"nvidia", 195}, {"nvidiactl", 195}, {"nvidia-uvm", 510}}),
                                      {0, 3}, NodeSet::all);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->nodes, (std::vector<NodeToMake>{{"nvidiactl", 195, 255},
                                                  {"nvidia-modeset", 195, 254},
                                                  {"nvidia-uvm", 510, 0},
                                                  {"nvidia-uvm-tools", 510, 1},
                                                  {"nvidia0", 195, 0},
                                                  {"nvidia3", 195, 3}}));
  EXPECT_TRUE(plan->notes.empty());
}

TEST(DeviceNodes, PlanOfASetAndOfAnOldDriverWithoutUvm) {
  // Drivers before 550.40 register the GPUs' major as nvidia-frontend; nvidia-uvm loads later.
  const auto plan = plan_device_nodes(devices({{"nvidia-frontend", 195}}), {1}, NodeSet::control);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->nodes, (std::vector<NodeToMake>{{"nvidiactl", 195, 255}, {"nvidia-modeset", 195, 254}}));
  EXPECT_EQ(plan->notes,
            std::vector<std::string>{"nvidia-uvm is not loaded (no nvidia-uvm in /proc/devices): no "
                                     "/dev/nvidia-uvm or /dev/nvidia-uvm-tools"});
  const auto gpus = plan_device_nodes(devices({{"nvidia", 195}, {"nvidia-uvm", 510}}), {1}, NodeSet::gpus);
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->nodes, (std::vector<NodeToMake>{{"nvidia1", 195, 1}}));
  const auto none = plan_device_nodes(devices({{"nvidia-uvm", 510}}), {}, NodeSet::all);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "/proc/devices: no nvidia or nvidia-frontend entry: the NVIDIA driver is not loaded");
}

class DeviceNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "mknod needs root";
    }
    fs::create_directories(m_dir.path() + "/dev");
    set_devices(510);
    gpu("0000:3b:00.0", 0, "No");
    gpu("0000:af:00.0", 1, "No");
    gpu("0000:d8:00.0", 2, "Yes");  // excluded by the driver: no node
  }
  void set_devices(uint32_t uvm) {
    m_dir.write("proc/devices", "Character devices:\n  1 mem\n195 nvidia\n195 nvidiactl\n" +
                                    std::to_string(uvm) + " nvidia-uvm\n\nBlock devices:\n  8 sd\n");
  }
  void gpu(const std::string& bus, uint32_t minor, const std::string& excluded) {
    m_dir.write("proc/driver/nvidia/gpus/" + bus + "/information",
                "Model: \t\t NVIDIA A100-SXM4-40GB\nBus Location: \t " + bus + "\nDevice Minor: \t " +
                    std::to_string(minor) + "\nGPU Excluded:\t " + excluded + "\n");
  }
  std::string node(std::string_view name) const { return m_dir.path() + "/dev/" + std::string(name); }
  // "c 195:255 0666" for a character device, "?" for anything else.
  std::string stat_of(std::string_view name) const {
    struct stat st {};
    if (::lstat(node(name).c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) {
      return "?";
    }
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return "c " + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)) + " " + mode;
  }
  std::vector<std::string> lines(const CreateResult& result, bool dry_run) const {
    std::vector<std::string> out;
    for (const auto& made : result.nodes) {
      std::string line = describe(made, dry_run);
      line.replace(line.find(m_dir.path()), m_dir.path().size(), "R");
      out.push_back(line);
    }
    return out;
  }
  test::TempDir m_dir;
};

TEST_F(DeviceNodesTest, MakesEveryNodeWithMode0666ThenChangesNothing) {
  const mode_t old_umask = ::umask(022);
  auto result = create_device_nodes(m_dir.path(), NodeSet::all, false);
  ::umask(old_umask);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(lines(*result, false), (std::vector<std::string>{
                                       "made R/dev/nvidiactl (195:255, mode 0666)",
                                       "made R/dev/nvidia-modeset (195:254, mode 0666)",
                                       "made R/dev/nvidia-uvm (510:0, mode 0666)",
                                       "made R/dev/nvidia-uvm-tools (510:1, mode 0666)",
                                       "made R/dev/nvidia0 (195:0, mode 0666)",
                                       "made R/dev/nvidia1 (195:1, mode 0666)",
                                   }));
  EXPECT_EQ(stat_of("nvidiactl"), "c 195:255 0666");
  EXPECT_EQ(stat_of("nvidia-uvm-tools"), "c 510:1 0666");
  EXPECT_EQ(stat_of("nvidia1"), "c 195:1 0666");
  EXPECT_FALSE(fs::exists(node("nvidia2"))) << "an excluded GPU gets no node";
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(m_dir.path() + "/dev")) {
    names.push_back(entry.path().filename());
  }
  EXPECT_EQ(names.size(), 6u) << "no temporary name left";

  // An administrator's mode stays; nothing is made again.
  ASSERT_EQ(::chmod(node("nvidia0").c_str(), 0660), 0);
  result = create_device_nodes(m_dir.path(), NodeSet::all, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(lines(*result, false)[4], "unchanged R/dev/nvidia0 (195:0)");
  EXPECT_EQ(
      std::ranges::count_if(lines(*result, false), [](const auto& l) { return l.starts_with("unchanged "); }),
      6);
  EXPECT_EQ(stat_of("nvidia0"), "c 195:0 0660");
}

// nvidia-uvm's major is given out when the module loads: after a reload the old node is wrong.
TEST_F(DeviceNodesTest, ANodeWithOtherNumbersIsReplaced) {
  ASSERT_TRUE(create_device_nodes(m_dir.path(), NodeSet::control, false));
  set_devices(508);
  const auto dry = create_device_nodes(m_dir.path(), NodeSet::control, true);
  ASSERT_TRUE(dry) << dry.error().message;
  EXPECT_EQ(lines(*dry, true)[2], "would replace R/dev/nvidia-uvm (508:0, was 510:0)");
  EXPECT_EQ(stat_of("nvidia-uvm"), "c 510:0 0666") << "a dry run makes nothing";
  const auto result = create_device_nodes(m_dir.path(), NodeSet::control, false);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(lines(*result, false)[2], "replaced R/dev/nvidia-uvm (508:0, was 510:0)");
  EXPECT_EQ(lines(*result, false)[3], "replaced R/dev/nvidia-uvm-tools (508:1, was 510:1)");
  EXPECT_EQ(stat_of("nvidia-uvm"), "c 508:0 0666");
  EXPECT_FALSE(fs::exists(node("nvidia0"))) << "--control-devices: no GPU nodes";
}

TEST_F(DeviceNodesTest, AnythingElseAtANodesPathIsAnErrorAndStays) {
  m_dir.write("dev/nvidia0", "not a device\n");
  const auto result = create_device_nodes(m_dir.path(), NodeSet::gpus, false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, node("nvidia0") + ": exists and is not a character device");
  EXPECT_EQ(read_file(node("nvidia0")).value_or(""), "not a device\n");
  fs::remove(m_dir.path() + "/proc/devices");
  const auto missing = create_device_nodes(m_dir.path(), NodeSet::all, false);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "read " + m_dir.path() + "/proc/devices: No such file or directory");
}

}  // namespace
}  // namespace gpuctk::install
