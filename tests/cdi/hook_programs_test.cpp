// The checks of a spec's hook programs that need the host (cdi/hook_programs.hpp).
#include "cdi/hook_programs.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir_test.hpp"
#include "util/file.hpp"

namespace gpuctk::cdi {
namespace {

namespace fs = std::filesystem;

// A directory under /tmp itself (not $TMPDIR), removed afterwards.
class HookProgramsTest : public test::TempDirTest {
 protected:
  HookProgramsTest() : TempDirTest("gpuctk-hook-programs", "/tmp") {}
};

Hook hook_at(const std::string& path) {
  return Hook{.hook_name = "createContainer", .path = path, .args = {"gpuctk", "hook", "x"}, .env = {"A=1"}};
}

TEST_F(HookProgramsTest, MissingProgramsOfASpecOnceEach) {
  Spec spec;
  spec.kind = "nvidia.com/gpu";
  spec.container_edits.hooks = {hook_at("/nonexistent/gpuctk"), hook_at("/bin/sh"),
                                hook_at("/nonexistent/gpuctk")};
  Device device;
  device.name = "0";
  device.container_edits.hooks = {hook_at(m_dir)};
  spec.devices.push_back(device);
  EXPECT_EQ(
      missing_hook_programs(spec),
      (std::vector<std::string>{
          "hook program /nonexistent/gpuctk does not exist: every container given a device of this spec "
          "fails",
          "hook program " + m_dir +
              " is not an executable file: every container given a device of this spec fails",
      }));
  spec.container_edits.hooks = {hook_at("/bin/sh")};
  spec.devices.clear();
  EXPECT_EQ(missing_hook_programs(spec), std::vector<std::string>{});
}

TEST_F(HookProgramsTest, APathThatDoesNotLastOrIsNotGpuctk) {
  EXPECT_EQ(hook_path_problems("/nonexistent/gpuctk"),
            std::vector<std::string>{"/nonexistent/gpuctk does not exist"});
  const std::string plain = m_dir + "/plain";
  ASSERT_TRUE(write_file_atomic(plain, "not a program\n", 0644));
  EXPECT_EQ(hook_path_problems(plain), std::vector<std::string>{plain + " is not an executable file"});
  // Another program where gpuctk should be, in /tmp.
  const std::string other = m_dir + "/gpuctk";
  fs::copy_file("/bin/true", other);
  fs::permissions(other, fs::perms::owner_all);
  EXPECT_EQ(hook_path_problems(other),
            (std::vector<std::string>{other + " is not gpuctk",
                                      other + " lies under a temporary directory (/tmp)"}));
  // gpuctk itself, in its build tree.
  const std::string binary = fs::canonical(GPUCTK_BINARY).string();
  std::string cache;
  for (auto dir = fs::path(binary).parent_path(); dir != dir.root_path(); dir = dir.parent_path()) {
    if (fs::exists(dir / "CMakeCache.txt")) {
      cache = (dir / "CMakeCache.txt").string();
      break;
    }
  }
  ASSERT_FALSE(cache.empty()) << "gpuctk is not in a CMake build tree: " << binary;
  // A checkout may lie anywhere, /tmp included (CI builds from one there): then that is said first.
  std::vector<std::string> expected;
  for (const std::string tmp : {"/tmp", "/var/tmp", "/dev/shm"}) {
    if (binary.starts_with(tmp + "/")) {
      expected.push_back(binary + " lies under a temporary directory (" + tmp + ")");
    }
  }
  expected.push_back(binary + " lies in a build tree (" + cache + ")");
  EXPECT_EQ(hook_path_problems(binary), expected);
}

}  // namespace
}  // namespace gpuctk::cdi
