#include "discover/nvidia_caps.hpp"

#include <array>
#include <limits>
#include <set>

#include "discover/key_value_lines.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

constexpr std::string_view k_mig_context = "mig-minors";
constexpr std::string_view k_cap_context = "capability file";

std::optional<uint32_t> parse_u32(std::string_view text) {
  const auto value = parse_unsigned(text);
  if (!value || *value > std::numeric_limits<uint32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(*value);
}

std::unexpected<Error> mig_line_error(size_t line, const std::string& message) {
  return fail(std::string(k_mig_context) + ": line " + std::to_string(line) + ": " + message);
}

// One key of a capability file and the largest value it may have. All are required; the order here is
// the order of the CapabilityFile fields.
struct CapabilityKey {
  std::string_view name;
  uint32_t max;
};

constexpr std::array k_capability_keys{
    CapabilityKey{"DeviceFileMinor", std::numeric_limits<uint32_t>::max()},  // minor of nvidia-cap<N>
    CapabilityKey{"DeviceFileMode", 07777},                                  // decimal permission bits
    CapabilityKey{"DeviceFileModify", 1},                                    // 0 or 1
};

}  // namespace

std::optional<uint32_t> MigMinors::minor(std::string_view name) const {
  const auto it = minors.find(name);
  return it == minors.end() ? std::nullopt : std::optional(it->second);
}

std::optional<uint32_t> MigMinors::config() const {
  return minor("config");
}

std::optional<uint32_t> MigMinors::monitor() const {
  return minor("monitor");
}

std::optional<uint32_t> MigMinors::gi_access(uint32_t gpu_minor, uint32_t gi) const {
  return minor("gpu" + std::to_string(gpu_minor) + "/gi" + std::to_string(gi) + "/access");
}

std::optional<uint32_t> MigMinors::ci_access(uint32_t gpu_minor, uint32_t gi, uint32_t ci) const {
  return minor("gpu" + std::to_string(gpu_minor) + "/gi" + std::to_string(gi) + "/ci" + std::to_string(ci) +
               "/access");
}

Result<MigMinors> parse_mig_minors(std::string_view text) {
  MigMinors out;
  const auto lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto line = trim(lines[i]);
    if (line.empty()) {
      continue;
    }
    const auto blank = line.find_first_of(" \t");
    const auto name = line.substr(0, blank);
    const auto minor = blank == std::string_view::npos ? std::nullopt : parse_u32(trim(line.substr(blank)));
    if (!minor) {
      return mig_line_error(i + 1, "expected \"<name> <minor>\", got " + quote(line));
    }
    if (!out.minors.emplace(std::string(name), *minor).second) {
      return mig_line_error(i + 1, quote(name) + " listed twice");
    }
  }
  return out;
}

Result<CapabilityFile> parse_capability_file(std::string_view text) {
  const auto lines = parse_key_value_lines(text);
  if (!lines) {
    return fail_with(k_cap_context, lines.error());
  }
  std::array<std::optional<uint32_t>, k_capability_keys.size()> values;
  std::set<std::string_view> seen;
  for (const auto& line : *lines) {
    if (!seen.insert(line.key).second) {
      return fail(std::string(k_cap_context) + ": line " + std::to_string(line.line) + ": duplicate \"" +
                  std::string(line.key) + ":\"");
    }
    for (size_t k = 0; k < k_capability_keys.size(); ++k) {
      if (line.key != k_capability_keys[k].name) {
        continue;
      }
      const auto value = parse_u32(line.value);
      if (!value || *value > k_capability_keys[k].max) {
        return fail(std::string(k_cap_context) + ": " + std::string(line.key) +
                    ": expected a decimal number from 0 to " + std::to_string(k_capability_keys[k].max) +
                    ", got " + quote(line.value));
      }
      values[k] = value;
    }
  }
  for (size_t k = 0; k < k_capability_keys.size(); ++k) {
    if (!values[k]) {
      return fail(std::string(k_cap_context) + ": missing \"" + std::string(k_capability_keys[k].name) +
                  ":\"");
    }
  }
  return CapabilityFile{.minor = *values[0], .mode = *values[1], .modify = *values[2] == 1};
}

std::string capability_device_path(uint32_t minor) {
  return "/dev/nvidia-caps/nvidia-cap" + std::to_string(minor);
}

}  // namespace gpuctk::discover
