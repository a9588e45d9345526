#include "discover/nvidia_caps.hpp"

#include <gtest/gtest.h>

namespace gpuctk::discover {
namespace {

// /proc/driver/nvidia-caps/mig-minors as the driver writes it: config 1, monitor 2, then for each of 32
// GPU minors and 15 GPU instances the GI's access line followed by its 8 compute instances, numbered on
// from 3 (the driver's nvidia-caps numbering).
std::string full_mig_minors() {
  std::string text = "config 1\nmonitor 2\n";
  uint32_t minor = 3;
  for (int gpu = 0; gpu < 32; ++gpu) {
    for (int gi = 0; gi < 15; ++gi) {
      const std::string prefix = "gpu" + std::to_string(gpu) + "/gi" + std::to_string(gi);
      text += prefix + "/access " + std::to_string(minor++) + "\n";
      for (int ci = 0; ci < 8; ++ci) {
        text += prefix + "/ci" + std::to_string(ci) + "/access " + std::to_string(minor++) + "\n";
      }
    }
  }
  return text;
}

TEST(MigMinors, FullDriverTable) {
  const auto text = full_mig_minors();
  ASSERT_TRUE(text.starts_with("config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n"));
  ASSERT_TRUE(text.ends_with("\ngpu31/gi14/ci7/access 4322\n"));
  const auto minors = parse_mig_minors(text);
  ASSERT_TRUE(minors) << minors.error().message;
  EXPECT_EQ(minors->size(), 4322u);
  EXPECT_EQ(minors->config(), 1u);
  EXPECT_EQ(minors->monitor(), 2u);
  EXPECT_EQ(minors->gi_access(0, 0), 3u);
  EXPECT_EQ(minors->ci_access(0, 0, 0), 4u);
  EXPECT_EQ(minors->ci_access(0, 0, 7), 11u);
  EXPECT_EQ(minors->gi_access(0, 1), 12u);
  EXPECT_EQ(minors->gi_access(1, 0), 138u);  // 135 entries per GPU
  EXPECT_EQ(minors->ci_access(1, 2, 3), 138u + 2 * 9 + 1 + 3);
  EXPECT_EQ(minors->gi_access(31, 14), 4314u);
  EXPECT_EQ(minors->ci_access(31, 14, 7), 4322u);
  EXPECT_EQ(minors->minor("gpu31/gi14/ci7/access"), 4322u);
  // Outside the table.
  EXPECT_EQ(minors->gi_access(32, 0), std::nullopt);
  EXPECT_EQ(minors->gi_access(0, 15), std::nullopt);
  EXPECT_EQ(minors->ci_access(0, 0, 8), std::nullopt);
  EXPECT_EQ(minors->minor("fabric-imex-mgmt"), std::nullopt);
}

TEST(MigMinors, OtherCapabilitiesAndLayoutVariationsAreKept) {
  const auto minors = parse_mig_minors("config 1\r\n\n  monitor\t2\nfabric-imex-mgmt 4323");
  ASSERT_TRUE(minors) << minors.error().message;
  EXPECT_EQ(minors->config(), 1u);
  EXPECT_EQ(minors->monitor(), 2u);
  EXPECT_EQ(minors->minor("fabric-imex-mgmt"), 4323u);
  EXPECT_EQ(minors->gi_access(0, 0), std::nullopt);
}

TEST(MigMinors, EmptyFileHasNoCapabilities) {
  const auto minors = parse_mig_minors("");
  ASSERT_TRUE(minors) << minors.error().message;
  EXPECT_EQ(minors->config(), std::nullopt);
}

std::string mig_error(std::string_view text) {
  const auto result = parse_mig_minors(text);
  return result ? "(parsed)" : result.error().message;
}

TEST(MigMinors, BadLinesNameTheirLine) {
  EXPECT_EQ(mig_error("config 1\nmonitor\n"),
            "mig-minors: line 2: expected \"<name> <minor>\", got \"monitor\"");
  EXPECT_EQ(mig_error("config 1\nmonitor two\n"),
            "mig-minors: line 2: expected \"<name> <minor>\", got \"monitor two\"");
  EXPECT_EQ(mig_error("\n\ngpu0/gi0/access 3 4\n"),
            "mig-minors: line 3: expected \"<name> <minor>\", got \"gpu0/gi0/access 3 4\"");
  EXPECT_EQ(mig_error("config -1\n"), "mig-minors: line 1: expected \"<name> <minor>\", got \"config -1\"");
  EXPECT_EQ(mig_error("config 4294967296\n"),
            "mig-minors: line 1: expected \"<name> <minor>\", got \"config 4294967296\"");
  EXPECT_EQ(mig_error("config 1\nmonitor 2\nconfig 3\n"), "mig-minors: line 3: \"config\" listed twice");
}

TEST(MigMinors, AccessLinesGivenTwiceNameTheLaterLine) {
  EXPECT_EQ(mig_error("gpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi0/access 5\n"),
            "mig-minors: line 3: \"gpu0/gi0/access\" listed twice");
  EXPECT_EQ(mig_error("gpu1/gi0/access 3\n\ngpu0/gi2/ci1/access 4\ngpu0/gi2/ci1/access 5\n"),
            "mig-minors: line 4: \"gpu0/gi2/ci1/access\" listed twice");
}

TEST(MigMinors, AnyOrderIsFound) {
  const auto minors =
      parse_mig_minors("gpu7/gi2/ci1/access 90\nmonitor 2\ngpu0/gi0/access 3\ngpu7/gi2/access 80\n");
  ASSERT_TRUE(minors) << minors.error().message;
  EXPECT_EQ(minors->size(), 4u);
  EXPECT_EQ(minors->ci_access(7, 2, 1), 90u);
  EXPECT_EQ(minors->gi_access(7, 2), 80u);
  EXPECT_EQ(minors->gi_access(0, 0), 3u);
  EXPECT_EQ(minors->minor("gpu7/gi2/ci1/access"), 90u);
  EXPECT_EQ(minors->ci_access(7, 2, 0), std::nullopt);
  EXPECT_EQ(minors->gi_access(7, 1), std::nullopt);
}

TEST(MigMinors, NonCanonicalNamesAreOtherCapabilities) {
  // Leading zeros, unknown suffixes and numbers beyond the table are not the access lines the driver
  // writes: they are kept by their exact name and never answer for an access capability.
  const auto minors = parse_mig_minors(
      "gpu01/gi0/access 5\ngpu1/gi0/ci0/accessx 6\ngpu1/gi70000/access 7\ngpu1/gi0/ci/access 8\n");
  ASSERT_TRUE(minors) << minors.error().message;
  EXPECT_EQ(minors->access.size(), 0u);
  EXPECT_EQ(minors->named.size(), 4u);
  EXPECT_EQ(minors->gi_access(1, 0), std::nullopt);
  EXPECT_EQ(minors->ci_access(1, 0, 0), std::nullopt);
  EXPECT_EQ(minors->gi_access(1, 70000), std::nullopt);
  EXPECT_EQ(minors->minor("gpu01/gi0/access"), 5u);
  EXPECT_EQ(minors->minor("gpu1/gi70000/access"), 7u);
}

// Dev-style capability files.
TEST(CapabilityFile, ConfigAndMonitor) {
  const auto config = parse_capability_file("DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(*config, (CapabilityFile{.minor = 1, .mode = 0400, .modify = true}));
  const auto gi = parse_capability_file("DeviceFileMinor: 3\nDeviceFileMode: 292\nDeviceFileModify: 0");
  ASSERT_TRUE(gi) << gi.error().message;
  EXPECT_EQ(*gi, (CapabilityFile{.minor = 3, .mode = 0444, .modify = false}));
}

TEST(CapabilityFile, OrderAndUnknownKeysDoNotMatter) {
  const auto cap = parse_capability_file(
      "DeviceFileModify: 1\r\nSomethingNew: x\nDeviceFileMode:\t438\nDeviceFileMinor: 4323\n");
  ASSERT_TRUE(cap) << cap.error().message;
  EXPECT_EQ(*cap, (CapabilityFile{.minor = 4323, .mode = 0666, .modify = true}));
}

std::string cap_error(std::string_view text) {
  const auto result = parse_capability_file(text);
  return result ? "(parsed)" : result.error().message;
}

TEST(CapabilityFile, ErrorsNameTheKey) {
  EXPECT_EQ(cap_error(""), "capability file: missing \"DeviceFileMinor:\"");
  EXPECT_EQ(cap_error("DeviceFileMinor: 1\nDeviceFileModify: 1\n"),
            "capability file: missing \"DeviceFileMode:\"");
  EXPECT_EQ(cap_error("DeviceFileMinor: 1\nDeviceFileMode: 256\n"),
            "capability file: missing \"DeviceFileModify:\"");
  EXPECT_EQ(cap_error("DeviceFileMinor: x\n"),
            "capability file: DeviceFileMinor: expected a decimal number from 0 to 4294967295, got \"x\"");
  EXPECT_EQ(cap_error("DeviceFileMinor: 1\nDeviceFileMode: 4096\n"),
            "capability file: DeviceFileMode: expected a decimal number from 0 to 4095, got \"4096\"");
  EXPECT_EQ(cap_error("DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 2\n"),
            "capability file: DeviceFileModify: expected a decimal number from 0 to 1, got \"2\"");
  EXPECT_EQ(cap_error("DeviceFileMinor: 1\nDeviceFileMinor: 2\n"),
            "capability file: line 2: duplicate \"DeviceFileMinor:\"");
  EXPECT_EQ(cap_error("DeviceFileMinor 1\n"),
            "capability file: line 1: expected \"Key: value\", got \"DeviceFileMinor 1\"");
}

TEST(CapabilityFile, DevicePath) {
  EXPECT_EQ(capability_device_path(1), "/dev/nvidia-caps/nvidia-cap1");
  EXPECT_EQ(capability_device_path(4322), "/dev/nvidia-caps/nvidia-cap4322");
}

}  // namespace
}  // namespace gpuctk::discover
