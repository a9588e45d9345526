// Discovery on Debian's packaged driver as its real packages lay it out (fixtures/hosts/a10-debian-packaged,
// checked against the real 535 packages in tests/realhost): libraries in nvidia/current reached through
// update-alternatives links, the X.Org modules and nvidia-smi behind links, no nvidia-debugdump.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "discover/discover.hpp"
#include "discover/driver_files.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"

namespace gpuctk::discover {
namespace {

class DebianLayout : public test::FixtureHostTest {
 protected:
  DebianLayout() : FixtureHostTest("a10-debian-packaged") {}
  void SetUpHost() override {
    auto inv = discover(test::discover_options(*m_fixture, Mode::proc));
    ASSERT_TRUE(inv) << inv.error().message;
    m_inv = std::move(*inv);
  }

  const DriverFile* file(std::string_view container_path) const {
    const auto it = std::ranges::find(m_inv.files, container_path, &DriverFile::container_path);
    return it == m_inv.files.end() ? nullptr : &*it;
  }
  // "target::link" of every library link, as create-symlinks takes them.
  std::vector<std::string> links() const {
    std::vector<std::string> out;
    for (const auto& link : m_inv.library_links) {
      out.push_back(link.target + "::" + link.link);
    }
    return out;
  }
  bool has_link(const std::string& pair) const { return std::ranges::count(links(), pair) == 1; }
  std::string host(std::string_view path) const { return m_fixture->host.driver_root + std::string(path); }

  static constexpr std::string_view k_version = "535.216.01";
  Inventory m_inv;
};

// The X server loads its GLX module from modules/extensions, where Debian has only the link
// libglxserver_nvidia.so (two alternatives deep to /usr/lib/nvidia/current/libglxserver_nvidia.so.<ver>):
// the module is mounted there under its versioned name, with the link beside it.
TEST_F(DebianLayout, GlxModuleThroughTheXorgModuleLink) {
  const std::string glx = "libglxserver_nvidia.so." + std::string(k_version);
  const auto* module = file("/usr/lib/xorg/modules/extensions/" + glx);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->host_path, host("/usr/lib/nvidia/current/" + glx));
  EXPECT_EQ(module->kind, FileKind::xorg_module);
  EXPECT_EQ(module->capability, Capability::display);
  EXPECT_TRUE(has_link(glx + "::/usr/lib/xorg/modules/extensions/libglxserver_nvidia.so"))
      << testing::PrintToString(links());
  const auto* driver = file("/usr/lib/xorg/modules/drivers/nvidia_drv.so");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->host_path, host("/usr/lib/nvidia/current/nvidia_drv.so"));
}

// The loaders that look at a fixed path find the driver there only through the alternatives: GBM's
// backend in <libdir>/gbm, VDPAU's driver in <libdir>/vdpau, and programs that name
// /usr/lib/<triplet>/libcuda.so.1. The container gets each link, straight to the mounted file.
TEST_F(DebianLayout, AlternativesLinksReachTheMountedLibraries) {
  const std::string v(k_version);
  for (const auto& pair : std::vector<std::string>{
           "../nvidia/current/libnvidia-allocator.so." + v +
               "::/usr/lib/x86_64-linux-gnu/gbm/nvidia-drm_gbm.so",
           "../nvidia/current/libvdpau_nvidia.so." + v +
               "::/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.1",
           "../nvidia/current/libvdpau_nvidia.so." + v +
               "::/usr/lib/i386-linux-gnu/vdpau/libvdpau_nvidia.so.1",
           "nvidia/current/libcuda.so." + v + "::/usr/lib/x86_64-linux-gnu/libcuda.so.1",
           "nvidia/current/libcuda.so." + v + "::/usr/lib/x86_64-linux-gnu/libcuda.so",
           "nvidia/current/libcuda.so." + v + "::/usr/lib/i386-linux-gnu/libcuda.so.1",
           "nvidia/current/libGLX_nvidia.so." + v + "::/usr/lib/x86_64-linux-gnu/libGLX_indirect.so.0",
           std::string("nvidia/current/libnvidia-api.so.1::/usr/lib/x86_64-linux-gnu/libnvidia-api.so.1"),
           "nvidia/current/libnvidia-cfg.so." + v + "::/usr/lib/x86_64-linux-gnu/libnvidia-cfg.so.1",
       }) {
    EXPECT_TRUE(has_link(pair)) << pair << " in " << testing::PrintToString(links());
  }
  // The packages' own links beside the libraries, as they ship them.
  EXPECT_TRUE(has_link("libnvidia-allocator.so." + v +
                       "::/usr/lib/x86_64-linux-gnu/nvidia/current/nvidia-drm_gbm.so"));
  EXPECT_TRUE(has_link("libcuda.so.1::/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so"));
  // Links that lead to no mounted library (the alternatives directory itself) are not copied.
  for (const auto& pair : links()) {
    EXPECT_EQ(pair.find("/etc/alternatives"), std::string::npos) << pair;
  }
}

// libnvidia-api.so.1 (NVAPI) carries no driver version in its file name; it is the driver's all the same.
TEST_F(DebianLayout, NvapiHasNoVersionInItsName) {
  const auto* nvapi = file("/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-api.so.1");
  ASSERT_NE(nvapi, nullptr);
  EXPECT_EQ(nvapi->kind, FileKind::library);
  EXPECT_EQ(nvapi->capability, Capability::graphics);
  EXPECT_EQ(file_need("/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-api.so.1"),
            (FileNeed{FileNeed::Kind::capability, Capability::graphics, false}));
}

// nvidia-smi behind /usr/bin's alternative; Debian does not package nvidia-debugdump at all, so its
// absence is a note, not a warning a user could act on.
TEST_F(DebianLayout, BinariesBehindAlternativesAndNoDebugdumpWarning) {
  const auto* smi = file("/usr/bin/nvidia-smi");
  ASSERT_NE(smi, nullptr);
  EXPECT_EQ(smi->host_path, host("/usr/lib/nvidia/current/nvidia-smi"));
  const auto* mps = file("/usr/sbin/nvidia-cuda-mps-server");
  ASSERT_NE(mps, nullptr);
  EXPECT_EQ(m_inv.warnings, std::vector<std::string>{});
  EXPECT_EQ(std::ranges::count(m_inv.notes, "binary nvidia-debugdump: not found under " + host("")), 1);
}

// No ld.so.conf names nvidia/current: the linker-cache folders come from where the libraries are.
TEST_F(DebianLayout, LinkerCacheFoldersAreWhereTheLibrariesAre) {
  EXPECT_EQ(
      m_inv.library_dirs,
      (std::vector<std::string>{"/usr/lib/i386-linux-gnu", "/usr/lib/i386-linux-gnu/nvidia/current",
                                "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/nvidia/current"}));
}

}  // namespace
}  // namespace gpuctk::discover
