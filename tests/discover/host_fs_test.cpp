// In-root path resolution: symlinks are followed as if the root were "/", and nothing resolves outside it:
// what would climb out of the root is refused, with the link and its target named.
#include "discover/host_fs.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "discover/device_nodes.hpp"
#include "fixtures/builder/hosts.hpp"

namespace gpuctk::discover {
namespace {

namespace fs = std::filesystem;

// A driver-root-like tree:
//   usr/lib/x86_64-linux-gnu/libcuda.so.550.1      (file)
//   usr/lib/x86_64-linux-gnu/libcuda.so.1 -> libcuda.so.550.1
//   usr/lib64 -> /usr/lib/x86_64-linux-gnu          (absolute: restarts at the root)
//   lib -> usr/lib                                   (relative)
//   escape -> ../../../../../../etc                  (climbs out of the root: refused)
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
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/usr/lib/x86_64-linux-gnu/libcuda.so.1"), lib);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/usr/lib64/libcuda.so.1"), lib);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/lib/x86_64-linux-gnu/libcuda.so.1"), lib);
  EXPECT_EQ(
      resolve_in_host_root_strict(path(), "/usr/./lib//x86_64-linux-gnu/../x86_64-linux-gnu/libcuda.so.1"),
      lib);
  EXPECT_EQ(resolve_in_host_root_strict(path() + "/", "/usr/lib64"), path() + "/usr/lib/x86_64-linux-gnu");
}

TEST_F(RootTree, RefusesWhatClimbsOutOfTheRoot) {
  // ".." above the root is refused, in the path and in a link target alike (it used to be clamped to
  // the root, which hid a hostile link instead of reporting it).
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/../../etc/passwd"), std::nullopt);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/escape/passwd"), std::nullopt);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/usr/lib/../../.."), std::nullopt);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/usr/lib/../.."), path()) << "up to the root itself is fine";

  RootResolver resolver(path());
  auto escaped = resolver.resolve_or_why("/escape/passwd");
  ASSERT_FALSE(escaped);
  EXPECT_EQ(escaped.error().reason, Unresolved::Reason::escapes);
  EXPECT_EQ(escaped.error().link, path() + "/escape");
  EXPECT_EQ(escaped.error().target, "../../../../../../etc");
  EXPECT_EQ(
      describe_unresolved(path(), "/escape/passwd", escaped.error()),
      path() + "/escape/passwd: " + path() + "/escape -> ../../../../../../etc: leads out of " + path());
  auto dotdot = resolver.resolve_or_why("/../etc/passwd");
  ASSERT_FALSE(dotdot);
  EXPECT_EQ(dotdot.error().reason, Unresolved::Reason::escapes);
  EXPECT_EQ(describe_unresolved(path(), "/../etc/passwd", dotdot.error()),
            path() + "/../etc/passwd: leads out of " + path());
}

TEST_F(RootTree, AbsoluteLinksStayInsideTheRoot) {
  // A driver container's "x.json -> /etc/passwd" names the container's /etc/passwd, never the host's.
  fs::create_symlink("/etc/passwd", path() + "/x.json");
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/x.json"), path() + "/etc/passwd");
  fs::create_symlink("/etc/shadow", path() + "/y.json");  // the tree has no /etc/shadow
  RootResolver resolver(path());
  auto dangling = resolver.resolve_or_why("/y.json");
  ASSERT_FALSE(dangling);
  EXPECT_EQ(dangling.error().reason, Unresolved::Reason::missing);
  EXPECT_EQ(describe_unresolved(path(), "/y.json", dangling.error()),
            path() + "/y.json -> /etc/shadow: no such file inside " + path());
}

TEST_F(RootTree, WhyAPathDoesNotResolve) {
  RootResolver resolver(path());
  // A plain absence says nothing, even through a link of a parent (lib -> usr/lib).
  auto absent = resolver.resolve_or_why("/lib/nope");
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().reason, Unresolved::Reason::missing);
  EXPECT_TRUE(absent.error().link.empty());
  EXPECT_EQ(describe_unresolved(path(), "/lib/nope", absent.error()), "");
  auto loop = resolver.resolve_or_why("/loop");
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.error().reason, Unresolved::Reason::loop);
  EXPECT_EQ(describe_unresolved(path(), "/loop", loop.error()),
            path() + "/loop: more than 40 symbolic links (last " + path() + "/loop -> loop)");
  if (::geteuid() != 0) {
    // An unreadable directory is not "missing": the errno is kept.
    fs::create_directories(path() + "/locked/inner");
    fs::permissions(path() + "/locked", fs::perms::none);
    auto locked = resolver.resolve_or_why("/locked/inner");
    fs::permissions(path() + "/locked", fs::perms::owner_all);
    ASSERT_FALSE(locked);
    EXPECT_EQ(locked.error().reason, Unresolved::Reason::unreadable);
    EXPECT_EQ(locked.error().error, EACCES);
    EXPECT_EQ(describe_unresolved(path(), "/locked/inner", locked.error()),
              path() + "/locked/inner: Permission denied");
  }
}

TEST_F(RootTree, MissingComponentsAndLoopsResolveToNothing) {
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/usr/lib/nope/libcuda.so.1"), std::nullopt);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/usr/lib/x86_64-linux-gnu/libcuda.so.550.1/x"),
            std::nullopt);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/loop"), std::nullopt);
  EXPECT_EQ(resolve_in_host_root_strict(path(), "/loop/x"), std::nullopt);
}

TEST_F(RootTree, TheSlashRootIsTheHost) {
  EXPECT_EQ(resolve_in_host_root_strict("/", "/"), "/");
  EXPECT_EQ(resolve_in_host_root_strict("", path() + "/lib/x86_64-linux-gnu"),
            path() + "/usr/lib/x86_64-linux-gnu");
  // With "/" as the root, an absolute link target is the host's own path, and ".." at "/" stays there as
  // it does for the kernel: there is nothing outside to refuse.
  EXPECT_EQ(resolve_in_host_root_strict("/", path() + "/escape"), resolve_in_host_root_strict("/", "/etc"));
}

TEST_F(RootTree, AResolverGivesTheSameAnswersWhenReused) {
  // The resolver remembers directories it has seen; its answers must match fresh resolution in any order,
  // links through remembered directories included.
  RootResolver resolver(path());
  const std::vector<std::string> paths = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                          "/usr/lib64/libcuda.so.1",
                                          "/lib/x86_64-linux-gnu",
                                          "/escape/passwd",
                                          "/usr/lib/nope",
                                          "/loop",
                                          "/usr/lib/x86_64-linux-gnu/../../lib64/libcuda.so.1",
                                          "/usr/lib/x86_64-linux-gnu/libcuda.so.1"};
  for (int round = 0; round < 2; ++round) {
    for (const auto& p : paths) {
      EXPECT_EQ(resolver.resolve(p), resolve_in_host_root_strict(path(), p)) << p;
    }
  }
  EXPECT_EQ(resolver.resolve("/usr/lib/x86_64-linux-gnu/../../lib64/libcuda.so.1"),
            path() + "/usr/lib/x86_64-linux-gnu/libcuda.so.550.1");
}

// Missing is not the same as unreachable: only ENOENT/ENOTDIR are "nothing there"; everything else keeps
// its errno, so a GPU node behind a loop (or EACCES for non-root) is not reported as missing.
TEST_F(RootTree, StatKeepsErrnoWhenAPathCannotBeReached) {
  const auto missing = lstat_path(path() + "/etc/nothing");
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_FALSE(*missing);
  const auto not_dir = lstat_path(path() + "/etc/passwd/x");
  ASSERT_TRUE(not_dir) << not_dir.error().message;
  EXPECT_FALSE(*not_dir);
  const auto found = lstat_path(path() + "/lib");
  ASSERT_TRUE(found && *found);
  EXPECT_TRUE(S_ISLNK((*found)->st_mode));
  const auto looped = lstat_path(path() + "/loop/nvidia0");
  ASSERT_FALSE(looped);
  EXPECT_EQ(looped.error().message, "lstat " + path() + "/loop/nvidia0: Too many levels of symbolic links");
  const auto followed = stat_path(path() + "/loop");
  ASSERT_FALSE(followed);
  EXPECT_EQ(followed.error().message, "stat " + path() + "/loop: Too many levels of symbolic links");
  const auto node = stat_device_node(path() + "/loop", "/dev/nvidia0");
  ASSERT_FALSE(node);
  EXPECT_EQ(node.error().message, "lstat " + path() + "/loop/dev/nvidia0: Too many levels of symbolic links");
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
