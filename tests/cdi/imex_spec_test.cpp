// The spec of `cdi generate --mode imex` over a temporary dev root with real channel nodes.
#include "cdi/imex_spec.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "cdi/codec.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk::cdi {
namespace {

class ImexSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_root.path().empty());
    if (::geteuid() != 0) {
      GTEST_SKIP() << "device nodes need root to mknod";
    }
    std::filesystem::create_directories(m_root.path() + "/dev/nvidia-caps-imex-channels");
    for (const unsigned channel : {0U, 2U, 10U}) {
      const std::string path =
          m_root.path() + "/dev/nvidia-caps-imex-channels/channel" + std::to_string(channel);
      ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(234, channel)), 0) << path;
      ASSERT_EQ(::chmod(path.c_str(), 0666), 0) << path;  // whatever the umask
    }
  }
  [[nodiscard]] std::string node(unsigned channel, std::string_view indent) const {
    const std::string path = "/dev/nvidia-caps-imex-channels/channel" + std::to_string(channel);
    const std::string i(indent);
    return i + "- path: \"" + path + "\"\n" + i + "  hostPath: \"" + m_root.path() + path + "\"\n" + i +
           "  type: \"c\"\n" + i + "  fileMode: 438\n" + i + "  permissions: \"rwm\"\n";
  }
  [[nodiscard]] std::string device(const std::string& name, std::initializer_list<unsigned> channels) const {
    std::string text = "  - name: \"" + name + "\"\n    containerEdits:\n      deviceNodes:\n";
    for (const auto channel : channels) {
      text += node(channel, "        ");
    }
    return text;
  }
  test::TempDir m_root{"gpuctk-imex-spec"};
};

// NVIDIA's shape: a device per channel named by its number, "all" with every channel, and only
// NVIDIA_VISIBLE_DEVICES=void in the common edits; no major or minor (a dynamic major).
TEST_F(ImexSpecTest, OneDevicePerChannelAndAll) {
  BuildOptions options;
  const auto spec = generate_imex_spec(m_root.path(), options);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(write_spec(*spec, Format::yaml),
            "---\ncdiVersion: \"0.5.0\"\nkind: \"nvidia.com/gpu\"\ndevices:\n" + device("0", {0}) +
                device("10", {10}) + device("2", {2}) + device("all", {0, 10, 2}) +
                "containerEdits:\n  env:\n    - \"NVIDIA_VISIBLE_DEVICES=void\"\n");
}

TEST_F(ImexSpecTest, ChosenChannelsKindAndNoAllDevice) {
  BuildOptions options;
  options.klass = "imex-channel";
  options.all_device = false;
  options.device_ids = {"channel10", "0", "10"};
  const auto spec = generate_imex_spec(m_root.path(), options);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(write_spec(*spec, Format::yaml),
            "---\ncdiVersion: \"0.5.0\"\nkind: \"nvidia.com/imex-channel\"\ndevices:\n" + device("0", {0}) +
                device("10", {10}) + "containerEdits:\n  env:\n    - \"NVIDIA_VISIBLE_DEVICES=void\"\n");
}

TEST_F(ImexSpecTest, ErrorsNameTheChannelOrTheDirectory) {
  BuildOptions options;
  options.device_ids = {"0", "x1"};
  EXPECT_EQ(generate_imex_spec(m_root.path(), options).error().message,
            "--device-ids: invalid IMEX channel \"x1\" (want a channel number from 0 to 1048575, channel<N> "
            "or all)");
  options.device_ids = {"3"};
  EXPECT_EQ(generate_imex_spec(m_root.path(), options).error().message,
            "IMEX channel 3: " + m_root.path() + "/dev/nvidia-caps-imex-channels/channel3 does not exist");
  std::filesystem::remove_all(m_root.path() + "/dev/nvidia-caps-imex-channels");
  options.device_ids = {};
  EXPECT_EQ(
      generate_imex_spec(m_root.path(), options).error().message,
      "no devices to generate: no IMEX channels in " + m_root.path() + "/dev/nvidia-caps-imex-channels");
}

}  // namespace
}  // namespace gpuctk::cdi
