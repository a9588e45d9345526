#include "discover/driver_params.hpp"

#include <array>
#include <limits>

#include "discover/key_value_lines.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

constexpr std::string_view k_context = "driver params";

// A parameter that decides how device nodes are made: its name, largest valid value and default.
struct DeviceFileParam {
  std::string_view name;
  uint64_t max;
  uint32_t fallback;
};

constexpr DeviceFileParam k_modify_device_files{"ModifyDeviceFiles", 1, 1};  // may fix up /dev nodes
constexpr DeviceFileParam k_device_file_uid{"DeviceFileUID", std::numeric_limits<uint32_t>::max(), 0};
constexpr DeviceFileParam k_device_file_gid{"DeviceFileGID", std::numeric_limits<uint32_t>::max(), 0};
constexpr DeviceFileParam k_device_file_mode{"DeviceFileMode", 07777, 0666};  // printed in decimal
constexpr std::array k_device_file_params{k_modify_device_files, k_device_file_uid, k_device_file_gid,
                                          k_device_file_mode};

std::unexpected<Error> line_error(size_t line, const std::string& message) {
  return fail(std::string(k_context) + ": line " + std::to_string(line) + ": " + message);
}

uint32_t value_or_default(const DriverParams& params, const DeviceFileParam& param) {
  const auto value = params.number(param.name);
  return value ? static_cast<uint32_t>(*value) : param.fallback;
}

}  // namespace

std::optional<uint64_t> DriverParams::number(std::string_view name) const {
  const auto it = values.find(name);
  return it == values.end() ? std::nullopt : parse_unsigned(it->second);
}

bool DriverParams::modify_device_files() const {
  return value_or_default(*this, k_modify_device_files) == 1;
}

uint32_t DriverParams::device_file_uid() const {
  return value_or_default(*this, k_device_file_uid);
}

uint32_t DriverParams::device_file_gid() const {
  return value_or_default(*this, k_device_file_gid);
}

uint32_t DriverParams::device_file_mode() const {
  return value_or_default(*this, k_device_file_mode);
}

Result<DriverParams> parse_driver_params(std::string_view text) {
  const auto lines = parse_key_value_lines(text);
  if (!lines) {
    return fail_with(k_context, lines.error());
  }
  DriverParams params;
  for (const auto& line : *lines) {
    std::string_view value = line.value;
    if (value.starts_with('"')) {
      if (value.size() < 2 || !value.ends_with('"')) {
        return line_error(line.line, std::string(line.key) + ": unterminated string " + quote(value));
      }
      value = value.substr(1, value.size() - 2);
    }
    for (const auto& param : k_device_file_params) {
      if (line.key != param.name) {
        continue;
      }
      const auto number = parse_unsigned(value);
      if (!number || *number > param.max) {
        return line_error(line.line, std::string(line.key) + ": expected a decimal number from 0 to " +
                                         std::to_string(param.max) + ", got " + quote(line.value));
      }
    }
    if (!params.values.emplace(std::string(line.key), std::string(value)).second) {
      return line_error(line.line, "duplicate \"" + std::string(line.key) + ":\"");
    }
  }
  return params;
}

}  // namespace gpuctk::discover
