// In-root path resolution: symlinks are followed as if the root were "/", and nothing resolves outside it.
#include "discover/host_fs.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "fixtures/builder/hosts.hpp"

namespace gpuctk::discover {
namespace {

namespace fs = std::filesystem;

// A driver-root-like tree:
//   usr/lib/x86_64-linux-gnu/libcuda.so.550.1      (file)
//   usr/lib/x86_64-linux-gnu/libcuda.so.1 -> libcuda.so.550.1
//   usr/lib64 -> /usr/lib/x86_64-linux-gnu          (absolute: restarts at the root)
//   lib -> usr/lib                                   (relative)
//   escape -> ../../../../../../etc                  (climbs: stops at the root)
//   etc/passwd                                       (the root's own, not the host's)
//   loop -> loop
class RootTree : public ::testing::Test {
 protected:
  void SetUp() override {
    auto root = fixture::TempRoot::create();
    ASSERT_TRUE(root) << root.error().message;
    m_root.emplace(std::move(*root));
    const fs::path r = path();
    fs::create_directories(r / "usr/lib/x86_64-linux-gnu");
    fs::create_directories(r / "etc");
    std::ofstream(r / "usr/lib/x86_64-linux-gnu/libcuda.so.550.1") << "x";
    std::ofstream(r / "etc/passwd") << "root-of-the-tree";
    fs::create_symlink("libcuda.so.550.1", r / "usr/lib/x86_64-linux-gnu/libcuda.so.1");
    fs::create_symlink("/usr/lib/x86_64-linux-gnu", r / "usr/lib64");
    fs::create_symlink("usr/lib", r / "lib");
    fs::create_symlink("../../../../../../etc", r / "escape");
    fs::create_symlink("loop", r / "loop");
  }

  [[nodiscard]] const std::string& path() const { return m_root->path(); }

 private:
  std::optional<fixture::TempRoot> m_root;
};

TEST_F(RootTree, FollowsRelativeAndAbsoluteLinksInsideTheRoot) {
  const std::string lib = path() + "/usr/lib/x86_64-linux-gnu/libcuda.so.550.1";
  EXPECT_EQ(resolve_in_root(path(), "/usr/lib/x86_64-linux-gnu/libcuda.so.1"), lib);
  EXPECT_EQ(resolve_in_root(path(), "/usr/lib64/libcuda.so.1"), lib);
  EXPECT_EQ(resolve_in_root(path(), "/lib/x86_64-linux-gnu/libcuda.so.1"), lib);
  EXPECT_EQ(resolve_in_root(path(), "/usr/./lib//x86_64-linux-gnu/../x86_64-linux-gnu/libcuda.so.1"), lib);
  EXPECT_EQ(resolve_in_root(path() + "/", "/usr/lib64"), path() + "/usr/lib/x86_64-linux-gnu");
}

TEST_F(RootTree, NeverLeavesTheRoot) {
  // ".." at the root stays at the root, in the path and in a link target alike.
  EXPECT_EQ(resolve_in_root(path(), "/../../etc/passwd"), path() + "/etc/passwd");
  EXPECT_EQ(resolve_in_root(path(), "/escape/passwd"), path() + "/etc/passwd");
  EXPECT_EQ(resolve_in_root(path(), "/usr/lib/../../.."), path());
}

TEST_F(RootTree, MissingComponentsAndLoopsResolveToNothing) {
  EXPECT_EQ(resolve_in_root(path(), "/usr/lib/nope/libcuda.so.1"), std::nullopt);
  EXPECT_EQ(resolve_in_root(path(), "/usr/lib/x86_64-linux-gnu/libcuda.so.550.1/x"), std::nullopt);
  EXPECT_EQ(resolve_in_root(path(), "/loop"), std::nullopt);
  EXPECT_EQ(resolve_in_root(path(), "/loop/x"), std::nullopt);
}

TEST_F(RootTree, TheSlashRootIsTheHost) {
  EXPECT_EQ(resolve_in_root("/", "/"), "/");
  EXPECT_EQ(resolve_in_root("", path() + "/lib/x86_64-linux-gnu"), path() + "/usr/lib/x86_64-linux-gnu");
  // With "/" as the root, an absolute link target is the host's own path.
  EXPECT_EQ(resolve_in_root("/", path() + "/escape"), resolve_in_root("/", "/etc"));
}

TEST_F(RootTree, AResolverGivesTheSameAnswersWhenReused) {
  // The resolver remembers directories it has seen; its answers must match fresh resolution in any order,
  // links through remembered directories included.
  RootResolver resolver(path());
  const std::vector<std::string> paths = {
      "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1", "/lib/x86_64-linux-gnu",
      "/escape/passwd", "/usr/lib/nope", "/loop", "/usr/lib/x86_64-linux-gnu/../../lib64/libcuda.so.1",
      "/usr/lib/x86_64-linux-gnu/libcuda.so.1"};
  for (int round = 0; round < 2; ++round) {
    for (const auto& p : paths) {
      EXPECT_EQ(resolver.resolve(p), resolve_in_root(path(), p)) << p;
    }
  }
  EXPECT_EQ(resolver.resolve("/usr/lib/x86_64-linux-gnu/../../lib64/libcuda.so.1"),
            path() + "/usr/lib/x86_64-linux-gnu/libcuda.so.550.1");
}

TEST(UnderAndStripRoot, AddAndRemoveThePrefix) {
  EXPECT_EQ(under_root("/run/nvidia/driver", "/usr/bin/nvidia-smi"), "/run/nvidia/driver/usr/bin/nvidia-smi");
  EXPECT_EQ(under_root("/run/nvidia/driver/", "/usr"), "/run/nvidia/driver/usr");
  EXPECT_EQ(under_root("/", "/usr"), "/usr");
  EXPECT_EQ(strip_root("/run/nvidia/driver", "/run/nvidia/driver/usr/lib"), "/usr/lib");
  EXPECT_EQ(strip_root("/", "/usr/lib"), "/usr/lib");
  EXPECT_EQ(strip_root("/run/nvidia/driver", "/elsewhere"), "/elsewhere");
}

}  // namespace
}  // namespace gpuctk::discover
