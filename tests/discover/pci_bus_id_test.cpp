#include "discover/pci_bus_id.hpp"

#include <gtest/gtest.h>

namespace gpuctk::discover {
namespace {

std::string normalised(std::string_view text) {
  const auto result = parse_pci_bus_id(text);
  return result ? *result : "error: " + result.error().message;
}

TEST(PciBusId, NormalisesEverySpellingToTheSysfsForm) {
  EXPECT_EQ(normalised("00000000:07:00.0"), "0000:07:00.0");  // NVML busId
  EXPECT_EQ(normalised("0000:07:00.0"), "0000:07:00.0");      // sysfs, /proc/driver/nvidia/gpus
  EXPECT_EQ(normalised("07:00.0"), "0000:07:00.0");           // lspci without -D
  EXPECT_EQ(normalised("00000000:B1:00.0"), "0000:b1:00.0");  // NVML prints upper case
  EXPECT_EQ(normalised("0000:Ca:1F.7"), "0000:ca:1f.7");
  EXPECT_EQ(normalised("0001:00:1e.1"), "0001:00:1e.1");
}

TEST(PciBusId, WideDomainsKeepTheirDigits) {
  EXPECT_EQ(normalised("00010000:e1:00.0"), "10000:e1:00.0");  // Intel VMD domain as NVML prints it
  EXPECT_EQ(normalised("10000:E1:00.0"), "10000:e1:00.0");     // ... and as sysfs does
  EXPECT_EQ(normalised("FFFFFFFF:ff:1f.7"), "ffffffff:ff:1f.7");
  EXPECT_EQ(normalised("1:07:00.0"), "0001:07:00.0");
}

TEST(PciBusId, RejectsMalformedIdsWithTheReason) {
  EXPECT_EQ(normalised(""),
            "error: invalid PCI bus id \"\": expected [domain:]bus:device.function, like 0000:07:00.0");
  EXPECT_EQ(normalised("0000:07:00"),
            "error: invalid PCI bus id \"0000:07:00\": expected device.function after the bus");
  EXPECT_EQ(normalised("0:0000:07:00.0"),
            "error: invalid PCI bus id \"0:0000:07:00.0\": expected [domain:]bus:device.function, like "
            "0000:07:00.0");
  EXPECT_EQ(normalised("000000000:07:00.0"),
            "error: invalid PCI bus id \"000000000:07:00.0\": domain must be 1 to 8 hex digits");
  EXPECT_EQ(normalised(":07:00.0"),
            "error: invalid PCI bus id \":07:00.0\": domain must be 1 to 8 hex digits");
  EXPECT_EQ(normalised("0000:7:00.0"), "error: invalid PCI bus id \"0000:7:00.0\": bus must be 2 hex digits");
  EXPECT_EQ(normalised("0000:g7:00.0"),
            "error: invalid PCI bus id \"0000:g7:00.0\": bus must be 2 hex digits");
  EXPECT_EQ(normalised("0000:07:20.0"),
            "error: invalid PCI bus id \"0000:07:20.0\": device must be 2 hex digits, at most 1f");
  EXPECT_EQ(normalised("0000:07:0.0"),
            "error: invalid PCI bus id \"0000:07:0.0\": device must be 2 hex digits, at most 1f");
  EXPECT_EQ(normalised("0000:07:00.8"),
            "error: invalid PCI bus id \"0000:07:00.8\": function must be 1 digit, 0 to 7");
  EXPECT_EQ(normalised("0000:07:00."),
            "error: invalid PCI bus id \"0000:07:00.\": function must be 1 digit, 0 to 7");
  EXPECT_EQ(normalised("0000:07:00.00"),
            "error: invalid PCI bus id \"0000:07:00.00\": function must be 1 digit, 0 to 7");
  EXPECT_EQ(normalised(" 0000:07:00.0"),
            "error: invalid PCI bus id \" 0000:07:00.0\": domain must be 1 to 8 hex digits");
  EXPECT_EQ(normalised("0000:07:00.0\n"),
            "error: invalid PCI bus id \"0000:07:00.0\\n\": function must be 1 digit, 0 to 7");
}

}  // namespace
}  // namespace gpuctk::discover
