#include "discover/driver_params.hpp"

#include <gtest/gtest.h>

namespace gpuctk::discover {
namespace {

// /proc/driver/nvidia/params of a 550 driver (nv-procfs.c prints "%s: %u" then the quoted strings).
constexpr std::string_view k_params_550 =
    "ResmanDebugLevel: 4294967295\n"
    "RmLogonRC: 1\n"
    "ModifyDeviceFiles: 1\n"
    "DeviceFileUID: 0\n"
    "DeviceFileGID: 0\n"
    "DeviceFileMode: 438\n"
    "InitializeSystemMemoryAllocations: 1\n"
    "UsePageAttributeTable: 4294967295\n"
    "EnableMSI: 1\n"
    "EnablePCIeGen3: 0\n"
    "MemoryPoolSize: 0\n"
    "KMallocHeapMaxSize: 0\n"
    "VMallocHeapMaxSize: 0\n"
    "IgnoreMMIOCheck: 0\n"
    "TCEBypassMode: 0\n"
    "EnableStreamMemOPs: 0\n"
    "EnableUserNUMAManagement: 1\n"
    "NvLinkDisable: 0\n"
    "RmProfilingAdminOnly: 1\n"
    "PreserveVideoMemoryAllocations: 0\n"
    "EnableS0ixPowerManagement: 0\n"
    "S0ixPowerManagementVideoMemoryThreshold: 256\n"
    "DynamicPowerManagement: 3\n"
    "DynamicPowerManagementVideoMemoryThreshold: 200\n"
    "RegisterPCIDriver: 1\n"
    "EnablePCIERelaxedOrderingMode: 0\n"
    "EnableResizableBar: 0\n"
    "EnableGpuFirmware: 18\n"
    "EnableGpuFirmwareLogs: 2\n"
    "RmNvlinkBandwidthLinkCount: 0\n"
    "EnableDbgBreakpoint: 0\n"
    "OpenRmEnableUnsupportedGpus: 1\n"
    "DmaRemapPeerMmio: 1\n"
    "ImexChannelCount: 2048\n"
    "CreateImexChannel0: 0\n"
    "GrdmaPciTopoCheckOverride: 0\n"
    "RegistryDwords: \"\"\n"
    "RegistryDwordsPerDevice: \"\"\n"
    "RmMsg: \"\"\n"
    "GpuBlacklist: \"\"\n"
    "TemporaryFilePath: \"/var/tmp\"\n"
    "ExcludedGpus: \"\"\n";

TEST(DriverParams, RealFile) {
  const auto params = parse_driver_params(k_params_550);
  ASSERT_TRUE(params) << params.error().message;
  EXPECT_EQ(params->values.size(), 42u);
  EXPECT_TRUE(params->modify_device_files());
  EXPECT_EQ(params->device_file_uid(), 0u);
  EXPECT_EQ(params->device_file_gid(), 0u);
  EXPECT_EQ(params->device_file_mode(), 0666u);
  EXPECT_EQ(params->number("ImexChannelCount"), 2048u);
  EXPECT_EQ(params->number("ResmanDebugLevel"), 4294967295u);
  EXPECT_EQ(params->values.at("RegistryDwords"), "");
  EXPECT_EQ(params->values.at("TemporaryFilePath"), "/var/tmp");
  EXPECT_EQ(params->number("TemporaryFilePath"), std::nullopt);
  EXPECT_EQ(params->number("NoSuchParam"), std::nullopt);
}

TEST(DriverParams, RestrictedDeviceFiles) {
  const auto params = parse_driver_params(
      "ModifyDeviceFiles: 0\nDeviceFileUID: 1000\nDeviceFileGID: 44\nDeviceFileMode: 432\n"
      "RegistryDwords: \"RMUseSwI2c=0x01;RMI2cSpeed=100\"\n");
  ASSERT_TRUE(params) << params.error().message;
  EXPECT_FALSE(params->modify_device_files());
  EXPECT_EQ(params->device_file_uid(), 1000u);
  EXPECT_EQ(params->device_file_gid(), 44u);
  EXPECT_EQ(params->device_file_mode(), 0660u);
  EXPECT_EQ(params->values.at("RegistryDwords"), "RMUseSwI2c=0x01;RMI2cSpeed=100");
}

TEST(DriverParams, AbsentDeviceFileParamsTakeTheDriverDefaults) {
  const auto params = parse_driver_params("");
  ASSERT_TRUE(params) << params.error().message;
  EXPECT_TRUE(params->modify_device_files());
  EXPECT_EQ(params->device_file_uid(), 0u);
  EXPECT_EQ(params->device_file_gid(), 0u);
  EXPECT_EQ(params->device_file_mode(), 0666u);
}

TEST(DriverParams, UnknownValueShapesAreKeptVerbatim) {
  const auto params = parse_driver_params("FutureParam: -1\nOther: a \"b\" c\nQuoted: \"a \"b\" c\"\n");
  ASSERT_TRUE(params) << params.error().message;
  EXPECT_EQ(params->values.at("FutureParam"), "-1");
  EXPECT_EQ(params->number("FutureParam"), std::nullopt);
  EXPECT_EQ(params->values.at("Other"), "a \"b\" c");
  EXPECT_EQ(params->values.at("Quoted"), "a \"b\" c");
}

std::string error_of(std::string_view text) {
  const auto result = parse_driver_params(text);
  return result ? "(parsed)" : result.error().message;
}

TEST(DriverParams, ErrorsCarryTheLine) {
  EXPECT_EQ(error_of("EnableMSI: 1\nno colon here\n"),
            "driver params: line 2: expected \"Key: value\", got \"no colon here\"");
  EXPECT_EQ(error_of("EnableMSI: 1\nEnableMSI: 0\n"), "driver params: line 2: duplicate \"EnableMSI:\"");
  EXPECT_EQ(error_of("RmMsg: \"unterminated\n"),
            "driver params: line 1: RmMsg: unterminated string \"\\\"unterminated\"");
  EXPECT_EQ(error_of("RmMsg: \"\n"), "driver params: line 1: RmMsg: unterminated string \"\\\"\"");
  EXPECT_EQ(error_of("ModifyDeviceFiles: 2\n"),
            "driver params: line 1: ModifyDeviceFiles: expected a decimal number from 0 to 1, got \"2\"");
  EXPECT_EQ(error_of("DeviceFileMode: 4096\n"),
            "driver params: line 1: DeviceFileMode: expected a decimal number from 0 to 4095, got \"4096\"");
  EXPECT_EQ(error_of("DeviceFileMode: \"438x\"\n"),
            "driver params: line 1: DeviceFileMode: expected a decimal number from 0 to 4095, got "
            "\"\\\"438x\\\"\"");
  EXPECT_EQ(error_of("\n\nDeviceFileUID: 4294967296\n"),
            "driver params: line 3: DeviceFileUID: expected a decimal number from 0 to 4294967295, got "
            "\"4294967296\"");
  EXPECT_EQ(error_of("DeviceFileGID: \n"),
            "driver params: line 1: DeviceFileGID: expected a decimal number from 0 to 4294967295, got \"\"");
}

}  // namespace
}  // namespace gpuctk::discover
