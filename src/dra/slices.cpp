// ResourceSlice objects of the node's pool, field names as resource.k8s.io/v1's types.go spells them.
#include "dra/slices.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "util/strings.hpp"

namespace gpuctk::dra {

namespace {

using nlohmann::json;

constexpr size_t k_max_subdomain = 253;
constexpr size_t k_short_label = 40;  // room for "-<16 hex digits>-gpu" in a 63-character label

bool dns_subdomain(std::string_view name) {
  return !name.empty() && name.size() <= k_max_subdomain &&
         std::ranges::all_of(split(name, '.'),
                             [](std::string_view label) { return valid_device_name(label); });
}

std::string short_label(std::string_view node) {
  std::string label;
  for (const char c : node.substr(0, node.find('.'))) {
    const auto lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    label += (std::isalnum(static_cast<unsigned char>(lower)) != 0 || lower == '-') ? lower : '-';
  }
  label.resize(std::min(label.size(), k_short_label));
  while (!label.empty() && label.front() == '-') {
    label.erase(0, 1);
  }
  while (!label.empty() && label.back() == '-') {
    label.pop_back();
  }
  return label.empty() ? "node" : label;
}

json attribute_json(const Attribute& attribute) {
  switch (attribute.type) {
    case Attribute::Type::integer:
      return {{"int", std::stoll(attribute.value)}};
    case Attribute::Type::boolean:
      return {{"bool", attribute.value == "true"}};
    case Attribute::Type::version:
      return {{"version", attribute.value}};
    case Attribute::Type::string:
      break;
  }
  return {{"string", attribute.value}};
}

json taint_json(const Taint& taint) {
  json out{{"key", taint.key}, {"effect", taint.effect}};
  if (!taint.value.empty()) {
    out["value"] = taint.value;
  }
  if (!taint.time_added.empty()) {
    out["timeAdded"] = taint.time_added;
  }
  return out;
}

json device_json(const Device& device, const Taints& taints) {
  json out{{"name", device.name}};
  for (const auto& [name, attribute] : device.attributes) {
    out["attributes"][name] = attribute_json(attribute);
  }
  for (const auto& [name, quantity] : device.capacity) {
    out["capacity"][name] = {{"value", quantity}};
  }
  if (const auto found = taints.find(device.name); found != taints.end() && !found->second.empty()) {
    for (const auto& taint : found->second) {
      out["taints"].push_back(taint_json(taint));
    }
  }
  return out;
}

bool tainted(const Device& device, const Taints& taints) {
  const auto found = taints.find(device.name);
  return found != taints.end() && !found->second.empty();
}

// The devices of each slice, in order: a slice takes devices until one more would pass its limit (64 once
// one of them has taints).
std::vector<std::vector<const Device*>> chunks(const std::vector<Device>& devices, const Taints& taints) {
  std::vector<std::vector<const Device*>> out(1);
  bool with_taints = false;
  for (const auto& device : devices) {
    const bool taint = with_taints || tainted(device, taints);
    const size_t limit = taint ? k_max_slice_devices_with_taints : k_max_slice_devices;
    if (out.back().size() + 1 > limit) {
      out.emplace_back();
      with_taints = tainted(device, taints);
    } else {
      with_taints = taint;
    }
    out.back().push_back(&device);
  }
  return out;
}

json slice_json(const std::vector<const Device*>& devices, const Taints& taints, const Pool& pool,
                size_t index, size_t count) {
  json spec{{"driver", k_driver_name},
            {"nodeName", pool.node_name},
            {"pool",
             {{"name", pool.node_name},
              {"generation", pool.generation},
              {"resourceSliceCount", static_cast<int64_t>(count)}}}};
  for (const auto* device : devices) {
    spec["devices"].push_back(device_json(*device, taints));
  }
  json owner{{"apiVersion", "v1"},
             {"kind", "Node"},
             {"name", pool.node_name},
             {"uid", pool.node_uid},
             {"controller", true}};
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", slice_name(pool.node_name, index)}, {"ownerReferences", json::array({owner})}}},
      {"spec", std::move(spec)}};
}

// The spec as compared: an empty device list is the same as none (the server drops it).
json comparable_spec(const json& slice) {
  json spec = slice.value("spec", json::object());
  if (spec.contains("devices") && spec["devices"].empty()) {
    spec.erase("devices");
  }
  return spec;
}

json metadata_field(const json& slice, const char* field) {
  const auto metadata = slice.find("metadata");
  if (metadata == slice.end() || !metadata->is_object() || !metadata->contains(field)) {
    return nullptr;
  }
  return (*metadata)[field];
}

}  // namespace

std::string slice_name(const std::string& node, size_t index) {
  const std::string suffix = "-" + std::string(k_driver_name) + "-" + std::to_string(index);
  if (std::string plain = node + suffix; dns_subdomain(plain)) {
    return plain;
  }
  return short_label(node) + "-" + fnv1a64_hex(node) + suffix;
}

std::vector<json> build_slices(const std::vector<Device>& devices, const Taints& taints, const Pool& pool) {
  const auto parts = chunks(devices, taints);
  std::vector<json> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    out.push_back(slice_json(parts[i], taints, pool, i, parts.size()));
  }
  return out;
}

bool same_content(const json& published, const json& wanted) {
  return metadata_field(published, "name") == metadata_field(wanted, "name") &&
         metadata_field(published, "ownerReferences") == metadata_field(wanted, "ownerReferences") &&
         comparable_spec(published) == comparable_spec(wanted);
}

}  // namespace gpuctk::dra
