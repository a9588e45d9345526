// install/install: the node-path resolver (links resolved inside the host root as the node would, ".."
// clamped there) and the docker hook link's target.
#include "install/install.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir_test.hpp"

namespace gpuctk::install {
namespace {

namespace fs = std::filesystem;

class ResolveInNodeRootClampedTest : public test::TempDirTest {
 protected:
  void SetUpDir() override {
    m_root = m_dir + "/host";
    fs::create_directories(m_root + "/run/cdi");
    fs::create_directories(m_root + "/etc");
  }
  void link(const std::string& target, const std::string& node_path) const {
    ASSERT_EQ(::symlink(target.c_str(), (m_root + node_path).c_str()), 0) << node_path;
  }

  std::string m_root;
};

TEST_F(ResolveInNodeRootClampedTest, AnAbsoluteLinkStartsAgainAtTheRoot) {
  link("/run", "/var");  // as /var/run -> /run on Debian, one level up
  EXPECT_EQ(resolve_in_node_root_clamped(m_root, "/var/cdi/nvidia.yaml").value(),
            m_root + "/run/cdi/nvidia.yaml");
}

TEST_F(ResolveInNodeRootClampedTest, ARelativeLinkClimbingAboveTheRootStopsAtIt) {
  link("../../../../../run", "/etc/cdi");
  EXPECT_EQ(resolve_in_node_root_clamped(m_root, "/etc/cdi/x.yaml").value(), m_root + "/run/x.yaml");
}

TEST_F(ResolveInNodeRootClampedTest, DotDotInThePathStopsAtTheRoot) {
  EXPECT_EQ(resolve_in_node_root_clamped(m_root, "/../../etc/x").value(), m_root + "/etc/x");
  EXPECT_EQ(resolve_in_node_root_clamped(m_root + "/", "/").value(), m_root + "/");
}

TEST_F(ResolveInNodeRootClampedTest, TheLastComponentIsNotFollowed) {
  link("/run", "/etc/gpuctk");
  EXPECT_EQ(resolve_in_node_root_clamped(m_root, "/etc/gpuctk").value(), m_root + "/etc/gpuctk");
}

TEST_F(ResolveInNodeRootClampedTest, MissingComponentsAreKeptAsGiven) {
  EXPECT_EQ(resolve_in_node_root_clamped(m_root, "/usr/local/gpuctk/bin/gpuctk").value(),
            m_root + "/usr/local/gpuctk/bin/gpuctk");
}

TEST_F(ResolveInNodeRootClampedTest, ALinkLoopIsAnError) {
  link("/b", "/a");
  link("/a", "/b");
  EXPECT_EQ(resolve_in_node_root_clamped(m_root, "/a/x").error().message,
            m_root + "/a/x: too many levels of symbolic links");
}

TEST(DockerHookTarget, IsRelativeToTheInstallDirectory) {
  EXPECT_EQ(docker_hook_target("/usr/local/gpuctk/bin"), "../bin/gpuctk");
  EXPECT_EQ(docker_hook_target("/opt/gpuctk/tools/"), "../tools/gpuctk");
}

// put_file and remove_file_if_same compare in chunks: a file larger than one chunk that differs only in its
// last byte is rewritten (and not removed), one that is the same is left alone (and removed).
TEST(PutFileTest, ComparesLargeFilesToTheirLastByte) {
  const test::TempDir dir;
  const std::string path = dir.path() + "/bin/gpuctk";
  std::string bytes(3 * 256 * 1024 + 17, 'x');
  ASSERT_EQ(put_file(path, bytes, 0755).value(), Change::changed);
  EXPECT_EQ(put_file(path, bytes, 0755).value(), Change::unchanged);
  std::string other = bytes;
  other.back() = 'y';
  EXPECT_EQ(remove_file_if_same(path, other).value(), Change::unchanged);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(put_file(path, other, 0755).value(), Change::changed);
  EXPECT_EQ(put_file(path, other, 0755).value(), Change::unchanged);
  other.front() = 'z';
  EXPECT_EQ(put_file(path, other, 0755).value(), Change::changed);
  EXPECT_EQ(remove_file_if_same(path, other).value(), Change::changed);
  EXPECT_FALSE(fs::exists(path));
}

// A link where the file should be is replaced, never followed, even when its target holds the bytes.
TEST(PutFileTest, ALinkWithTheSameBytesBehindItIsReplaced) {
  const test::TempDir dir;
  const std::string target = dir.path() + "/elsewhere";
  ASSERT_EQ(put_file(target, "same", 0755).value(), Change::changed);
  const std::string path = dir.path() + "/gpuctk";
  ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0);
  EXPECT_EQ(put_file(path, "same", 0755).value(), Change::changed);
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(remove_file_if_same(target, "same").value(), Change::changed);
}

}  // namespace
}  // namespace gpuctk::install
