#include "cdi/version.hpp"

#include <algorithm>
#include <array>

#include "cdi/names.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

constexpr std::array k_known_versions{
    Version{0, 3, 0},  // first tagged spec
    Version{0, 4, 0},  // mount `type`
    Version{0, 5, 0},  // deviceNode `hostPath`; device names may start with a digit
    Version{0, 6, 0},  // annotations; "." in the class
    Version{0, 7, 0},  // intelRdt, additionalGids
    Version{0, 8, 0},  // Go API only
    Version{1, 0, 0},  // Go API only
    Version{1, 1, 0},  // netDevices; intelRdt schemata/enableMonitoring (enableCMT/enableMBM dropped)
};

// Keeps the highest version needed so far and the first field that needed it.
class Tracker {
 public:
  // Records that `where` + `suffix` needs `version`; builds the string only when it matters.
  void need(const Version& version, std::string_view where, std::string_view suffix = {}) {
    if (version > m_best.version) {
      m_best.version = version;
      m_best.trigger.assign(where).append(suffix);
    }
  }
  [[nodiscard]] Requirement result() && { return std::move(m_best); }

 private:
  Requirement m_best;
};

void walk_edits(const ContainerEdits& edits, const std::string& where, Tracker& tracker) {
  for (size_t i = 0; i < edits.mounts.size(); ++i) {
    if (!edits.mounts[i].type.empty()) {
      tracker.need({0, 4, 0}, where, ".mounts[" + std::to_string(i) + "].type");
    }
  }
  for (size_t i = 0; i < edits.device_nodes.size(); ++i) {
    if (!edits.device_nodes[i].host_path.empty()) {
      tracker.need({0, 5, 0}, where, ".deviceNodes[" + std::to_string(i) + "].hostPath");
    }
  }
  if (edits.intel_rdt) {
    tracker.need({0, 7, 0}, where, ".intelRdt");
    if (edits.intel_rdt->schemata) {
      tracker.need({1, 1, 0}, where, ".intelRdt.schemata");
    }
    if (edits.intel_rdt->enable_monitoring) {
      tracker.need({1, 1, 0}, where, ".intelRdt.enableMonitoring");
    }
  }
  if (!edits.additional_gids.empty()) {
    tracker.need({0, 7, 0}, where, ".additionalGids");
  }
  if (!edits.net_devices.empty()) {
    tracker.need({1, 1, 0}, where, ".netDevices");
  }
}

// Small fixed-size decimal: digits only, "0" or no leading zero, at most 9 digits (fits int).
std::optional<int> parse_component(std::string_view text) {
  if (text.empty() || text.size() > 9 || (text.size() > 1 && text.front() == '0')) {
    return std::nullopt;
  }
  const auto value = parse_unsigned(text);
  if (!value) {
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

}  // namespace

std::string Version::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::span<const Version> known_versions() {
  return k_known_versions;
}

std::optional<Version> parse_version(std::string_view text) {
  if (text.starts_with('v')) {
    text.remove_prefix(1);
  }
  const auto parts = split(text, '.');
  if (parts.size() != 3) {
    return std::nullopt;
  }
  const auto major = parse_component(parts[0]);
  const auto minor = parse_component(parts[1]);
  const auto patch = parse_component(parts[2]);
  if (!major || !minor || !patch) {
    return std::nullopt;
  }
  return Version{*major, *minor, *patch};
}

bool is_known_version(const Version& version) {
  return std::ranges::find(k_known_versions, version) != k_known_versions.end();
}

Requirement minimum_version(const Spec& spec) {
  Tracker tracker;
  if (split_kind(spec.kind).second.find('.') != std::string_view::npos) {
    tracker.need({0, 6, 0}, "kind", R"( (class contains "."))");
  }
  if (!spec.annotations.empty()) {
    tracker.need({0, 6, 0}, "annotations");
  }
  walk_edits(spec.container_edits, "containerEdits", tracker);
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const Device& device = spec.devices[i];
    const std::string where = "devices[" + std::to_string(i) + "]";
    if (!device.name.empty() && device.name.front() >= '0' && device.name.front() <= '9') {
      tracker.need({0, 5, 0}, where, ".name (starts with a digit)");
    }
    if (!device.annotations.empty()) {
      tracker.need({0, 6, 0}, where, ".annotations");
    }
    walk_edits(device.container_edits, where + ".containerEdits", tracker);
  }
  return std::move(tracker).result();
}

}  // namespace gpuctk::cdi
