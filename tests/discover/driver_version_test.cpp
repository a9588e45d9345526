#include "discover/driver_version.hpp"

#include <gtest/gtest.h>

namespace gpuctk::discover {
namespace {

// Real /proc/driver/nvidia/version files (two lines each).
constexpr std::string_view k_proprietary_550 =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n";
constexpr std::string_view k_proprietary_aarch64 =
    "NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.183.01  Sun May 12 19:33:46 UTC 2024\n"
    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04) \n";
constexpr std::string_view k_open_580 =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
    "(dvs-builder@U16-I2-C01-5-1)  Thu Sep 25 18:23:56 UTC 2025\n"
    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04) \n";
constexpr std::string_view k_open_aarch64 =
    "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.133.20  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Wed Apr  9 14:38:47 UTC 2025\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n";
constexpr std::string_view k_proprietary_470 =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27 21:21:55 UTC 2021\n"
    "GCC version:  gcc version 9.3.0 (Ubuntu 9.3.0-17ubuntu1~20.04) \n";
constexpr std::string_view k_proprietary_390 =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.157  Wed Oct 12 09:19:07 UTC 2022\n"
    "GCC version:  gcc version 10.2.1 20210110 (Debian 10.2.1-6) \n";

DriverVersion parsed(std::string_view text) {
  const auto result = parse_driver_version(text);
  EXPECT_TRUE(result) << result.error().message;
  return result.value_or(DriverVersion{});
}

std::string error_of(std::string_view text) {
  const auto result = parse_driver_version(text);
  return result ? "(parsed " + result->version + ")" : result.error().message;
}

TEST(DriverVersion, ProprietaryModules) {
  EXPECT_EQ(parsed(k_proprietary_550), (DriverVersion{"550.54.15", KernelModule::proprietary}));
  EXPECT_EQ(parsed(k_proprietary_aarch64), (DriverVersion{"535.183.01", KernelModule::proprietary}));
  EXPECT_EQ(parsed(k_proprietary_470), (DriverVersion{"470.82.01", KernelModule::proprietary}));
  EXPECT_EQ(parsed(k_proprietary_390), (DriverVersion{"390.157", KernelModule::proprietary}));
}

TEST(DriverVersion, OpenModules) {
  EXPECT_EQ(parsed(k_open_580), (DriverVersion{"580.95.05", KernelModule::open}));
  EXPECT_EQ(parsed(k_open_aarch64), (DriverVersion{"570.133.20", KernelModule::open}));
}

TEST(DriverVersion, NvrmLineNeedNotBeFirstAndMayUseTabsAndCrlf) {
  EXPECT_EQ(
      parsed("GCC version:  gcc 12\r\nNVRM version:\tNVIDIA UNIX x86_64 Kernel Module\t550.54.15\tTue\r\n"),
      (DriverVersion{"550.54.15", KernelModule::proprietary}));
  EXPECT_EQ(parsed("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15"),
            (DriverVersion{"550.54.15", KernelModule::proprietary}));
}

TEST(DriverVersion, GarbageSaysWhatWasExpected) {
  EXPECT_EQ(error_of(""), "driver version: no \"NVRM version:\" line");
  EXPECT_EQ(error_of("GCC version:  gcc version 12.2.0\n"), "driver version: no \"NVRM version:\" line");
  EXPECT_EQ(
      error_of("NVRM version: something else 550.54.15\n"),
      "driver version: expected \"NVIDIA UNIX ... Kernel Module <version> ...\" after \"NVRM version:\", got "
      "\"something else 550.54.15\"");
  EXPECT_EQ(error_of("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"),
            "driver version: no version after \"Kernel Module\" in \"NVIDIA UNIX x86_64 Kernel Module\"");
  EXPECT_EQ(
      error_of("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n"),
      "driver version: no version after \"Kernel Module\" in \"NVIDIA UNIX Open Kernel Module for x86_64\"");
  EXPECT_EQ(error_of("NVRM version: NVIDIA UNIX x86_64 Kernel Module  Tue Mar  5 2024\n"),
            "driver version: expected a version like 550.54.15 after \"Kernel Module\", got \"Tue\"");
  EXPECT_EQ(error_of("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550\n"),
            "driver version: expected a version like 550.54.15 after \"Kernel Module\", got \"550\"");
  EXPECT_EQ(error_of("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15.1\n"),
            "driver version: expected a version like 550.54.15 after \"Kernel Module\", got \"550.54.15.1\"");
  EXPECT_EQ(error_of("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550..15\n"),
            "driver version: expected a version like 550.54.15 after \"Kernel Module\", got \"550..15\"");
  EXPECT_EQ(error_of("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.1a\n"),
            "driver version: expected a version like 550.54.15 after \"Kernel Module\", got \"550.54.1a\"");
}

TEST(LibraryDriverVersion, OnlyADriverVersionAfterTheStem) {
  EXPECT_EQ(library_driver_version("libcuda.so.550.54.15", "libcuda.so."), "550.54.15");
  EXPECT_EQ(library_driver_version("libcuda.so.390.157", "libcuda.so."), "390.157");
  EXPECT_EQ(library_driver_version("libcuda.so.1", "libcuda.so."), std::nullopt);  // the SONAME
  EXPECT_EQ(library_driver_version("libcuda.so.", "libcuda.so."), std::nullopt);
  EXPECT_EQ(library_driver_version("libcuda.so.550.54.15.bak", "libcuda.so."), std::nullopt);
  EXPECT_EQ(library_driver_version("libnvcuvid.so.550.54.15", "libcuda.so."), std::nullopt);
}

}  // namespace
}  // namespace gpuctk::discover
