#include "labels/sharing_config.hpp"

#include <algorithm>
#include <charconv>

#include <yaml-cpp/yaml.h>

#include "util/k8s_names.hpp"
#include "util/strings.hpp"

namespace gpuctk::labels {

namespace {

// The device plugin's rules for resource names (api/config/v1 of k8s-device-plugin, described):
// "nvidia.com/" is implied, the whole name has at most 63 characters and the part after the prefix is a
// DNS subdomain.
constexpr std::string_view k_resource_prefix = "nvidia.com/";
constexpr size_t k_max_resource_name = 63;

// An enum value and how the device plugin's config file and flags spell it.
template <class Enum>
struct NameRow {
  Enum value;
  std::string_view name;
};
constexpr NameRow<MigStrategy> k_mig_strategies[] = {
    {MigStrategy::none, "none"},      // whole GPUs only; MIG devices are not advertised
    {MigStrategy::single, "single"},  // every GPU's MIG devices as nvidia.com/gpu
    {MigStrategy::mixed, "mixed"},    // each MIG profile as its own nvidia.com/mig-<profile>
};
constexpr NameRow<SharingStrategy> k_sharing_strategies[] = {
    {SharingStrategy::none, "none"},                  // no sharing config
    {SharingStrategy::time_slicing, "time-slicing"},  // sharing.timeSlicing
    {SharingStrategy::mps, "mps"},                    // sharing.mps
};

// The name of `value` in `table`; the first row's for a value the table lacks (none).
template <class Enum, size_t N>
std::string_view name_of(const NameRow<Enum> (&table)[N], Enum value) {
  const auto* row = std::ranges::find(table, value, &NameRow<Enum>::value);
  return row != std::end(table) ? row->name : table[0].name;
}

// A plain (unquoted) YAML scalar that is a decimal integer.
std::optional<int64_t> integer(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() == "!") {
    return std::nullopt;
  }
  const std::string& text = node.Scalar();
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

Result<bool> boolean(const YAML::Node& node, const std::string& key) {
  if (node.IsScalar() && node.Tag() != "!") {
    const std::string& text = node.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") {
      return true;
    }
    if (text == "false" || text == "False" || text == "FALSE") {
      return false;
    }
  }
  return fail(key + ": expected true or false");
}

Result<std::string> string(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) {
    return fail(key + ": expected a string");
  }
  return node.Scalar();
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::ranges::all_of(text, [](char c) { return c >= '0' && c <= '9'; });
}

// 8-4-4-4-12 hexadecimal digits.
bool is_uuid(std::string_view text) {
  if (text.size() != 36) {
    return false;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash ? c != '-' : !hex) {
      return false;
    }
  }
  return true;
}

// A device reference of a `devices` list: GPU index "0", MIG index "0:1", "GPU-<uuid>", "MIG-<uuid>" or
// "MIG-GPU-<uuid>/<gi>/<ci>".
bool is_device_ref(std::string_view ref) {
  if (all_digits(ref)) {
    return true;
  }
  if (const auto colon = ref.find(':'); colon != std::string_view::npos) {
    return all_digits(ref.substr(0, colon)) && all_digits(ref.substr(colon + 1));
  }
  if (ref.starts_with("GPU-")) {
    return is_uuid(ref.substr(4));
  }
  if (ref.starts_with("MIG-")) {
    const std::string_view rest = ref.substr(4);
    if (is_uuid(rest)) {
      return true;
    }
    const auto parts = split(rest, '/');
    return parts.size() == 3 && parts[0].starts_with("GPU-") && is_uuid(parts[0].substr(4)) &&
           all_digits(parts[1]) && all_digits(parts[2]);
  }
  return false;
}

// Checks `devices`; returns whether it selects all devices.
Result<bool> devices_are_all(const YAML::Node& node, const std::string& key) {
  if (node.IsScalar()) {
    if (const auto count = integer(node)) {
      if (*count <= 0) {
        return fail(key + ": a count of devices must be at least 1, got " + std::to_string(*count));
      }
      return false;
    }
    if (node.Scalar() != "all") {
      return fail(key + ": " + quote(node.Scalar()) + " is neither \"all\", a count nor a list");
    }
    return true;
  }
  if (!node.IsSequence()) {
    return fail(key + ": expected \"all\", a count or a list of devices");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    if (!item.IsScalar() || !is_device_ref(item.Scalar())) {
      return fail(key + "[" + std::to_string(i) +
                  "]: expected a GPU index, a MIG index (gpu:mig) or a GPU or MIG UUID");
    }
  }
  return false;
}

Result<std::string> resource_name(const YAML::Node& node, const std::string& key) {
  GPUCTK_TRY_ASSIGN(std::string name, string(node, key));
  if (!name.starts_with(k_resource_prefix)) {
    name.insert(0, k_resource_prefix);
  }
  if (name.size() > k_max_resource_name) {
    return fail(key + ": " + quote(name) + " is longer than " + std::to_string(k_max_resource_name) +
                " characters");
  }
  if (!is_dns_subdomain(std::string_view(name).substr(k_resource_prefix.size()))) {
    return fail(key + ": " + quote(name) +
                " is not a valid resource name (lower-case letters, digits, '-' and '.' after nvidia.com/)");
  }
  return name;
}

// One sharing section (timeSlicing or mps): its resources, and failRequestsGreaterThanOne when it says.
struct Section {
  std::vector<ReplicatedResource> resources;
  std::optional<bool> fail_requests_greater_than_one;
};

Result<Section> replicated_resources(const YAML::Node& section, const std::string& key,
                                     std::vector<std::string>& warnings) {
  if (!section.IsMap()) {
    return fail(key + ": expected a mapping");
  }
  Section result;
  bool rename_by_default = false;
  if (const YAML::Node rename = section["renameByDefault"]) {
    GPUCTK_TRY_ASSIGN(rename_by_default, boolean(rename, key + ".renameByDefault"));
  }
  if (const YAML::Node fail_greater = section["failRequestsGreaterThanOne"]) {
    GPUCTK_TRY_ASSIGN(result.fail_requests_greater_than_one,
                      boolean(fail_greater, key + ".failRequestsGreaterThanOne"));
  }
  const YAML::Node list = section["resources"];
  if (!list || (list.IsSequence() && list.size() == 0) || list.IsNull()) {
    return fail(key + ": no resources");
  }
  if (!list.IsSequence()) {
    return fail(key + ".resources: expected a list");
  }
  std::vector<ReplicatedResource>& out = result.resources;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = key + ".resources[" + std::to_string(i) + "]";
    const YAML::Node item = list[i];
    if (!item.IsMap()) {
      return fail(at + ": expected a mapping");
    }
    ReplicatedResource resource;
    if (!item["name"]) {
      return fail(at + ": no name");
    }
    GPUCTK_TRY_ASSIGN(resource.name, resource_name(item["name"], at + ".name"));
    if (!item["replicas"]) {
      return fail(at + ": no replicas");
    }
    const auto replicas = integer(item["replicas"]);
    if (!replicas) {
      return fail(at + ".replicas: expected an integer");
    }
    if (*replicas < 2 || *replicas > UINT32_MAX) {
      return fail(at + ".replicas: must be at least 2, got " + std::to_string(*replicas));
    }
    resource.replicas = static_cast<uint32_t>(*replicas);
    if (const YAML::Node devices = item["devices"]) {
      GPUCTK_TRY_ASSIGN(const bool all, devices_are_all(devices, at + ".devices"));
      if (!all) {
        warnings.push_back(at + ".devices: only \"all\" is supported, as in the device plugin; the " +
                           std::to_string(resource.replicas) + " replicas apply to every device");
      }
    }
    if (const YAML::Node rename = item["rename"]) {
      GPUCTK_TRY(string(rename, at + ".rename"));
      warnings.push_back(at + ".rename: ignored, as in the device plugin (renameByDefault decides)");
    }
    resource.renamed = rename_by_default;
    if (std::ranges::any_of(out, [&](const auto& r) { return r.name == resource.name; })) {
      // The plugin takes the first entry of a name, as find() does.
      warnings.push_back(at + ".name: " + quote(resource.name) + " is listed twice; the first entry counts");
    }
    out.push_back(std::move(resource));
  }
  return result;
}

// An optional string flag: a scalar (the plugin's decoder takes YAML's plain and quoted scalars alike).
Result<void> string_flag(const YAML::Node& map, const char* name, const std::string& at,
                         std::optional<std::string>& out) {
  if (const YAML::Node node = map[name]; node && !node.IsNull()) {
    GPUCTK_TRY_ASSIGN(out, string(node, at + name));
  }
  return {};
}

Result<void> bool_flag(const YAML::Node& map, const char* name, const std::string& at,
                       std::optional<bool>& out) {
  if (const YAML::Node node = map[name]; node && !node.IsNull()) {
    GPUCTK_TRY_ASSIGN(out, boolean(node, at + name));
  }
  return {};
}

// flags.plugin.deviceListStrategy: one strategy or a list of them.
Result<void> list_flag(const YAML::Node& map, const char* name, const std::string& at,
                       std::optional<std::vector<std::string>>& out) {
  const YAML::Node node = map[name];
  if (!node || node.IsNull()) {
    return {};
  }
  if (node.IsScalar()) {
    out = std::vector<std::string>{node.Scalar()};
    return {};
  }
  if (!node.IsSequence()) {
    return fail(at + name + ": expected a string or a list of strings");
  }
  out.emplace();
  for (size_t i = 0; i < node.size(); ++i) {
    GPUCTK_TRY_ASSIGN(auto item, string(node[i], at + name + "[" + std::to_string(i) + "]"));
    out->push_back(std::move(item));
  }
  return {};
}

// flags and flags.plugin: the device plugin's flags (PluginFlags).
Result<void> plugin_flags(const YAML::Node& flags, PluginFlags& out) {
  const std::string at = "flags.";
  GPUCTK_TRY(bool_flag(flags, "failOnInitError", at, out.fail_on_init_error));
  GPUCTK_TRY(string_flag(flags, "mpsRoot", at, out.mps_root));
  GPUCTK_TRY(string_flag(flags, "nvidiaDriverRoot", at, out.nvidia_driver_root));
  GPUCTK_TRY(string_flag(flags, "nvidiaDevRoot", at, out.nvidia_dev_root));
  GPUCTK_TRY(bool_flag(flags, "gdrcopyEnabled", at, out.gdrcopy_enabled));
  GPUCTK_TRY(bool_flag(flags, "gdsEnabled", at, out.gds_enabled));
  GPUCTK_TRY(bool_flag(flags, "mofedEnabled", at, out.mofed_enabled));
  GPUCTK_TRY(string_flag(flags, "deviceDiscoveryStrategy", at, out.device_discovery_strategy));
  const YAML::Node plugin = flags["plugin"];
  if (!plugin || plugin.IsNull()) {
    return {};
  }
  if (!plugin.IsMap()) {
    return fail("flags.plugin: expected a mapping");
  }
  const std::string in = "flags.plugin.";
  GPUCTK_TRY(bool_flag(plugin, "passDeviceSpecs", in, out.pass_device_specs));
  GPUCTK_TRY(list_flag(plugin, "deviceListStrategy", in, out.device_list_strategy));
  GPUCTK_TRY(string_flag(plugin, "deviceIDStrategy", in, out.device_id_strategy));
  GPUCTK_TRY(string_flag(plugin, "cdiAnnotationPrefix", in, out.cdi_annotation_prefix));
  GPUCTK_TRY(string_flag(plugin, "nvidiaCTKPath", in, out.nvidia_ctk_path));
  GPUCTK_TRY(string_flag(plugin, "containerDriverRoot", in, out.container_driver_root));
  return string_flag(plugin, "sharedDevicesAllocationPolicy", in, out.shared_devices_allocation_policy);
}

// imex: channelIDs (a list of integers, then NVIDIA's check) and required.
Result<void> imex_section(const YAML::Node& imex, ImexConfig& out) {
  if (!imex.IsMap()) {
    return fail("imex: expected a mapping");
  }
  if (const YAML::Node ids = imex["channelIDs"]; ids && !ids.IsNull()) {
    if (!ids.IsSequence()) {
      return fail("imex.channelIDs: expected a list of integers");
    }
    std::vector<int64_t> numbers;
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto number = integer(ids[i]);
      if (!number) {
        return fail("imex.channelIDs[" + std::to_string(i) + "]: expected an integer");
      }
      numbers.push_back(*number);
    }
    auto checked = check_imex_channel_ids(numbers);
    if (!checked) {
      return fail_with("imex.channelIDs", checked.error());
    }
    out.channel_ids = std::move(*checked);
  }
  return bool_flag(imex, "required", "imex.", out.required);
}

}  // namespace

Result<std::vector<uint32_t>> check_imex_channel_ids(std::span<const int64_t> ids) {
  if (ids.empty()) {
    return std::vector<uint32_t>{};
  }
  if (ids.size() == 1 && ids[0] == 0) {
    return std::vector<uint32_t>{0};
  }
  // Go's %v of the list, as NVIDIA's message prints it.
  std::string found;
  for (const int64_t id : ids) {
    found += (found.empty() ? "" : " ") + std::to_string(id);
  }
  return fail("must be [] or [0]; found [" + found + "]");
}

Result<MigStrategy> parse_mig_strategy(std::string_view text) {
  const auto* row = std::ranges::find(k_mig_strategies, text, &NameRow<MigStrategy>::name);
  if (row == std::end(k_mig_strategies)) {
    return fail("unknown MIG strategy " + quote(text) + " (want none, single or mixed)");
  }
  return row->value;
}

std::string_view mig_strategy_name(MigStrategy strategy) {
  return name_of(k_mig_strategies, strategy);
}

std::string_view sharing_strategy_name(SharingStrategy strategy) {
  return name_of(k_sharing_strategies, strategy);
}

const ReplicatedResource* SharingConfig::find(std::string_view name) const {
  const auto it = std::ranges::find(resources, name, &ReplicatedResource::name);
  return it == resources.end() ? nullptr : &*it;
}

Result<SharingConfig> parse_sharing_config(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return fail("YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
                std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  SharingConfig config;
  if (root.IsNull()) {
    return config;  // an empty file: the plugin's defaults
  }
  if (!root.IsMap()) {
    return fail("expected a mapping at the top level");
  }
  try {
    if (const YAML::Node version = root["version"]) {
      GPUCTK_TRY_ASSIGN(const auto v, string(version, "version"));
      if (!v.empty() && v != "v1") {
        return fail("version: unknown version " + quote(v) + " (want v1)");
      }
    }
    if (const YAML::Node flags = root["flags"]; flags && !flags.IsNull()) {
      if (!flags.IsMap()) {
        return fail("flags: expected a mapping");
      }
      if (const YAML::Node strategy = flags["migStrategy"]) {
        GPUCTK_TRY_ASSIGN(const auto name, string(strategy, "flags.migStrategy"));
        auto parsed = parse_mig_strategy(name);
        if (!parsed) {
          return fail_with("flags.migStrategy", parsed.error());
        }
        config.mig_strategy = *parsed;
      }
      GPUCTK_TRY(plugin_flags(flags, config.flags));
    }
    if (const YAML::Node resources = root["resources"]; resources && !resources.IsNull()) {
      config.warnings.emplace_back(
          "resources: ignored, as in the device plugin (custom resource names are not "
          "supported; GPUs are nvidia.com/gpu, MIG devices follow flags.migStrategy)");
    }
    if (const YAML::Node imex = root["imex"]; imex && !imex.IsNull()) {
      GPUCTK_TRY(imex_section(imex, config.imex));
    }
    const YAML::Node sharing = root["sharing"];
    if (!sharing || sharing.IsNull()) {
      return config;
    }
    if (!sharing.IsMap()) {
      return fail("sharing: expected a mapping");
    }
    // Both sections are checked; the plugin puts mps in force when it is present.
    std::optional<Section> time_slicing;
    if (const YAML::Node section = sharing["timeSlicing"]) {
      GPUCTK_TRY_ASSIGN(time_slicing, replicated_resources(section, "sharing.timeSlicing", config.warnings));
    }
    std::optional<Section> in_force;
    if (const YAML::Node section = sharing["mps"]) {
      GPUCTK_TRY_ASSIGN(in_force, replicated_resources(section, "sharing.mps", config.warnings));
      config.strategy = SharingStrategy::mps;
      if (time_slicing) {
        config.warnings.emplace_back("sharing.timeSlicing: ignored, sharing.mps is in force");
      }
    } else if (time_slicing) {
      in_force = std::move(time_slicing);
      config.strategy = SharingStrategy::time_slicing;
    }
    if (in_force) {
      config.resources = std::move(in_force->resources);
      config.fail_requests_greater_than_one = in_force->fail_requests_greater_than_one;
    }
  } catch (const YAML::Exception& e) {
    return fail(std::string("unexpected YAML structure: ") + e.what());
  }
  return config;
}

}  // namespace gpuctk::labels
