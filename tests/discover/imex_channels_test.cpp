// IMEX channels: the one parser of a channel's name and the host's channel nodes, on real nodes made in a
// temporary dev root.
#include "discover/imex_channels.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir.hpp"

namespace gpuctk::discover {
namespace {

TEST(ImexChannels, ParsesANumberOrChannelN) {
  EXPECT_EQ(parse_imex_channel("0"), 0U);
  EXPECT_EQ(parse_imex_channel("17"), 17U);
  EXPECT_EQ(parse_imex_channel("channel3"), 3U);
  EXPECT_EQ(parse_imex_channel("1048575"), k_max_imex_channel);
  for (const auto* bad : {"", "channel", "1048576", "4294967296", "007", "00", "-1", "+1", " 1", "1 ", "0x1",
                          "channelchannel1", "Channel1", "channel01", "1a", "all"}) {
    EXPECT_EQ(parse_imex_channel(bad), std::nullopt) << bad;
  }
}

TEST(ImexChannels, PathOfAChannel) {
  EXPECT_EQ(imex_channel_path(0), "/dev/nvidia-caps-imex-channels/channel0");
  EXPECT_EQ(imex_channel_path(1048575), "/dev/nvidia-caps-imex-channels/channel1048575");
}

class ImexChannelNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_root.path().empty());
    if (::geteuid() != 0) {
      GTEST_SKIP() << "device nodes need root to mknod";
    }
    std::filesystem::create_directories(m_root.path() + "/dev/nvidia-caps-imex-channels");
  }
  void make(const std::string& name, mode_t type, unsigned minor) const {
    const std::string path = m_root.path() + "/dev/nvidia-caps-imex-channels/" + name;
    ASSERT_EQ(::mknod(path.c_str(), type | 0666, makedev(234, minor)), 0) << path;
  }
  test::TempDir m_root{"gpuctk-imex"};
};

TEST_F(ImexChannelNodesTest, EveryChannelNodeSortedByPathOthersSkipped) {
  make("channel10", S_IFCHR, 10);
  make("channel2", S_IFCHR, 2);
  make("channel0", S_IFCHR, 0);
  make("channel5", S_IFBLK, 5);    // a block device is not a channel
  make("channel007", S_IFCHR, 7);  // not a name the driver makes
  make("other", S_IFCHR, 3);
  ASSERT_EQ(::symlink("channel0", (m_root.path() + "/dev/nvidia-caps-imex-channels/channel9").c_str()), 0);
  const auto nodes = discover_imex_channels(m_root.path());
  ASSERT_TRUE(nodes) << nodes.error().message;
  std::vector<std::string> paths;
  for (const auto& node : *nodes) {
    paths.push_back(node.path);
    EXPECT_EQ(node.host_path, m_root.path() + node.path);
    EXPECT_EQ(node.type, 'c');
    EXPECT_EQ(node.major, 234U);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidia-caps-imex-channels/channel0",
                                             "/dev/nvidia-caps-imex-channels/channel10",
                                             "/dev/nvidia-caps-imex-channels/channel2"}));
  EXPECT_EQ(nodes->at(1).minor, 10U);
}

TEST_F(ImexChannelNodesTest, NoDirectoryIsNoChannel) {
  std::filesystem::remove(m_root.path() + "/dev/nvidia-caps-imex-channels");
  const auto nodes = discover_imex_channels(m_root.path());
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_TRUE(nodes->empty());
}

TEST_F(ImexChannelNodesTest, OneChannelIsTheHostsCharacterDeviceOrAnError) {
  make("channel3", S_IFCHR, 3);
  make("channel4", S_IFBLK, 4);
  ASSERT_EQ(::symlink("channel3", (m_root.path() + "/dev/nvidia-caps-imex-channels/channel5").c_str()), 0);
  const auto node = imex_channel_node(m_root.path(), 3);
  ASSERT_TRUE(node) << node.error().message;
  EXPECT_EQ(node->path, "/dev/nvidia-caps-imex-channels/channel3");
  EXPECT_EQ(node->minor, 3U);
  const std::string dir = m_root.path() + "/dev/nvidia-caps-imex-channels/";
  EXPECT_EQ(imex_channel_node(m_root.path(), 1).error().message,
            "IMEX channel 1: " + dir + "channel1 does not exist");
  EXPECT_EQ(imex_channel_node(m_root.path(), 4).error().message,
            "IMEX channel 4: " + dir + "channel4: not a character device");
  EXPECT_EQ(imex_channel_node(m_root.path(), 5).error().message,
            "IMEX channel 5: " + dir + "channel5: not a device node");
}

}  // namespace
}  // namespace gpuctk::discover
