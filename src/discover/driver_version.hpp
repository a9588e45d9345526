#pragma once
// The kernel driver's identity from /proc/driver/nvidia/version.

#include <optional>
#include <string>
#include <string_view>

#include "discover/inventory.hpp"  // KernelModule
#include "util/error.hpp"

namespace gpuctk::discover {

struct DriverVersion {
  std::string version;  // "550.54.15" (3 components) or "390.157" (2 components on old branches)
  KernelModule kernel_module = KernelModule::proprietary;  // proprietary or open, never unknown
  bool operator==(const DriverVersion&) const = default;
};

// Parses the content of /proc/driver/nvidia/version. Only the "NVRM version:" line is read (the
// "GCC version:" line and anything else are ignored); it has one of the forms
//   NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024
//   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (...)  <date>
// (any architecture name). "Open Kernel Module" means the open GPU kernel modules; any other
// "Kernel Module" the proprietary one. The version is the token after "Kernel Module" (after
// "for <arch>" when present) and must be 2 or 3 dot-separated decimal numbers. Errors start with
// "driver version: " and say what was expected.
Result<DriverVersion> parse_driver_version(std::string_view text);

// The driver version a library file name carries after `stem`: ("libcuda.so.550.54.15", "libcuda.so.")
// -> "550.54.15". Nothing when the rest is not a driver version (2 or 3 dot-separated numbers), as for
// the SONAME "libcuda.so.1".
std::optional<std::string> library_driver_version(std::string_view file_name, std::string_view stem);

}  // namespace gpuctk::discover
