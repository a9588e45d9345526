#pragma once
// The kernel module's parameters from /proc/driver/nvidia/params.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::discover {

struct DriverParams {
  // Name -> value as printed: numbers as their digits ("438"), strings without their quotes
  // (RegistryDwords: "" -> "").
  std::map<std::string, std::string, std::less<>> values;

  // The value of `name` if it is present and a decimal number.
  [[nodiscard]] std::optional<uint64_t> number(std::string_view name) const;

  // How the driver (and nvidia-modprobe) create /dev/nvidia* nodes. When a parameter is absent the
  // driver's default is returned: ModifyDeviceFiles 1, DeviceFileUID 0, DeviceFileGID 0,
  // DeviceFileMode 0666. parse_driver_params() has checked the ranges of those present.
  [[nodiscard]] bool modify_device_files() const;
  [[nodiscard]] uint32_t device_file_uid() const;
  [[nodiscard]] uint32_t device_file_gid() const;
  [[nodiscard]] uint32_t device_file_mode() const;  // permission bits, e.g. 0666 (printed as 438)
  bool operator==(const DriverParams&) const = default;
};

// Parses the params file: lines "Name: value", where value is a decimal number or a double-quoted
// string (the driver prints no escapes, so the string is everything between the first and the last
// quote). Blank lines are skipped. Errors start with "driver params: " and carry the line number: a
// line without ':', a name given twice, an unterminated quoted string, or an out-of-range
// ModifyDeviceFiles (0/1), DeviceFileUID / DeviceFileGID (32-bit), DeviceFileMode (<= 07777).
// Values of other parameters that are neither numbers nor quoted strings are kept verbatim.
Result<DriverParams> parse_driver_params(std::string_view text);

}  // namespace gpuctk::discover
