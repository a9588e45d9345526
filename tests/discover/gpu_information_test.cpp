#include "discover/gpu_information.hpp"

#include <gtest/gtest.h>

namespace gpuctk::discover {
namespace {

// As the driver prints them (nv-procfs.c: "Key: \t value", tabs and spaces exactly so).
constexpr std::string_view k_a100_470 =
    "Model: \t\t NVIDIA A100-SXM4-40GB\n"
    "IRQ:   \t\t 132\n"
    "GPU UUID: \t GPU-6c1e9b1c-8f0e-4ac1-a8b5-0c4d7a2f3e91\n"
    "Video BIOS: \t 92.00.19.00.01\n"
    "Bus Type: \t PCIe\n"
    "DMA Size: \t 47 bits\n"
    "DMA Mask: \t 0x7fffffffffff\n"
    "Bus Location: \t 0000:07:00.0\n"
    "Device Minor: \t 0\n"
    "GPU Excluded:\t No\n";
constexpr std::string_view k_h100_550 =
    "Model: \t\t NVIDIA H100 80GB HBM3\n"
    "IRQ:   \t\t 0\n"
    "GPU UUID: \t GPU-4F2A9C3E-11D0-B7E4-5A6B-7C8D9E0F1A2B\n"
    "Video BIOS: \t 96.00.74.00.0D\n"
    "Bus Type: \t PCIe\n"
    "DMA Size: \t 52 bits\n"
    "DMA Mask: \t 0xfffffffffffff\n"
    "Bus Location: \t 0000:CB:00.0\n"
    "Device Minor: \t 7\n"
    "GPU Firmware: \t 550.54.15\n"
    "GPU Excluded:\t No\n";
// A GPU the driver has not initialised (no persistence mode, or RmInitAdapter failed).
constexpr std::string_view k_uninitialised_k80 =
    "Model: \t\t Tesla K80\n"
    "IRQ:   \t\t 39\n"
    "GPU UUID: \t GPU-????????"
    "-????"
    "-????"
    "-????"
    "-????????????\n"  // split: no trigraphs
    "Video BIOS: \t ??.??.??.??.??\n"
    "Bus Type: \t PCIe\n"
    "DMA Size: \t 36 bits\n"
    "DMA Mask: \t 0xfffffffff\n"
    "Bus Location: \t 0000:03:00.0\n"
    "Device Minor: \t 1\n"
    "Blacklisted:\t No\n";

GpuInformation parsed(std::string_view text) {
  const auto result = parse_gpu_information(text);
  EXPECT_TRUE(result) << result.error().message;
  return result.value_or(GpuInformation{});
}

std::string error_of(std::string_view text) {
  const auto result = parse_gpu_information(text);
  return result ? "(parsed)" : result.error().message;
}

TEST(GpuInformation, A100WithoutFirmwareLine) {
  EXPECT_EQ(parsed(k_a100_470), (GpuInformation{.model = "NVIDIA A100-SXM4-40GB",
                                                .uuid = "GPU-6c1e9b1c-8f0e-4ac1-a8b5-0c4d7a2f3e91",
                                                .bus_location = "0000:07:00.0",
                                                .minor = 0,
                                                .firmware = std::nullopt,
                                                .excluded = false}));
}

TEST(GpuInformation, H100WithGspFirmwareAndUpperCaseBusId) {
  EXPECT_EQ(parsed(k_h100_550), (GpuInformation{.model = "NVIDIA H100 80GB HBM3",
                                                .uuid = "GPU-4F2A9C3E-11D0-B7E4-5A6B-7C8D9E0F1A2B",
                                                .bus_location = "0000:cb:00.0",
                                                .minor = 7,
                                                .firmware = "550.54.15",
                                                .excluded = false}));
}

TEST(GpuInformation, UninitialisedGpuHasNoUuid) {
  const auto info = parsed(k_uninitialised_k80);
  EXPECT_EQ(info.uuid, std::nullopt);
  EXPECT_EQ(info.model, "Tesla K80");
  EXPECT_EQ(info.minor, 1u);
  EXPECT_FALSE(info.excluded);
}

TEST(GpuInformation, UuidLineMayBeAbsent) {
  EXPECT_EQ(parsed("Model: \t\t X\nBus Location: \t 0000:01:00.0\nDevice Minor: \t 3\n").uuid, std::nullopt);
}

TEST(GpuInformation, FirmwareNotApplicableIsNothing) {
  const std::string text = std::string(k_a100_470) + "GPU Firmware: \t N/A\n";
  EXPECT_EQ(parsed(text).firmware, std::nullopt);
}

TEST(GpuInformation, ExcludedUnderBothNames) {
  std::string text(k_a100_470);
  text.replace(text.find("GPU Excluded:\t No"), 17, "GPU Excluded:\t Yes");
  EXPECT_TRUE(parsed(text).excluded);
  std::string old(k_uninitialised_k80);
  old.replace(old.find("Blacklisted:\t No"), 16, "Blacklisted:\t Yes");
  EXPECT_TRUE(parsed(old).excluded);
}

TEST(GpuInformation, DebugBarLinesAndCrlfAreIgnored) {
  std::string text(k_h100_550);
  text += "BAR0: \t\t 0xd8000000 (16MB)\r\nBAR1: \t\t 0x38000000000 (131072MB)\r\n";
  EXPECT_EQ(parsed(text).minor, 7u);
}

TEST(GpuInformation, MissingRequiredFieldsAreNamed) {
  const auto without = [](std::string_view key) {
    std::string text(k_a100_470);
    const auto at = text.find(key);
    text.erase(at, text.find('\n', at) + 1 - at);
    return text;
  };
  EXPECT_EQ(error_of(without("Model:")), "gpu information: missing \"Model:\"");
  EXPECT_EQ(error_of(without("Bus Location:")), "gpu information: missing \"Bus Location:\"");
  EXPECT_EQ(error_of(without("Device Minor:")), "gpu information: missing \"Device Minor:\"");
  EXPECT_EQ(error_of(""), "gpu information: missing \"Model:\"");
  EXPECT_EQ(error_of("Model: \t\t \nBus Location: \t 0000:01:00.0\nDevice Minor: \t 3\n"),
            "gpu information: missing \"Model:\"");
}

TEST(GpuInformation, InvalidFieldsAreNamed) {
  const auto with = [](std::string_view key, std::string_view value) {
    std::string text(k_a100_470);
    const auto at = text.find(key);
    const auto end = text.find('\n', at);
    text.replace(at, end - at, std::string(key) + " \t " + std::string(value));
    return text;
  };
  EXPECT_EQ(error_of(with("Device Minor:", "-1")),
            "gpu information: Device Minor: expected a decimal number, got \"-1\"");
  EXPECT_EQ(error_of(with("Device Minor:", "4294967296")),
            "gpu information: Device Minor: expected a decimal number, got \"4294967296\"");
  EXPECT_EQ(error_of(with("Device Minor:", "0x1")),
            "gpu information: Device Minor: expected a decimal number, got \"0x1\"");
  EXPECT_EQ(
      error_of(with("Bus Location:", "07:00")),
      "gpu information: Bus Location: invalid PCI bus id \"07:00\": expected device.function after the bus");
  EXPECT_EQ(error_of(with("GPU UUID:", "6c1e9b1c-8f0e-4ac1-a8b5-0c4d7a2f3e91")),
            "gpu information: GPU UUID: expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, got "
            "\"6c1e9b1c-8f0e-4ac1-a8b5-0c4d7a2f3e91\"");
  EXPECT_EQ(error_of(with("GPU UUID:", "GPU-6c1e9b1c-8f0e-4ac1-a8b5-0c4d7a2f3e9")),
            "gpu information: GPU UUID: expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, got "
            "\"GPU-6c1e9b1c-8f0e-4ac1-a8b5-0c4d7a2f3e9\"");
  EXPECT_EQ(error_of(with("GPU UUID:", "GPU-6c1e9b1c-8f0e-4ac1-a8b5?0c4d7a2f3e91")),
            "gpu information: GPU UUID: expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, got "
            "\"GPU-6c1e9b1c-8f0e-4ac1-a8b5?0c4d7a2f3e91\"");
  EXPECT_EQ(error_of(with("GPU Excluded:", "maybe")),
            "gpu information: GPU Excluded: expected Yes or No, got \"maybe\"");
}

TEST(GpuInformation, MalformedLinesCarryTheirNumber) {
  std::string duplicate = std::string(k_a100_470) + "Model: \t\t other\n";
  EXPECT_EQ(error_of(duplicate), "gpu information: line 11: duplicate \"Model:\"");
  std::string no_colon(k_a100_470);
  no_colon.insert(no_colon.find("Bus Type"), "garbage line\n");
  EXPECT_EQ(error_of(no_colon), "gpu information: line 5: expected \"Key: value\", got \"garbage line\"");
  EXPECT_EQ(error_of(": value\n"), "gpu information: line 1: expected \"Key: value\", got \": value\"");
}

}  // namespace
}  // namespace gpuctk::discover
