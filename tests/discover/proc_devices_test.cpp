#include "discover/proc_devices.hpp"

#include <gtest/gtest.h>

namespace gpuctk::discover {
namespace {

// A DGX-class host on a 550.40+ driver with NVSwitch, IMEX and caps.
constexpr std::string_view k_host_550 =
    "Character devices:\n"
    "  1 mem\n"
    "  4 /dev/vc/0\n"
    "  4 tty\n"
    "  4 ttyS\n"
    "  5 /dev/tty\n"
    "  5 /dev/console\n"
    "  5 /dev/ptmx\n"
    "  7 vcs\n"
    " 10 misc\n"
    " 13 input\n"
    " 21 sg\n"
    " 29 fb\n"
    "128 ptm\n"
    "136 pts\n"
    "180 usb\n"
    "189 usb_device\n"
    "195 nvidia\n"
    "195 nvidia-modeset\n"
    "195 nvidiactl\n"
    "226 drm\n"
    "234 nvidia-caps-imex-channels\n"
    "235 nvidia-nvswitch\n"
    "236 nvidia-caps\n"
    "237 nvidia-nvlink\n"
    "240 hidraw\n"
    "241 ttyDBC\n"
    "242 bsg\n"
    "243 watchdog\n"
    "244 remoteproc\n"
    "245 ptp\n"
    "246 pps\n"
    "247 rtc\n"
    "248 dma_heap\n"
    "249 dax\n"
    "250 dimmctl\n"
    "251 ndctl\n"
    "252 tpm\n"
    "253 tpmrm\n"
    "254 gpiochip\n"
    "510 nvidia-uvm\n"
    "\n"
    "Block devices:\n"
    "  7 loop\n"
    "  8 sd\n"
    "  9 md\n"
    " 65 sd\n"
    " 66 sd\n"
    "253 device-mapper\n"
    "254 mdp\n"
    "259 blkext\n";

// A host on an older driver (before 550.40) without MIG caps.
constexpr std::string_view k_host_470 =
    "Character devices:\n"
    "  1 mem\n"
    "  4 /dev/vc/0\n"
    "  4 tty\n"
    "195 nvidia-frontend\n"
    "226 drm\n"
    "508 nvidia-uvm\n"
    "\n"
    "Block devices:\n"
    "259 blkext\n";

TEST(ProcDevices, NvidiaMajorsOfACurrentDriver) {
  const auto devices = parse_proc_devices(k_host_550);
  ASSERT_TRUE(devices) << devices.error().message;
  EXPECT_EQ(devices->nvidia_gpu_major(), 195u);
  EXPECT_EQ(devices->major(k_nvidia_frontend), std::nullopt);
  EXPECT_EQ(devices->major(k_nvidiactl), 195u);
  EXPECT_EQ(devices->major(k_nvidia_modeset), 195u);
  EXPECT_EQ(devices->major(k_nvidia_uvm), 510u);
  EXPECT_EQ(devices->major(k_nvidia_caps), 236u);
  EXPECT_EQ(devices->major(k_nvidia_caps_imex_channels), 234u);
  EXPECT_EQ(devices->major(k_nvidia_nvswitch), 235u);
  EXPECT_EQ(devices->major("/dev/vc/0"), 4u);
  EXPECT_EQ(devices->major("tty"), 4u);
  EXPECT_EQ(devices->majors.size(), 40u);
  // Block devices are not character devices, even where names repeat there.
  EXPECT_EQ(devices->major("loop"), std::nullopt);
  EXPECT_EQ(devices->major("blkext"), std::nullopt);
}

TEST(ProcDevices, NvidiaMajorsOfAnOlderDriver) {
  const auto devices = parse_proc_devices(k_host_470);
  ASSERT_TRUE(devices) << devices.error().message;
  EXPECT_EQ(devices->nvidia_gpu_major(), 195u);
  EXPECT_EQ(devices->major(k_nvidia_frontend), 195u);
  EXPECT_EQ(devices->major(k_nvidia_uvm), 508u);
  EXPECT_EQ(devices->major(k_nvidia_caps), std::nullopt);
  EXPECT_EQ(devices->major(k_nvidia_nvswitch), std::nullopt);
}

// The GPU and control nodes' major as nvidia-ctk reads it: the "nvidia" entry, else "nvidia-frontend"
// (drivers before 550.40); "nvidiactl" alone is not looked up.
TEST(ProcDevices, GpuMajorIsNvidiaThenNvidiaFrontend) {
  auto devices = parse_proc_devices("Character devices:\n194 nvidia-frontend\n195 nvidia\n");
  ASSERT_TRUE(devices) << devices.error().message;
  EXPECT_EQ(devices->nvidia_gpu_major(), 195u);
  devices = parse_proc_devices("Character devices:\n195 nvidiactl\n195 nvidia-modeset\n");
  ASSERT_TRUE(devices) << devices.error().message;
  EXPECT_EQ(devices->nvidia_gpu_major(), std::nullopt);
}

TEST(ProcDevices, HostWithoutNvidiaDriver) {
  const auto devices = parse_proc_devices("Character devices:\n  1 mem\n\nBlock devices:\n  7 loop\n");
  ASSERT_TRUE(devices) << devices.error().message;
  EXPECT_EQ(devices->nvidia_gpu_major(), std::nullopt);
  EXPECT_EQ(devices->majors.size(), 1u);
}

TEST(ProcDevices, WithoutBlockSection) {
  const auto devices = parse_proc_devices("Character devices:\n195 nvidia\n");
  ASSERT_TRUE(devices) << devices.error().message;
  EXPECT_EQ(devices->nvidia_gpu_major(), 195u);
}

std::string error_of(std::string_view text) {
  const auto result = parse_proc_devices(text);
  return result ? "(parsed)" : result.error().message;
}

TEST(ProcDevices, MalformedInputIsAnErrorWithItsLine) {
  EXPECT_EQ(error_of(""), "/proc/devices: no \"Character devices:\" section");
  EXPECT_EQ(error_of("Block devices:\n  7 loop\n"), "/proc/devices: no \"Character devices:\" section");
  EXPECT_EQ(error_of("  1 mem\n"), "/proc/devices: line 1: expected \"Character devices:\", got \"1 mem\"");
  EXPECT_EQ(error_of("Character devices:\n  1 mem\nnvidia 195\n"),
            "/proc/devices: line 3: expected \"<major> <name>\", got \"nvidia 195\"");
  EXPECT_EQ(error_of("Character devices:\n195\n"),
            "/proc/devices: line 2: expected \"<major> <name>\", got \"195\"");
  EXPECT_EQ(error_of("Character devices:\n-1 x\n"),
            "/proc/devices: line 2: expected \"<major> <name>\", got \"-1 x\"");
  EXPECT_EQ(error_of("Character devices:\n4294967296 x\n"),
            "/proc/devices: line 2: expected \"<major> <name>\", got \"4294967296 x\"");
  EXPECT_EQ(error_of("Character devices:\n195 nvidia\n\n510 nvidia-uvm\n511 nvidia-uvm\n"),
            "/proc/devices: line 5: \"nvidia-uvm\" listed twice (majors 510 and 511)");
}

}  // namespace
}  // namespace gpuctk::discover
