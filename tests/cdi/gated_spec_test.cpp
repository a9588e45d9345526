// The specs of `cdi generate --mode gds|mofed|gdrcopy|nvswitch` over a temporary dev root with real
// nodes and a driver root with GDS's files.
#include "cdi/gated_spec.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cdi/codec.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::cdi {
namespace {

using discover::GatedFeature;

class GatedSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_root.path().empty());
    if (::geteuid() != 0) {
      GTEST_SKIP() << "device nodes need root to mknod";
    }
    m_dev = m_root.path() + "/host";
    m_driver = m_root.path() + "/driver";
    std::filesystem::create_directories(m_dev + "/dev/infiniband");
    std::filesystem::create_directories(m_driver + "/etc");
    std::filesystem::create_directories(m_driver + "/run/udev/data");
    ASSERT_TRUE(write_file_atomic(m_driver + "/etc/cufile.json", "{}", 0644));
  }
  // A character device `path` under the dev root with `mode` and group `gid`.
  void make(const std::string& path, unsigned minor, mode_t mode = 0666, gid_t gid = 0) const {
    const std::string host = m_dev + path;
    ASSERT_EQ(::mknod(host.c_str(), S_IFCHR | mode, makedev(240, minor)), 0) << host;
    ASSERT_EQ(::chmod(host.c_str(), mode), 0) << host;  // whatever the umask
    ASSERT_EQ(::chown(host.c_str(), 0, gid), 0) << host;
  }
  // A node of the spec's "all" device, as gpuctk writes it: no major or minor (a dynamic major).
  [[nodiscard]] std::string node(const std::string& path, unsigned mode = 438, unsigned gid = 0) const {
    std::string text = "        - path: \"" + path + "\"\n          hostPath: \"" + m_dev + path +
                       "\"\n          type: \"c\"\n          fileMode: " + std::to_string(mode) +
                       "\n          permissions: \"rwm\"\n";
    if (gid != 0) {
      text += "          gid: " + std::to_string(gid) + "\n";
    }
    return text;
  }
  // hostPath needs CDI 0.5.0, additionalGids 0.7.0.
  [[nodiscard]] static std::string head(std::string_view klass = "gpu", std::string_view version = "0.5.0") {
    return "---\ncdiVersion: \"" + std::string(version) + "\"\nkind: \"nvidia.com/" + std::string(klass) +
           "\"\ndevices:\n  - name: \"all\"\n    containerEdits:\n      deviceNodes:\n";
  }
  static constexpr std::string_view k_common =
      "containerEdits:\n  env:\n    - \"NVIDIA_VISIBLE_DEVICES=void\"\n";
  [[nodiscard]] Result<std::string> yaml(GatedFeature feature, const BuildOptions& options = {}) const {
    GPUCTK_TRY_ASSIGN(const auto spec, generate_gated_spec(feature, m_dev, m_driver, options));
    return write_spec(spec, Format::yaml);
  }
  test::TempDir m_root{"gpuctk-gated-spec"};
  std::string m_dev;
  std::string m_driver;
};

// GDS: every /dev/nvidia-fs* character device (a link is skipped, never followed) and cuFile's and udev's
// files from the driver root, read-only, in the one device "all"; nothing of the other features.
TEST_F(GatedSpecTest, GdsIsTheNvidiaFsNodesAndCufileAndUdevMounts) {
  make("/dev/nvidia-fs0", 0);
  make("/dev/nvidia-fs1", 1);
  make("/dev/gdrdrv", 2);
  ASSERT_EQ(::symlink("/dev/null", (m_dev + "/dev/nvidia-fs9").c_str()), 0);
  const std::string options =
      "          options:\n            - \"ro\"\n            - \"nosuid\"\n            - \"nodev\"\n"
      "            - \"rbind\"\n            - \"rprivate\"\n";
  const auto text = yaml(GatedFeature::gds);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, head() + node("/dev/nvidia-fs0") + node("/dev/nvidia-fs1") + "      mounts:\n" +
                       "        - hostPath: \"" + m_driver + "/etc/cufile.json\"\n" +
                       "          containerPath: \"/etc/cufile.json\"\n" + options +
                       "        - hostPath: \"" + m_driver +
                       "/run/udev\"\n          containerPath: \"/run/udev\"\n" + options +
                       std::string(k_common));
}

// MOFED: the verbs nodes and rdma_cm, character devices only (a FIFO named uverbs is not one); the kind
// is the caller's.
TEST_F(GatedSpecTest, MofedIsTheVerbsAndRdmaCmNodes) {
  make("/dev/infiniband/uverbs0", 0);
  make("/dev/infiniband/uverbs1", 1);
  make("/dev/infiniband/rdma_cm", 2);
  make("/dev/nvidia-fs0", 3);
  ASSERT_EQ(::mkfifo((m_dev + "/dev/infiniband/uverbs9").c_str(), 0600), 0);
  BuildOptions options;
  options.klass = "mofed";
  const auto text = yaml(GatedFeature::mofed, options);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, head("mofed") + node("/dev/infiniband/rdma_cm") + node("/dev/infiniband/uverbs0") +
                       node("/dev/infiniband/uverbs1") + std::string(k_common));
}

// GDRCopy: /dev/gdrdrv; a node others may not open gives its group to the device's additionalGids, as
// NVIDIA's v1.20 does, unless the options leave them out.
TEST_F(GatedSpecTest, GdrcopyIsGdrdrvWithItsGroup) {
  make("/dev/gdrdrv", 0, 0660, 44);
  const auto text = yaml(GatedFeature::gdrcopy);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, head("gpu", "0.7.0") + node("/dev/gdrdrv", 0660, 44) +
                       "      additionalGids:\n        - 44\n" + std::string(k_common));
  BuildOptions options;
  options.additional_gids = AdditionalGids::none;
  const auto none = yaml(GatedFeature::gdrcopy, options);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, head() + node("/dev/gdrdrv", 0660, 44) + std::string(k_common));
}

// NVSwitch: every /dev/nvidia-nvswitch* node, nvidia-nvswitchctl among them.
TEST_F(GatedSpecTest, NvswitchIsEverySwitchAndTheControlNode) {
  make("/dev/nvidia-nvswitch0", 0);
  make("/dev/nvidia-nvswitch1", 1);
  make("/dev/nvidia-nvswitchctl", 255);
  const auto text = yaml(GatedFeature::nvswitch);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, head() + node("/dev/nvidia-nvswitch0") + node("/dev/nvidia-nvswitch1") +
                       node("/dev/nvidia-nvswitchctl") + std::string(k_common));
}

// A host without the feature's nodes is one error naming what was looked for and where; GDS's files
// alone make no spec.
TEST_F(GatedSpecTest, AHostWithoutTheNodesIsOneError) {
  const auto error = [&](GatedFeature feature) {
    const auto text = yaml(feature);
    return text ? "no error: " + *text : text.error().message;
  };
  EXPECT_EQ(error(GatedFeature::gds),
            "no devices to generate: no GPUDirect Storage devices on this host "
            "(/dev/nvidia-fs* under " +
                m_dev + ")");
  EXPECT_EQ(error(GatedFeature::mofed),
            "no devices to generate: no MOFED devices on this host (/dev/infiniband/uverbs*, "
            "/dev/infiniband/rdma_cm under " +
                m_dev + ")");
  EXPECT_EQ(error(GatedFeature::gdrcopy),
            "no devices to generate: no GDRCopy devices on this host (/dev/gdrdrv under " + m_dev + ")");
  EXPECT_EQ(error(GatedFeature::nvswitch),
            "no devices to generate: no NVSwitch devices on this host (/dev/nvidia-nvswitchctl, "
            "/dev/nvidia-nvswitch* under " +
                m_dev + ")");
}

}  // namespace
}  // namespace gpuctk::cdi
