// install/install: the node-path resolver (links resolved inside the host root as the node would, ".."
// clamped there) and the docker hook link's target.
#include "install/install.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir.hpp"

namespace gpuctk::install {
namespace {

namespace fs = std::filesystem;

class ResolveInNodeRootClampedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_root = m_dir.path() + "/host";
    fs::create_directories(m_root + "/run/cdi");
    fs::create_directories(m_root + "/etc");
  }
  void link(const std::string& target, const std::string& node_path) const {
    ASSERT_EQ(::symlink(target.c_str(), (m_root + node_path).c_str()), 0) << node_path;
  }

  test::TempDir m_dir;
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

}  // namespace
}  // namespace gpuctk::install
