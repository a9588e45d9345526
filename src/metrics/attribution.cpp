#include "metrics/attribution.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <utility>

#include "util/strings.hpp"

namespace gpuctk::metrics {

namespace {

constexpr std::size_t k_max_name_bytes = 253;  // a DNS subdomain's limit, the longest Kubernetes name
constexpr std::string_view k_nvidia_prefix = "nvidia.com/";

// One kind of cut: how many things it left out and the first of them, described with untrusted text
// escaped.
struct Cut {
  std::size_t count = 0;
  std::string first;

  template <class Describe>
  void add(Describe&& describe, std::size_t things = 1) {
    if (count == 0) {
      first = std::forward<Describe>(describe)();
    }
    count += things;
  }
};

struct Cuts {
  Cut pods;
  Cut containers;
  Cut device_ids;
  Cut holders;
  Cut long_names;
  Cut foreign_ids;
};

std::string counted(std::size_t count, std::string_view one, std::string_view many) {
  return std::to_string(count) + " " + std::string(count == 1 ? one : many);
}

std::string pod_path(const ContainerDevices& entry) {
  return escape_for_log(entry.namespace_name) + "/" + escape_for_log(entry.pod);
}

std::string container_path(const ContainerDevices& entry) {
  return pod_path(entry) + "/" + escape_for_log(entry.container);
}

std::string long_name(std::string_view what, std::size_t size, const std::string& where) {
  return "a " + std::string(what) + " of " + std::to_string(size) + " bytes" + (where.empty() ? "" : " in ") +
         where;
}

// The entry's first name that is too long, described, or "" when every name fits.
std::string long_entry_name(const ContainerDevices& entry) {
  if (entry.namespace_name.size() > k_max_name_bytes) {
    return long_name("namespace", entry.namespace_name.size(), "");
  }
  if (entry.pod.size() > k_max_name_bytes) {
    return long_name("pod name", entry.pod.size(), "namespace " + escape_for_log(entry.namespace_name));
  }
  if (entry.container.size() > k_max_name_bytes) {
    return long_name("container name", entry.container.size(), pod_path(entry));
  }
  if (entry.resource_name.size() > k_max_name_bytes) {
    return long_name("resource name", entry.resource_name.size(), container_path(entry));
  }
  return {};
}

bool is_digits(std::string_view text) {
  return !text.empty() && std::ranges::all_of(text, [](char c) { return c >= '0' && c <= '9'; });
}

// The device UUID a device ID names ("GPU-…", "MIG-…", either with a replica's "::<n>"), or "".
std::string_view device_uuid(std::string_view id) {
  if (const auto replica = id.find("::"); replica != std::string_view::npos) {
    if (!is_digits(id.substr(replica + 2))) {
      return {};
    }
    id = id.substr(0, replica);
  }
  const bool known = id.starts_with("GPU-") || id.starts_with("MIG-");
  return known && id.size() > 4 ? id : std::string_view{};
}

using PodKey = std::pair<std::string_view, std::string_view>;  // namespace, pod

// What has been taken so far, for the bounds: pods, their containers, and each container's device IDs.
struct Taken {
  std::map<PodKey, std::map<std::string_view, std::size_t>> pods;  // container -> device IDs taken
  std::set<PodKey> cut_pods;
  std::set<std::pair<PodKey, std::string_view>> cut_containers;
};

// The count of device IDs the entry's container has taken, or nullptr when its pod or container is past
// the bounds (counted in `cuts`).
std::size_t* container_slot(const ContainerDevices& entry, Taken& taken, Cuts& cuts) {
  const PodKey key{entry.namespace_name, entry.pod};
  auto pod = taken.pods.find(key);
  if (pod == taken.pods.end()) {
    if (taken.pods.size() >= k_max_pods) {
      if (taken.cut_pods.insert(key).second) {
        cuts.pods.add([&] { return pod_path(entry); });
      }
      return nullptr;
    }
    pod = taken.pods.emplace(key, std::map<std::string_view, std::size_t>{}).first;
  }
  auto container = pod->second.find(entry.container);
  if (container == pod->second.end()) {
    if (pod->second.size() >= k_max_containers) {
      if (taken.cut_containers.emplace(key, entry.container).second) {
        cuts.containers.add([&] { return container_path(entry); });
      }
      return nullptr;
    }
    container = pod->second.emplace(entry.container, 0).first;
  }
  return &container->second;
}

void add_device_id(const ContainerDevices& entry, std::string_view id, Attribution& out, Cuts& cuts) {
  if (id.size() > k_max_name_bytes) {
    cuts.long_names.add([&] {
      return long_name("device ID", id.size(),
                       escape_for_log(entry.resource_name) + " of " + container_path(entry));
    });
    return;
  }
  const auto uuid = device_uuid(id);
  if (uuid.empty()) {
    cuts.foreign_ids.add([&] {
      return escape_for_log(quote(id)) + " of " + escape_for_log(entry.resource_name) + " in " +
             container_path(entry);
    });
    return;
  }
  out.holders[std::string(uuid)].push_back(Holder{entry.pod, entry.namespace_name, entry.container});
}

void add_entry(const ContainerDevices& entry, Taken& taken, Attribution& out, Cuts& cuts) {
  if (!entry.resource_name.starts_with(k_nvidia_prefix)) {
    return;  // another vendor's or a plain resource: not ours to attribute, not worth a warning
  }
  if (auto described = long_entry_name(entry); !described.empty()) {
    cuts.long_names.add([&] { return std::move(described); });
    return;
  }
  std::size_t* ids = container_slot(entry, taken, cuts);
  if (ids == nullptr) {
    return;
  }
  for (const auto& id : entry.device_ids) {
    if (*ids >= k_max_device_ids) {
      cuts.device_ids.add([&] { return container_path(entry); });
      continue;
    }
    ++*ids;
    add_device_id(entry, id, out, cuts);
  }
  if (entry.device_ids_not_copied != 0) {
    cuts.device_ids.add([&] { return container_path(entry); }, entry.device_ids_not_copied);
  }
}

// Holders sorted and unique (a container holding two replicas of one GPU holds it once), at most
// k_max_holders per device: the first in that order.
void settle_holders(Attribution& out, Cuts& cuts) {
  for (auto& [uuid, holders] : out.holders) {
    std::ranges::sort(holders);
    const auto [first, last] = std::ranges::unique(holders);
    holders.erase(first, last);
    if (holders.size() > k_max_holders) {
      cuts.holders.add([&] { return escape_for_log(uuid); }, holders.size() - k_max_holders);
      holders.resize(k_max_holders);
    }
  }
}

void add_warnings(const Cuts& cuts, std::vector<std::string>& warnings) {
  const std::array<std::pair<const Cut*, std::string>, 6> kinds = {{
      {&cuts.pods, " past the first 4096 left out (the first: "},
      {&cuts.containers, " past a pod's first 64 left out (the first: "},
      {&cuts.device_ids, " past a container's first 1024 left out (the first in "},
      {&cuts.holders, " past a device's first 64 left out (the first on "},
      {&cuts.long_names, " of more than 253 bytes left out (the first: "},
      {&cuts.foreign_ids, " without a GPU or MIG device UUID left out (the first: "},
  }};
  const std::array<std::pair<std::string_view, std::string_view>, 6> nouns = {{
      {"pod", "pods"},
      {"container", "containers"},
      {"device ID", "device IDs"},
      {"holder", "holders"},
      {"name", "names"},
      {"device ID", "device IDs"},
  }};
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const Cut& cut = *kinds[i].first;
    if (cut.count > 0) {
      warnings.push_back("pod-resources: " + counted(cut.count, nouns[i].first, nouns[i].second) +
                         kinds[i].second + cut.first + ")");
    }
  }
}

}  // namespace

Attribution attribute(const std::vector<ContainerDevices>& listed) {
  Attribution out;
  Cuts cuts;
  Taken taken;
  for (const auto& entry : listed) {
    add_entry(entry, taken, out, cuts);
  }
  settle_holders(out, cuts);
  add_warnings(cuts, out.warnings);
  return out;
}

void apply(const Attribution& attribution, Collection& collection) {
  for (auto& device : collection.devices) {
    const std::string& key = device.mig_uuid.empty() ? device.uuid : device.mig_uuid;
    const auto found = attribution.holders.find(key);
    if (found == attribution.holders.end()) {
      device.holders.clear();
    } else {
      device.holders = found->second;
    }
  }
}

}  // namespace gpuctk::metrics
