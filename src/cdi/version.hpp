#pragma once
// CDI spec versions and the lowest version a spec's content needs.
//
// Old runtimes refuse versions newer than their library, and (from library v0.5.4 on) refuse a spec
// whose content needs a newer version than it declares. A generator therefore declares exactly
// minimum_version(spec); `cdi validate` rejects a declared version below it.

#include <compare>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cdi/spec.hpp"

namespace gpuctk::cdi {

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;

  // "1.0.0" (no leading "v").
  [[nodiscard]] std::string str() const;

  auto operator<=>(const Version&) const = default;
};

// The first tagged spec version; nothing older is accepted.
inline constexpr Version k_lowest_version{0, 3, 0};
// The newest version this toolkit knows.
inline constexpr Version k_highest_version{1, 1, 0};

// Every released spec version, oldest first.
std::span<const Version> known_versions();

// "X.Y.Z" or "vX.Y.Z" (decimal, no signs, no leading zeros but "0"); nothing for anything else.
// Does not check that the version is known.
std::optional<Version> parse_version(std::string_view text);

// True when `version` is one of known_versions().
[[nodiscard]] bool is_known_version(const Version& version);

// The lowest version a spec's content needs, and what needs it.
struct Requirement {
  Version version = k_lowest_version;
  // Where in the spec the first field needing `version` is, e.g.
  // "devices[0].containerEdits.deviceNodes[0].hostPath" or "devices[1].name (starts with a digit)";
  // empty when nothing needs more than k_lowest_version.
  std::string trigger;

  bool operator==(const Requirement&) const = default;
};

// The minimum cdiVersion for `spec` (the reference's MinimumRequiredVersion):
//   mount `type` non-empty                                          -> 0.4.0
//   deviceNode `hostPath` non-empty, device name starting with a digit -> 0.5.0
//   annotations non-empty (spec or device), "." in the kind's class  -> 0.6.0
//   intelRdt present (even empty), additionalGids non-empty          -> 0.7.0
//   netDevices non-empty, intelRdt.schemata present (even empty),
//   intelRdt.enableMonitoring true                                  -> 1.1.0
// Empty-but-present keys do not count (the model cannot even hold them, except as noted).
// Among triggers for the highest version, the first in spec order is named: kind, spec annotations,
// spec edits, then each device's name, annotations and edits.
Requirement minimum_version(const Spec& spec);

}  // namespace gpuctk::cdi
