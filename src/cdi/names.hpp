#pragma once
// CDI name syntax: the vendor and class of a spec's `kind`, device names, and qualified device names
// "vendor/class=name" (how runtimes, annotations and our hook request devices).
//
// Rules of the CDI library (pkg/parser/parser.go), with one deliberate extra: a one-character
// vendor or class is rejected, because every released CDI library up to v1.1.0 crashes on it.
// Version-dependent syntax (a "." in the class needs 0.6.0, a digit-first device name 0.5.0) is not
// checked here; cdi/version.hpp turns it into a minimum cdiVersion.

#include <string>
#include <string_view>
#include <utility>

#include "util/error.hpp"

namespace gpuctk::cdi {

// Success, or why `vendor` is not a valid vendor, e.g. `vendor "x-" must end with a letter or digit`.
// A vendor starts with a letter, continues with letters, digits, "_", "-", ".", ends with a letter
// or digit, and has at least two characters.
Result<void> check_vendor(std::string_view vendor);

// Like check_vendor, for the class part of a kind (same rules; "." is allowed).
Result<void> check_class(std::string_view klass);

// Success, or why `name` is not a valid device name. A device name starts with a letter or digit,
// continues with letters, digits, "_", "-", ".", ":", and ends with a letter or digit. One character
// is fine; there is no length limit.
Result<void> check_device_name(std::string_view name);

[[nodiscard]] inline bool is_valid_vendor(std::string_view vendor) {
  return check_vendor(vendor).has_value();
}
[[nodiscard]] inline bool is_valid_class(std::string_view klass) {
  return check_class(klass).has_value();
}
[[nodiscard]] inline bool is_valid_device_name(std::string_view name) {
  return check_device_name(name).has_value();
}

// `kind` split at its first "/" into {vendor, class}; {"", ""} when there is no "/".
std::pair<std::string_view, std::string_view> split_kind(std::string_view kind);

// A fully qualified device name, "vendor/class=name".
struct QualifiedName {
  std::string vendor{};
  std::string klass{};
  std::string name{};

  // "vendor/class" (a spec's kind).
  [[nodiscard]] std::string kind() const;
  // "vendor/class=name".
  [[nodiscard]] std::string str() const;

  bool operator==(const QualifiedName&) const = default;
};

// Parses "vendor/class=name": split at the first "=", the left side at its first "/"; every part
// must be valid. Errors quote the input: `invalid device name "nvidia.com/gpu": missing "="
// (want vendor/class=name)`. Globs are not names: "*" is an invalid character.
Result<QualifiedName> parse_qualified_name(std::string_view text);

}  // namespace gpuctk::cdi
