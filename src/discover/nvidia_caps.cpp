#include "discover/nvidia_caps.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "discover/host_fs.hpp"
#include "discover/key_value_lines.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

constexpr std::string_view k_mig_context = "mig-minors";
constexpr std::string_view k_cap_context = "capability file";

std::unexpected<Error> mig_line_error(size_t line, const std::string& message) {
  return fail(std::string(k_mig_context) + ": line " + std::to_string(line) + ": " + message);
}

// A decimal number without sign or leading zeros ("0" itself is fine), read from the front of `text`,
// which is advanced past it. Written out by hand: mig-minors has 4322 lines, read on every generate.
std::optional<uint32_t> take_number(std::string_view& text) {
  size_t n = 0;
  uint64_t value = 0;
  for (; n < text.size() && text[n] >= '0' && text[n] <= '9' && n < 10; ++n) {
    value = value * 10 + static_cast<uint64_t>(text[n] - '0');
  }
  if (n == 0 || (n > 1 && text[0] == '0') || value > std::numeric_limits<uint32_t>::max() ||
      (n < text.size() && text[n] >= '0' && text[n] <= '9')) {
    return std::nullopt;
  }
  text.remove_prefix(n);
  return static_cast<uint32_t>(value);
}

constexpr bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

bool take(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) {
    return false;
  }
  text.remove_prefix(prefix.size());
  return true;
}

// The table key of an access capability name, "gpu<M>/gi<G>/access" or "gpu<M>/gi<G>/ci<C>/access"
// written canonically; nothing for any other name (which is then kept by name).
std::optional<uint64_t> parse_access_name(std::string_view name) {
  if (!take(name, "gpu")) {
    return std::nullopt;
  }
  const auto gpu = take_number(name);
  if (!gpu || !take(name, "/gi")) {
    return std::nullopt;
  }
  const auto gi = take_number(name);
  if (!gi) {
    return std::nullopt;
  }
  std::optional<uint32_t> ci;
  if (take(name, "/ci")) {
    ci = take_number(name);
    if (!ci) {
      return std::nullopt;
    }
  }
  if (name != "/access") {
    return std::nullopt;
  }
  return MigMinors::access_key(*gpu, *gi, ci);
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

std::optional<uint64_t> MigMinors::access_key(uint32_t gpu_minor, uint32_t gi, std::optional<uint32_t> ci) {
  if (gi > 0xffff || (ci && *ci >= 0xffff)) {
    return std::nullopt;
  }
  return (uint64_t{gpu_minor} << 32) | (uint64_t{gi} << 16) | (ci ? *ci + 1 : 0);
}

std::optional<uint32_t> MigMinors::find_access(std::optional<uint64_t> key) const {
  if (!key) {
    return std::nullopt;
  }
  const auto it = std::lower_bound(access.begin(), access.end(), *key,
                                   [](const auto& entry, uint64_t k) { return entry.first < k; });
  return it == access.end() || it->first != *key ? std::nullopt : std::optional(it->second);
}

std::optional<uint32_t> MigMinors::minor(std::string_view name) const {
  if (const auto key = parse_access_name(name)) {
    return find_access(key);
  }
  const auto it = named.find(name);
  return it == named.end() ? std::nullopt : std::optional(it->second);
}

std::optional<uint32_t> MigMinors::config() const {
  return minor("config");
}

std::optional<uint32_t> MigMinors::monitor() const {
  return minor("monitor");
}

std::optional<uint32_t> MigMinors::gi_access(uint32_t gpu_minor, uint32_t gi) const {
  return find_access(access_key(gpu_minor, gi, std::nullopt));
}

std::optional<uint32_t> MigMinors::ci_access(uint32_t gpu_minor, uint32_t gi, uint32_t ci) const {
  return find_access(access_key(gpu_minor, gi, ci));
}

Result<MigMinors> parse_mig_minors(std::string_view text) {
  MigMinors out;
  struct Pending {
    uint64_t key;
    uint32_t minor;
    size_t line;
    std::string_view name;
  };
  std::vector<Pending> access;
  access.reserve(text.size() / 20);  // "gpuM/giG/ciC/access N" lines are about 20 bytes
  bool sorted = true;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    const auto end = std::min(text.find('\n', start), text.size());
    const auto line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    // "<blanks><name><blanks><minor><blanks>", scanned once.
    size_t i = 0;
    while (i < line.size() && is_blank(line[i])) {
      ++i;
    }
    if (i == line.size()) {
      continue;
    }
    const size_t name_start = i;
    while (i < line.size() && !is_blank(line[i])) {
      ++i;
    }
    const auto name = line.substr(name_start, i - name_start);
    while (i < line.size() && is_blank(line[i])) {
      ++i;
    }
    auto rest = line.substr(i);
    std::optional<uint32_t> minor;
    if (!rest.empty()) {  // the minor: decimal, leading zeros allowed, then only blanks
      size_t digits = 0;
      uint64_t value = 0;
      while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && value <= UINT32_MAX) {
        value = value * 10 + static_cast<uint64_t>(rest[digits++] - '0');
      }
      size_t j = digits;
      while (j < rest.size() && is_blank(rest[j])) {
        ++j;
      }
      if (digits > 0 && j == rest.size() && value <= UINT32_MAX) {
        minor = static_cast<uint32_t>(value);
      }
    }
    if (!minor) {
      return mig_line_error(line_number, "expected \"<name> <minor>\", got " + quote(trim(line)));
    }
    if (const auto key = parse_access_name(name)) {
      sorted = sorted && (access.empty() || access.back().key < *key);
      access.push_back({*key, *minor, line_number, name});
    } else if (!out.named.emplace(std::string(name), *minor).second) {
      return mig_line_error(line_number, quote(name) + " listed twice");
    }
  }
  if (!sorted) {  // not the driver's order: sort, then a repeated key is a name given twice
    std::stable_sort(access.begin(), access.end(),
                     [](const auto& a, const auto& b) { return a.key < b.key; });
    for (size_t i = 1; i < access.size(); ++i) {
      if (access[i].key == access[i - 1].key) {
        return mig_line_error(access[i].line, quote(access[i].name) + " listed twice");
      }
    }
  }
  out.access.reserve(access.size());
  for (const auto& entry : access) {
    out.access.emplace_back(entry.key, entry.minor);
  }
  return out;
}

Result<MigMinors> read_mig_minors(const std::string& dev_root) {
  return read_parsed(under_root(dev_root, k_mig_minors_path), parse_mig_minors);
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
