#include "steps/cuda_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>

#include "util/strings.hpp"

namespace gpuctk::steps {

namespace {

constexpr std::string_view k_library_prefix = "libcuda.so.";

// The longest version string read (Masterminds' MaxVersionLen).
constexpr size_t k_max_version_size = 256;

// A version as Masterminds' semver reads it (see use_cuda_compat); metadata plays no part in comparing.
struct Version {
  uint64_t major = 0, minor = 0, patch = 0;
  std::string_view prerelease;  // "" when none
};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Whether `text` is dot-separated identifiers of ASCII letters, digits and '-', none of them empty.
bool is_identifiers(std::string_view text) {
  return std::ranges::all_of(split(text, '.'), [](std::string_view part) {
    return !part.empty() && std::ranges::all_of(part, [](char c) {
      return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
    });
  });
}

// The version `text` spells, or nothing (an unknown version).
std::optional<Version> parse_version(std::string_view text) {
  if (text.size() > k_max_version_size) {
    return std::nullopt;
  }
  if (text.starts_with('v')) {
    text.remove_prefix(1);
  }
  Version version;
  uint64_t* const numbers[] = {&version.major, &version.minor, &version.patch};
  for (size_t i = 0; i < std::size(numbers); ++i) {
    if (i > 0) {
      if (text.size() < 2 || text[0] != '.' || !is_digit(text[1])) {
        break;  // minor and patch are optional
      }
      text.remove_prefix(1);
    }
    const size_t digits = static_cast<size_t>(std::ranges::find_if_not(text, is_digit) - text.begin());
    const auto value = parse_unsigned(text.substr(0, digits));  // nothing when empty or over 64 bits
    if (!value) {
      return std::nullopt;
    }
    *numbers[i] = *value;
    text.remove_prefix(digits);
  }
  if (text.starts_with('-')) {
    const size_t end = std::min(text.find('+'), text.size());
    version.prerelease = text.substr(1, end - 1);
    text.remove_prefix(end);
    if (!is_identifiers(version.prerelease)) {
      return std::nullopt;
    }
    // A numeric identifier has no leading zero.
    for (const auto part : split(version.prerelease, '.')) {
      if (part.size() > 1 && part.front() == '0' && std::ranges::all_of(part, is_digit)) {
        return std::nullopt;
      }
    }
  }
  if (text.starts_with('+')) {
    if (!is_identifiers(text.substr(1))) {
      return std::nullopt;
    }
    text = {};
  }
  if (!text.empty()) {
    return std::nullopt;
  }
  return version;
}

// <0, 0, >0 as identifier a of a prerelease sorts before, with, after b (a missing one is ""): numbers
// by value and before words, words by their bytes.
int compare_prerelease_part(std::string_view a, std::string_view b) {
  if (a == b) {
    return 0;
  }
  if (a.empty() || b.empty()) {
    return a.empty() ? -1 : 1;
  }
  const auto a_number = parse_unsigned(a);
  const auto b_number = parse_unsigned(b);
  if (a_number && b_number) {
    return *a_number > *b_number ? 1 : -1;
  }
  if (a_number || b_number) {
    return a_number ? -1 : 1;
  }
  return a > b ? 1 : -1;
}

// <0, 0, >0 as a is older than, the same as, newer than b.
int compare_versions(const Version& a, const Version& b) {
  const std::pair<uint64_t, uint64_t> numbers[] = {
      {a.major, b.major}, {a.minor, b.minor}, {a.patch, b.patch}};
  for (const auto& [x, y] : numbers) {
    if (x != y) {
      return x < y ? -1 : 1;
    }
  }
  if (a.prerelease.empty() || b.prerelease.empty()) {
    // No prerelease is newer than any; two without are equal.
    return static_cast<int>(a.prerelease.empty()) - static_cast<int>(b.prerelease.empty());
  }
  const auto a_parts = split(a.prerelease, '.');
  const auto b_parts = split(b.prerelease, '.');
  for (size_t i = 0; i < std::max(a_parts.size(), b_parts.size()); ++i) {
    const int order = compare_prerelease_part(i < a_parts.size() ? a_parts[i] : std::string_view(),
                                              i < b_parts.size() ? b_parts[i] : std::string_view());
    if (order != 0) {
      return order;
    }
  }
  return 0;
}

}  // namespace

std::vector<std::string> compat_libraries(const std::vector<std::string>& regular_file_names) {
  std::vector<std::string> libraries;
  for (const auto& name : regular_file_names) {
    // `libcuda.so.*.*`: a '*' matches anything, so the rest only needs a '.'.
    if (name.starts_with(k_library_prefix) &&
        std::string_view(name).substr(k_library_prefix.size()).find('.') != std::string_view::npos) {
      libraries.push_back(name);
    }
  }
  std::ranges::sort(libraries);
  return libraries;
}

std::string_view compat_library_version(std::string_view library_name) {
  return library_name.starts_with(k_library_prefix) ? library_name.substr(k_library_prefix.size())
                                                    : std::string_view();
}

bool use_cuda_compat(std::string_view compat_version, const std::optional<CudaCompatNote>& note,
                     const CudaCompatHost& host) {
  const auto compat = parse_version(compat_version);
  const auto host_driver = parse_version(host.driver_version);
  if (!note) {
    return host.cuda_version.empty() && compat && host_driver && compat->major > host_driver->major;
  }
  if (!compat || !host_driver) {
    const auto host_cuda = parse_version(host.cuda_version);
    const auto note_cuda = parse_version(note->cuda_version);
    return host_cuda && note_cuda && compare_versions(*note_cuda, *host_cuda) > 0;
  }
  // NVIDIA compares the list with the major converted to Go's int, which wraps above 2^63 - 1.
  const auto host_major = static_cast<int64_t>(host_driver->major);
  return std::ranges::find(note->driver_majors, host_major) != note->driver_majors.end() &&
         compare_versions(*compat, *host_driver) > 0;
}

}  // namespace gpuctk::steps
