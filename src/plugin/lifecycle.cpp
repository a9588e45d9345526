#include "plugin/lifecycle.hpp"

#include <sys/inotify.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace gpuctk::plugin {

namespace {

std::string devices(size_t n) {
  return std::to_string(n) + (n == 1 ? " device" : " devices");
}

std::set<std::string> ids_of(const Resource& resource) {
  std::set<std::string> out;
  for (const auto& device : resource.devices) {
    out.insert(device.id);
  }
  return out;
}

// "8 -> 16 devices (16 new, 8 gone)"; "" when the IDs are the same.
std::string change_of(const Resource& before, const Resource& after) {
  const auto old_ids = ids_of(before);
  const auto new_ids = ids_of(after);
  if (old_ids == new_ids) {
    return {};
  }
  const auto fresh = std::ranges::count_if(new_ids, [&](const auto& id) { return !old_ids.contains(id); });
  const auto gone = std::ranges::count_if(old_ids, [&](const auto& id) { return !new_ids.contains(id); });
  return std::to_string(before.devices.size()) + " -> " + devices(after.devices.size()) + " (" +
         std::to_string(fresh) + " new, " + std::to_string(gone) + " gone)";
}

}  // namespace

std::chrono::seconds Backoff::next() {
  const auto now = m_next;
  m_next = std::min(m_next * 2, k_most);
  return now;
}

std::vector<std::string> inotify_names(std::span<const char> buffer) {
  std::vector<std::string> names;
  size_t at = 0;
  while (at + sizeof(inotify_event) <= buffer.size()) {
    inotify_event event{};
    std::memcpy(&event, buffer.data() + at, sizeof event);  // the buffer need not be aligned
    const size_t end = at + sizeof event + event.len;
    if (end > buffer.size()) {
      break;
    }
    if (event.len > 0) {
      // The name is NUL-padded to an alignment boundary.
      const std::string_view name(buffer.data() + at + sizeof event, event.len);
      names.emplace_back(name.substr(0, name.find('\0')));
    }
    at = end;
  }
  return names;
}

bool shared_through_mps(const Config& config, const Resource& resource) {
  return config.sharing == labels::SharingStrategy::mps &&
         std::ranges::any_of(resource.devices, [](const Device& d) { return d.replicas > 0; });
}

std::vector<std::string> resource_changes(const std::vector<Resource>& before,
                                          const std::vector<Resource>& after) {
  std::map<std::string, std::pair<const Resource*, const Resource*>> by_name;
  for (const auto& resource : before) {
    by_name[resource.name].first = &resource;
  }
  for (const auto& resource : after) {
    by_name[resource.name].second = &resource;
  }
  std::vector<std::string> lines;
  for (const auto& [name, pair] : by_name) {
    const auto [old_one, new_one] = pair;
    if (old_one == nullptr) {
      lines.push_back(name + ": new, " + devices(new_one->devices.size()));
    } else if (new_one == nullptr) {
      lines.push_back(name + ": gone (" + devices(old_one->devices.size()) + ")");
    } else if (auto change = change_of(*old_one, *new_one); !change.empty()) {
      lines.push_back(name + ": " + change);
    }
  }
  return lines;
}

Result<void> check_nvml_start(const Config& config, std::string_view nvml_error,
                              std::string_view version_file, bool driver_loaded) {
  if (config.discovery != discover::Mode::automatic || nvml_error.empty() || !driver_loaded) {
    return {};
  }
  return fail("NVML did not start: " + std::string(nvml_error) + "; the driver is loaded (" +
              std::string(version_file) +
              "), so the GPUs are not taken from /proc, where nothing would watch their health");
}

}  // namespace gpuctk::plugin
