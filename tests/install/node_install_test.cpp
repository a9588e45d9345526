// install/node_install: `gpuctk install`'s steps without the CLI, on a bare node root (/etc and /proc, no
// driver, no engine): the layout's pod and node paths, the host-root check, what install says and leaves,
// that a second install changes nothing and that uninstall takes it all away again.
#include "install/node_install.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "support/temp_dir_test.hpp"
#include "util/file.hpp"

namespace gpuctk::install {
namespace {

namespace fs = std::filesystem;

class NodeInstallTest : public test::TempDirTest {
 protected:
  void SetUpDir() override {
    m_root = m_dir + "/node";
    fs::create_directories(m_root + "/etc");
    fs::create_directories(m_root + "/proc");
    m_options.host_root = m_root;
    m_options.no_runtime_config = true;
    m_options.config_path = "/etc/gpuctk/config.yaml";
  }
  // The progress, collected.
  Progress collecting() {
    return {.say = [this](const std::string& line) -> Result<void> {
              m_lines.push_back(line);
              return {};
            },
            .warn = [this](const std::string& warning) { m_lines.push_back("warning: " + warning); },
            .error = [this](const Error& error) { m_lines.push_back("error: " + error.message); }};
  }
  Layout layout() const {
    auto l = layout_of(m_options);
    EXPECT_TRUE(l) << l.error().message;
    return l.value_or(Layout{});
  }

  std::string m_root;
  NodeOptions m_options;
  std::vector<std::string> m_lines;
};

TEST_F(NodeInstallTest, LayoutNamesNodePathsInFilesAndPodPathsToWrite) {
  fs::create_directories(m_root + "/run");
  ASSERT_EQ(::symlink("/run", (m_root + "/var").c_str()), 0);
  m_options.install_dir = "/opt/gpuctk/bin/";
  m_options.driver_root = "/run/nvidia/driver/";
  m_options.spec_path = "/var/cdi/nvidia.yaml";
  const Layout l = layout();
  EXPECT_EQ(l.binary, "/opt/gpuctk/bin/gpuctk");
  EXPECT_EQ(l.runtime, "/opt/gpuctk/bin/gpuctk-runtime");
  EXPECT_EQ(l.pod_binary, m_root + "/opt/gpuctk/bin/gpuctk");
  EXPECT_EQ(l.pod_docker_hook, m_root + "/opt/gpuctk/docker/nvidia-container-runtime-hook");
  EXPECT_EQ(l.docker_hook_target, "../bin/gpuctk");
  EXPECT_EQ(l.pod_spec, m_root + "/run/cdi/nvidia.yaml") << "resolved as the node resolves /var";
  EXPECT_EQ(l.pod_config, m_root + "/etc/gpuctk/config.yaml");
  EXPECT_EQ(l.pod_driver_root, m_root + "/run/nvidia/driver");
  EXPECT_EQ(l.pod_version_file, m_root + "/proc/driver/nvidia/version");
  EXPECT_NE(l.config_text.find("\nhook-path: /opt/gpuctk/bin/gpuctk\ndriver-root: /run/nvidia/driver\n"
                               "dev-root: /\n"),
            std::string::npos)
      << l.config_text;
}

TEST_F(NodeInstallTest, AHostRootNeedsEtcAndProc) {
  EXPECT_TRUE(check_host_root(m_root));
  fs::remove(m_root + "/proc");
  EXPECT_EQ(check_host_root(m_root).error().message, "--host-root " + m_root +
                                                         ": not a node's root (no directory " + m_root +
                                                         "/proc); mount the node's / there (hostPath /)");
}

TEST_F(NodeInstallTest, InstallsThenChangesNothingThenUninstallsEverything) {
  const Layout l = layout();
  ASSERT_TRUE(install_node(m_options, l, collecting()));
  const std::vector<std::string> installed = {
      "installed " + l.pod_binary,
      "linked " + l.pod_runtime,
      "linked " + l.pod_docker_hook,
      "wrote " + l.pod_config,
      "spec: no NVIDIA driver (" + l.pod_version_file + " is missing); no spec written",
  };
  EXPECT_EQ(m_lines, installed);
  // This test binary is the running executable here: the copy has its size and is executable.
  EXPECT_EQ(fs::file_size(l.pod_binary), fs::file_size(self_exe_path().value()));
  EXPECT_EQ(fs::status(l.pod_binary).permissions() & fs::perms::all,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                fs::perms::others_exec);
  EXPECT_EQ(fs::read_symlink(l.pod_runtime).string(), "gpuctk");
  EXPECT_EQ(read_file(l.pod_config).value(), l.config_text);

  m_lines.clear();
  ASSERT_TRUE(install_node(m_options, l, collecting()));
  EXPECT_EQ(m_lines, (std::vector<std::string>{
                         "unchanged " + l.pod_binary,
                         "unchanged " + l.pod_runtime,
                         "unchanged " + l.pod_docker_hook,
                         "unchanged " + l.pod_config,
                         "spec: no NVIDIA driver (" + l.pod_version_file + " is missing); no spec written",
                     }));

  m_lines.clear();
  ASSERT_TRUE(uninstall_node(m_options, l, Undo::everything, collecting()));
  EXPECT_EQ(m_lines, (std::vector<std::string>{
                         "spec: unchanged " + l.pod_spec,
                         "removed " + l.pod_config,
                         "removed " + l.pod_docker_hook,
                         "removed " + l.pod_runtime,
                         "removed " + l.pod_binary,
                     }));
  EXPECT_FALSE(fs::exists(m_root + "/usr/local/gpuctk")) << "gpuctk's own directories go when empty";
  EXPECT_FALSE(fs::exists(m_root + "/etc/gpuctk"));
  EXPECT_TRUE(fs::is_directory(m_root + "/usr/local")) << "never a directory that is not gpuctk's";
}

TEST_F(NodeInstallTest, UnwireKeepsTheBinaryItsLinksAndTheConfig) {
  const Layout l = layout();
  ASSERT_TRUE(install_node(m_options, l, collecting()));
  m_lines.clear();
  ASSERT_TRUE(uninstall_node(m_options, l, Undo::unwire, collecting()));
  EXPECT_EQ(m_lines, (std::vector<std::string>{
                         "spec: unchanged " + l.pod_spec,
                         "kept " + l.pod_binary + ", its links and " + l.pod_config +
                             ": running containers of the runtime are stopped through them (gpuctk install "
                             "--uninstall removes them)",
                     }));
  EXPECT_TRUE(fs::exists(l.pod_binary));
  EXPECT_TRUE(fs::is_symlink(l.pod_runtime));
  EXPECT_TRUE(fs::exists(l.pod_config));
}

// --nvidia-cdi-hook-link: off unless asked; then gpuctk's link, kept by unwire, removed by uninstall; a
// file that is not gpuctk's link there (NVIDIA's hook) stops the install before it writes anything, and
// stays through an uninstall.
TEST_F(NodeInstallTest, TheNvidiaCdiHookLinkOnlyWhenAskedAndNeverOverAnotherFile) {
  const std::string path = m_root + "/usr/bin/nvidia-cdi-hook";
  ASSERT_TRUE(install_node(m_options, layout(), collecting()));
  EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << "off by default";
  ASSERT_TRUE(uninstall_node(m_options, layout(), Undo::everything, collecting()));

  m_options.nvidia_cdi_hook_link = "/usr/bin/nvidia-cdi-hook";
  const Layout l = layout();
  EXPECT_EQ(l.pod_nvidia_cdi_hook, path);
  m_lines.clear();
  ASSERT_TRUE(install_node(m_options, l, collecting()));
  EXPECT_EQ(m_lines.at(3), "linked " + path);
  EXPECT_EQ(fs::read_symlink(path).string(), "/usr/local/gpuctk/bin/gpuctk");
  m_lines.clear();
  ASSERT_TRUE(install_node(m_options, l, collecting()));
  EXPECT_EQ(m_lines.at(3), "unchanged " + path);
  m_lines.clear();
  ASSERT_TRUE(uninstall_node(m_options, l, Undo::unwire, collecting()));
  EXPECT_TRUE(fs::is_symlink(path)) << "kept with the binary it names";
  m_lines.clear();
  ASSERT_TRUE(uninstall_node(m_options, l, Undo::everything, collecting()));
  EXPECT_EQ(m_lines.at(2), "removed " + path);
  EXPECT_FALSE(fs::exists(fs::symlink_status(path)));

  fs::create_directories(m_root + "/usr/bin");
  for (const bool regular : {true, false}) {
    fs::remove(path);
    if (regular) {
      ASSERT_TRUE(write_file_atomic(path, "NVIDIA's hook", 0755));
    } else {
      fs::create_symlink("/usr/lib/nvidia/nvidia-cdi-hook", path);
    }
    auto refused = install_node(m_options, l, collecting());
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message,
              path + ": not gpuctk's link (" +
                  (regular ? std::string("a regular file") : "a link to /usr/lib/nvidia/nvidia-cdi-hook") +
                  "); refusing to replace it (NVIDIA's package owns that name)");
    EXPECT_FALSE(fs::exists(l.pod_binary)) << "nothing written";
    m_lines.clear();
    ASSERT_TRUE(uninstall_node(m_options, l, Undo::everything, collecting()));
    EXPECT_EQ(m_lines.at(2), "unchanged " + path);
    if (regular) {
      EXPECT_EQ(read_file(path).value_or(""), "NVIDIA's hook");
    } else {
      EXPECT_EQ(fs::read_symlink(path).string(), "/usr/lib/nvidia/nvidia-cdi-hook");
    }
  }
}

TEST_F(NodeInstallTest, RequireSpecMakesNoDriverAnErrorAfterTheFiles) {
  m_options.require_spec = true;
  const Layout l = layout();
  const auto done = install_node(m_options, l, collecting());
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message, "spec: no NVIDIA driver (" + l.pod_version_file + " is missing)");
  EXPECT_EQ(m_lines.size(), 4U);
  EXPECT_TRUE(fs::exists(l.pod_config));
}

TEST_F(NodeInstallTest, DriverVersionTextIsEmptyWithoutADriver) {
  const Layout l = layout();
  EXPECT_EQ(driver_version_text(l), "");
  fs::create_directories(m_root + "/proc/driver/nvidia");
  ASSERT_TRUE(write_file_atomic(l.pod_version_file, "NVRM version: 550.54.15\n", 0644));
  EXPECT_EQ(driver_version_text(l), "NVRM version: 550.54.15\n");
}

}  // namespace
}  // namespace gpuctk::install
