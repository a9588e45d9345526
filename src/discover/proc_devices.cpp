#include "discover/proc_devices.hpp"

#include <vector>

#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

constexpr std::string_view k_context = "/proc/devices";
constexpr std::string_view k_char_header = "Character devices:";
constexpr std::string_view k_block_header = "Block devices:";

std::unexpected<Error> line_error(size_t line, const std::string& message) {
  return fail(std::string(k_context) + ": line " + std::to_string(line) + ": " + message);
}

}  // namespace

std::optional<uint32_t> CharDevices::major(std::string_view name) const {
  const auto it = majors.find(name);
  return it == majors.end() ? std::nullopt : std::optional(it->second);
}

std::optional<uint32_t> CharDevices::nvidia_gpu_major() const {
  for (const auto name : {k_nvidia, k_nvidia_frontend}) {
    if (const auto found = major(name)) {
      return found;
    }
  }
  return std::nullopt;
}

Result<CharDevices> parse_proc_devices(std::string_view text) {
  CharDevices devices;
  bool in_char_section = false;
  const auto lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto line = trim(lines[i]);
    if (line.empty()) {
      continue;
    }
    if (line == k_char_header) {
      in_char_section = true;
      continue;
    }
    if (line == k_block_header) {
      break;
    }
    if (!in_char_section) {
      return line_error(i + 1, "expected \"" + std::string(k_char_header) + "\", got " + quote(line));
    }
    const auto space = line.find_first_of(" \t");
    const auto major = parse_u32(line.substr(0, space));
    const auto name = space == std::string_view::npos ? std::string_view() : trim(line.substr(space));
    if (!major || name.empty()) {
      return line_error(i + 1, "expected \"<major> <name>\", got " + quote(line));
    }
    const auto [it, inserted] = devices.majors.emplace(std::string(name), *major);
    if (!inserted) {
      return line_error(i + 1, quote(name) + " listed twice (majors " + std::to_string(it->second) + " and " +
                                   std::to_string(*major) + ")");
    }
  }
  if (!in_char_section) {
    return fail(std::string(k_context) + ": no \"" + std::string(k_char_header) + "\" section");
  }
  return devices;
}

}  // namespace gpuctk::discover
