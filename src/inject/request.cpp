#include "inject/request.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "cdi/names.hpp"
#include "discover/imex_channels.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::inject {

namespace {

using Json = nlohmann::ordered_json;
using discover::Capability;
using discover::CapabilitySet;

constexpr std::string_view k_visible_devices = "NVIDIA_VISIBLE_DEVICES";
constexpr std::string_view k_driver_capabilities = "NVIDIA_DRIVER_CAPABILITIES";
constexpr std::string_view k_require_prefix = "NVIDIA_REQUIRE_";
constexpr std::string_view k_require_cuda = "NVIDIA_REQUIRE_CUDA";
// Selects CSV mount files on Jetson; not a constraint.
constexpr std::string_view k_require_jetpack = "NVIDIA_REQUIRE_JETPACK";
constexpr std::string_view k_disable_require = "NVIDIA_DISABLE_REQUIRE";
constexpr std::string_view k_cuda_version = "CUDA_VERSION";
constexpr std::string_view k_mig_config = "NVIDIA_MIG_CONFIG_DEVICES";
constexpr std::string_view k_mig_monitor = "NVIDIA_MIG_MONITOR_DEVICES";
constexpr std::string_view k_mps_pipe_directory = "CUDA_MPS_PIPE_DIRECTORY";
constexpr std::string_view k_mps_log_directory = "CUDA_MPS_LOG_DIRECTORY";
constexpr std::string_view k_imex_channels = "NVIDIA_IMEX_CHANNELS";
constexpr std::string_view k_device_mount_dir = "/var/run/nvidia-container-devices/";
constexpr std::string_view k_imex_mount_prefix = "imex/";

constexpr std::string_view k_env_wanted =
    "(want an index, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid>, a CDI name, all, none or void)";
constexpr std::string_view k_mount_wanted = "(want an index, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid> or all)";
constexpr std::string_view k_imex_env_wanted =
    "(want a channel number from 0 to 1048575, channel<N>, none or void)";
constexpr std::string_view k_imex_mount_wanted =
    "(want a channel number from 0 to 1048575, channel<N> or all)";

// Every capability, in enum order (CapabilitySet cannot be iterated).
constexpr std::array k_all_capabilities{Capability::utility,  Capability::compute, Capability::video,
                                        Capability::graphics, Capability::display, Capability::ngx,
                                        Capability::compat32};

// ---- JSON access (never throws) --------------------------------------------------------------------

const Json* member(const Json& object, const std::string& key) {
  if (!object.is_object()) {
    return nullptr;
  }
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string* string_member(const Json& object, const std::string& key) {
  const Json* value = member(object, key);
  return value != nullptr && value->is_string() ? &value->get_ref<const std::string&>() : nullptr;
}

bool array_has_string(const Json* array, std::string_view wanted) {
  if (array == nullptr || !array->is_array()) {
    return false;
  }
  return std::ranges::any_of(*array, [&](const Json& item) {
    return item.is_string() && item.get_ref<const std::string&>() == wanted;
  });
}

// ---- environment ---------------------------------------------------------------------------------

// process.env as a map of the variables gpuctk reads (NVIDIA_*, CUDA_*); a container may carry
// thousands of others (Kubernetes adds several per service in the namespace), which are not kept. The
// last occurrence of a key wins (see request.hpp). Views point into `config`. A tree, not a hash map:
// the keys are the container's, and a tree's cost does not depend on how they hash.
using Environment = std::map<std::string_view, std::string_view>;

bool is_read_by_gpuctk(std::string_view key) {
  return key.starts_with("NVIDIA_") || key.starts_with("CUDA_");
}

Environment environment_of(const Json& config) {
  Environment env;
  const Json* process = member(config, "process");
  const Json* list = process != nullptr ? member(*process, "env") : nullptr;
  if (list == nullptr || !list->is_array()) {
    return env;
  }
  for (const Json& item : *list) {
    if (!item.is_string()) {
      continue;
    }
    const std::string_view entry = item.get_ref<const std::string&>();
    const auto equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0 || !is_read_by_gpuctk(entry.substr(0, equals))) {
      continue;
    }
    env.insert_or_assign(entry.substr(0, equals), entry.substr(equals + 1));
  }
  return env;
}

std::optional<std::string_view> lookup(const Environment& env, std::string_view key) {
  const auto it = env.find(key);
  return it == env.end() ? std::nullopt : std::optional(it->second);
}

// Set to a non-empty value.
std::optional<std::string_view> non_empty(const Environment& env, std::string_view key) {
  auto value = lookup(env, key);
  return value && !value->empty() ? value : std::nullopt;
}

// Go's strconv.ParseBool true values; anything else is false.
bool is_true(std::string_view value) {
  return value == "1" || value == "t" || value == "T" || value == "TRUE" || value == "true" ||
         value == "True";
}

// A variable's value is refused when it is longer than `limit` (k_max_env_value: a process could not
// have received it). Checked by each reader before it parses, so that only variables of a GPU
// container can cause the error.
Result<void> check_length(std::string_view variable, std::string_view value, size_t limit = k_max_env_value) {
  if (value.size() > limit) {
    return fail(std::string(variable) + ": value of " + std::to_string(value.size()) +
                " bytes is longer than the limit of " + std::to_string(limit) + " bytes");
  }
  return {};
}

bool is_legacy_cuda_image(const Environment& env) {
  return non_empty(env, k_cuda_version) && !non_empty(env, k_require_cuda);
}

// ---- device ids ----------------------------------------------------------------------------------

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Hex digits and dashes, starting with a hex digit: what follows "GPU-" / "MIG-" in NVML UUIDs.
bool is_uuid_ish(std::string_view text) {
  return !text.empty() && is_hex(text.front()) &&
         std::ranges::all_of(text, [](char c) { return is_hex(c) || c == '-'; });
}

bool is_index(std::string_view text) {
  return parse_unsigned(text).has_value();
}

// "0", "0:1", "GPU-<uuid>", "MIG-<uuid>" or the pre-470 "MIG-GPU-<uuid>/<gi>/<ci>".
bool is_device_id(std::string_view id) {
  if (is_index(id)) {
    return true;
  }
  if (const auto colon = id.find(':'); colon != std::string_view::npos) {
    return is_index(id.substr(0, colon)) && is_index(id.substr(colon + 1));
  }
  if (id.starts_with("GPU-")) {
    return is_uuid_ish(id.substr(4));
  }
  if (id.starts_with("MIG-GPU-")) {
    const auto parts = split(id.substr(8), '/');
    return parts.size() == 3 && is_uuid_ish(parts[0]) && is_index(parts[1]) && is_index(parts[2]);
  }
  if (id.starts_with("MIG-")) {
    return is_uuid_ish(id.substr(4));
  }
  return false;
}

// A plain device id with a time-slicing replica suffix ("GPU-abc::3") stripped; nothing if `entry` is
// not a device id. `context` prefixes errors ("NVIDIA_VISIBLE_DEVICES").
Result<std::optional<std::string>> parse_device_id(std::string_view context, std::string_view entry) {
  std::string_view id = entry;
  if (const auto replica = entry.find("::"); replica != std::string_view::npos) {
    if (!is_index(entry.substr(replica + 2))) {
      return fail(std::string(context) + ": invalid replica suffix in " + quote(entry) +
                  " (want <id>::<number>)");
    }
    id = entry.substr(0, replica);
  }
  if (!is_device_id(id)) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::string(id));
}

// The devices requested so far, de-duplicated in request order, at most `limit` of them
// (RequestConfig::max_devices). Parsing stays linear in the size of the request: each entry costs one
// lookup in a set that never holds more than `limit` names. Trees rather than hash sets, because the
// names are the container's and a tree's cost does not depend on how they hash (no hash flooding).
class DeviceList {
 public:
  explicit DeviceList(size_t limit) : m_limit(limit) {}

  bool all = false;
  std::vector<std::string> devices;
  std::vector<std::string> cdi_devices;

  // `context` names the source in the error ("NVIDIA_VISIBLE_DEVICES", "annotation cdi.k8s.io/x").
  Result<void> add_device(std::string_view context, std::string id) {
    return add(context, devices, m_seen_devices, std::move(id));
  }
  Result<void> add_cdi(std::string_view context, std::string name) {
    return add(context, cdi_devices, m_seen_cdi, std::move(name));
  }
  [[nodiscard]] bool empty() const { return !all && devices.empty() && cdi_devices.empty(); }

 private:
  Result<void> add(std::string_view context, std::vector<std::string>& list, std::set<std::string>& seen,
                   std::string item) {
    if (seen.contains(item)) {
      return {};
    }
    if (devices.size() + cdi_devices.size() >= m_limit) {
      return fail(std::string(context) + ": more than " + std::to_string(m_limit) +
                  " devices requested (the limit per container)");
    }
    seen.insert(item);
    list.push_back(std::move(item));
    return {};
  }

  size_t m_limit;
  std::set<std::string> m_seen_devices;
  std::set<std::string> m_seen_cdi;
};

// ---- the three sources ---------------------------------------------------------------------------

Result<void> read_annotations(const Json& config, const config::RequestConfig& rc, DeviceList& list,
                              std::vector<std::string>& log) {
  const Json* annotations = member(config, "annotations");
  if (annotations == nullptr || !annotations->is_object()) {
    return {};
  }
  // One pass over the object, keeping the request annotations with their values (looking a key up in
  // an ordered_json is a scan of the object: doing that per key was quadratic).
  std::vector<std::pair<std::string_view, const Json*>> requests;
  for (auto it = annotations->begin(); it != annotations->end(); ++it) {
    const std::string& key = it.key();
    if (!std::ranges::any_of(rc.annotation_prefixes, [&](const std::string& prefix) {
          return !prefix.empty() && key.starts_with(prefix);
        })) {
      continue;
    }
    if (key.size() > k_max_annotation_key) {
      return fail("annotation key of " + std::to_string(key.size()) +
                  " bytes with a request prefix is longer " + "than the limit of " +
                  std::to_string(k_max_annotation_key) + " bytes");
    }
    if (requests.size() == rc.max_devices) {
      return fail("more than " + std::to_string(rc.max_devices) + " annotations with a request prefix (" +
                  join(rc.annotation_prefixes, ", ") + "; the limit is the device limit per container)");
    }
    requests.emplace_back(key, &it.value());
  }
  std::ranges::sort(requests, {}, &std::pair<std::string_view, const Json*>::first);
  for (const auto& [key, value] : requests) {
    const std::string context = "annotation " + std::string(key);
    if (!value->is_string()) {
      return fail(context + ": value is not a string");
    }
    const std::string& text = value->get_ref<const std::string&>();
    GPUCTK_TRY(check_length(context, text, k_max_annotation_value));
    std::vector<std::string> names;
    for (const auto piece : split(text, ',')) {
      const auto trimmed = trim(piece);
      if (trimmed.empty()) {
        return fail(context + ": empty device name in " + quote(text));
      }
      auto name = cdi::parse_qualified_name(trimmed);
      if (!name) {
        return fail_with(context, name.error());
      }
      names.push_back(name->str());
      GPUCTK_TRY(list.add_cdi(context, name->str()));
    }
    log.push_back("request from " + context + ": " + join(names, ","));
  }
  return {};
}

// Reads the device requests of the volume mounts into `list`; the IMEX channel requests (what follows
// ".../imex/") go to `imex`, read only for a GPU container (read_imex_channels).
Result<void> read_volume_mounts(const Json& config, const config::RequestConfig& rc, DeviceList& list,
                                std::vector<std::string_view>& imex, std::vector<std::string>& log) {
  const Json* mounts = member(config, "mounts");
  if (mounts == nullptr || !mounts->is_array()) {
    return {};
  }
  std::vector<std::string> requested;
  size_t ignored = 0;
  for (const Json& mount : *mounts) {
    const std::string* source = string_member(mount, "source");
    const std::string* destination = string_member(mount, "destination");
    if (source == nullptr || destination == nullptr || *source != "/dev/null" ||
        !destination->starts_with(k_device_mount_dir)) {
      continue;
    }
    if (!rc.accept_volume_mounts) {
      ++ignored;
      continue;
    }
    const std::string context = "volume mount " + *destination;
    const std::string_view rest = std::string_view(*destination).substr(k_device_mount_dir.size());
    if (rest.starts_with(k_imex_mount_prefix)) {
      imex.push_back(rest.substr(k_imex_mount_prefix.size()));
      continue;
    }
    if (rest.starts_with("cdi/")) {
      // cdi/<vendor>/<class>/<name> or cdi/<vendor>/<class>=<name>
      std::string text(rest.substr(4));
      if (text.find('=') == std::string::npos) {
        const auto slash = text.rfind('/');
        if (slash != std::string::npos) {
          text[slash] = '=';
        }
      }
      auto name = cdi::parse_qualified_name(text);
      if (!name) {
        return fail_with(context, name.error());
      }
      requested.push_back(name->str());
      GPUCTK_TRY(list.add_cdi(context, name->str()));
      continue;
    }
    if (rest == "all") {
      requested.emplace_back("all");
      list.all = true;
      continue;
    }
    GPUCTK_TRY_ASSIGN(auto id, parse_device_id(context, rest));
    if (!id) {
      return fail(context + ": invalid device " + quote(rest) + " " + std::string(k_mount_wanted));
    }
    requested.push_back(*id);
    GPUCTK_TRY(list.add_device(context, std::move(*id)));
  }
  if (ignored > 0) {
    log.push_back("ignoring " + std::to_string(ignored) + " device request(s) by volume mount under " +
                  std::string(k_device_mount_dir) + " (accept-volume-mounts is off)");
  }
  if (!requested.empty()) {
    log.push_back("request from volume mounts: " + join(requested, ","));
  }
  return {};
}

enum class Visible : uint8_t { not_gpu, gpu };

// Parses a NVIDIA_VISIBLE_DEVICES value into `list`; `none_only` is set when the value is just "none".
Result<Visible> read_visible_devices(std::string_view value, DeviceList& list, bool& none_only,
                                     std::vector<std::string>& log) {
  const std::string context(k_visible_devices);
  GPUCTK_TRY(check_length(context, value));
  std::vector<std::string_view> entries;
  for (const auto piece : split(value, ',')) {
    if (const auto entry = trim(piece); !entry.empty()) {
      entries.push_back(entry);
    }
  }
  if (entries.empty()) {
    log.push_back("not a GPU container: " + context + " is empty");
    return Visible::not_gpu;
  }
  if (std::ranges::find(entries, "void") != entries.end()) {
    log.push_back("not a GPU container: " + context + " is void");
    return Visible::not_gpu;
  }
  bool none = false;
  for (const auto entry : entries) {
    if (entry == "all") {
      list.all = true;
    } else if (entry == "none") {
      none = true;  // the empty set: the union with any device is that device
    } else if (entry.find('=') != std::string_view::npos) {
      auto name = cdi::parse_qualified_name(entry);
      if (!name) {
        return fail_with(context, name.error());
      }
      GPUCTK_TRY(list.add_cdi(context, name->str()));
    } else {
      GPUCTK_TRY_ASSIGN(auto id, parse_device_id(context, entry));
      if (!id) {
        std::string message = context + ": invalid device " + quote(entry) + " " + std::string(k_env_wanted);
        if (entry.starts_with("/var/run/nvidia-container-devices")) {
          message +=
              "; this is the device plugin's volume-mounts strategy, which needs accept-volume-mounts: true";
        }
        return fail(std::move(message));
      }
      GPUCTK_TRY(list.add_device(context, std::move(*id)));
    }
  }
  none_only = none && list.empty();
  return Visible::gpu;
}

// ---- everything else -----------------------------------------------------------------------------

std::string capability_names(CapabilitySet set) {
  std::vector<std::string> names;
  for (const auto c : k_all_capabilities) {
    if (set.has(c)) {
      names.emplace_back(discover::capability_name(c));
    }
  }
  return names.empty() ? std::string("none") : join(names, ", ");
}

CapabilitySet intersect(CapabilitySet a, CapabilitySet b) {
  CapabilitySet out;
  for (const auto c : k_all_capabilities) {
    if (a.has(c) && b.has(c)) {
      out.add(c);
    }
  }
  return out;
}

Result<CapabilitySet> read_capabilities(const Environment& env, const config::RequestConfig& rc,
                                        bool legacy) {
  const std::string context(k_driver_capabilities);
  const auto value = lookup(env, k_driver_capabilities);
  if (!value && legacy) {
    return rc.supported_capabilities;
  }
  if (value) {
    GPUCTK_TRY(check_length(context, *value));
  }
  if (!value || trim(*value).empty()) {
    CapabilitySet defaults;
    defaults.add(Capability::utility);
    defaults.add(Capability::compute);
    return intersect(defaults, rc.supported_capabilities);
  }
  if (auto parsed = discover::parse_capabilities(*value); !parsed) {
    return fail_with(context, parsed.error());
  }
  CapabilitySet result;
  for (const auto piece : split(*value, ',')) {
    const auto name = trim(piece);
    if (name == "all") {
      result = intersect(CapabilitySet::all(), rc.supported_capabilities);
      continue;
    }
    const auto one = discover::parse_capabilities(name);  // known: the whole list parsed
    for (const auto c : k_all_capabilities) {
      if (!one || !one->has(c)) {
        continue;
      }
      if (!rc.supported_capabilities.has(c)) {
        return fail(context + ": unsupported driver capability " + quote(discover::capability_name(c)) +
                    " (supported: " + capability_names(rc.supported_capabilities) + ")");
      }
      result.add(c);
    }
  }
  return result;
}

// "12.4.1" -> "12.4", "12" -> "12.0"; nothing unless dotted decimal numbers.
std::optional<std::string> major_minor(std::string_view version) {
  const auto parts = split(version, '.');
  if (!std::ranges::all_of(parts, is_index)) {
    return std::nullopt;
  }
  return std::string(parts[0]) + "." + (parts.size() > 1 ? std::string(parts[1]) : std::string("0"));
}

Result<std::vector<Requirement>> read_requirements(const Environment& env, const config::RequestConfig& rc,
                                                   bool legacy, std::vector<std::string>& log) {
  std::vector<std::pair<std::string_view, std::string_view>> wanted;
  for (const auto& [key, value] : env) {  // sorted by name
    if (key.starts_with(k_require_prefix) && key != k_require_jetpack && !trim(value).empty()) {
      wanted.emplace_back(key, value);
    }
  }
  if (wanted.empty() && !legacy) {
    return std::vector<Requirement>{};
  }
  const auto disabled_by_env = lookup(env, k_disable_require);
  if (disabled_by_env && is_true(*disabled_by_env)) {
    log.push_back("requirements not checked: " + std::string(k_disable_require) + "=" +
                  std::string(*disabled_by_env));
    return std::vector<Requirement>{};
  }
  if (rc.disable_require) {
    log.push_back("requirements not checked: disable-require is set in the configuration");
    return std::vector<Requirement>{};
  }
  if (wanted.size() > k_max_requirements) {
    return fail("more than " + std::to_string(k_max_requirements) + " " + std::string(k_require_prefix) +
                "* variables (the limit)");
  }
  std::vector<Requirement> requirements;
  for (const auto& [key, value] : wanted) {
    GPUCTK_TRY(check_length(key, value));
    GPUCTK_TRY_ASSIGN(auto requirement, parse_requirement(key, value));
    requirements.push_back(std::move(requirement));
  }
  if (legacy) {
    const auto cuda_version = *lookup(env, k_cuda_version);
    GPUCTK_TRY(check_length(k_cuda_version, cuda_version));
    const auto cuda = major_minor(cuda_version);
    if (!cuda) {
      return fail(std::string(k_cuda_version) + ": invalid version " + quote(cuda_version) +
                  " (want major.minor[.patch])");
    }
    GPUCTK_TRY_ASSIGN(auto requirement, parse_requirement(k_cuda_version, "cuda>=" + *cuda));
    log.push_back("legacy CUDA image: requiring cuda>=" + *cuda + " (from " + std::string(k_cuda_version) +
                  "=" + std::string(cuda_version) + ")");
    requirements.push_back(std::move(requirement));
  }
  return requirements;
}

Result<bool> read_mig_flag(const Environment& env, std::string_view variable, bool privileged) {
  const auto value = non_empty(env, variable);
  if (!value) {
    return false;
  }
  if (!privileged) {
    return fail(std::string(variable) + ": only privileged containers (CAP_SYS_ADMIN) may request MIG " +
                (variable == k_mig_config ? "configuration" : "monitoring"));
  }
  if (trim(*value) != "all") {
    return fail(std::string(variable) + ": invalid value " + quote(*value) + " (only \"all\" is supported)");
  }
  return true;
}

// CUDA_MPS_PIPE_DIRECTORY or CUDA_MPS_LOG_DIRECTORY, cleaned; "" when unset or empty.
Result<std::string> read_mps_directory(const Environment& env, std::string_view variable) {
  const auto value = non_empty(env, variable);
  if (!value) {
    return std::string();
  }
  const std::string context(variable);
  GPUCTK_TRY(check_length(context, *value, k_max_mps_path));
  if (!value->starts_with('/')) {
    return fail(context + ": " + quote(*value) + " is not an absolute path");
  }
  // It may name a host directory to bind-mount: never let the container's value climb out of a root.
  const auto components = split(*value, '/');
  if (std::ranges::find(components, "..") != components.end()) {
    return fail(context + ": " + quote(*value) + " must not contain \"..\"");
  }
  return clean_path(*value);
}

// The IMEX channels of a GPU container (request.hpp): the volume mounts' (`mounts`: what follows
// ".../imex/"), else NVIDIA_IMEX_CHANNELS's when the container may use variables.
Result<void> read_imex_channels(const Environment& env, const std::vector<std::string_view>& mounts,
                                const config::RequestConfig& rc, Request& request) {
  const std::string variable(k_imex_channels);
  std::set<uint32_t> seen;
  const auto add = [&](const std::string& context, std::string_view text,
                       std::string_view wanted) -> Result<void> {
    const auto channel = discover::parse_imex_channel(text);
    if (!channel) {
      return fail(context + ": invalid IMEX channel " + quote(text) + " " + std::string(wanted));
    }
    if (seen.contains(*channel)) {
      return {};
    }
    if (request.imex_channels.size() >= rc.max_devices) {
      return fail(context + ": more than " + std::to_string(rc.max_devices) +
                  " IMEX channels requested (the limit per container)");
    }
    seen.insert(*channel);
    request.imex_channels.push_back(*channel);
    return {};
  };
  const auto described = [&] {
    std::vector<std::string> names;
    if (request.imex_all) {
      names.emplace_back("all");
    }
    for (const auto channel : request.imex_channels) {
      names.push_back(std::to_string(channel));
    }
    return join(names, ",");
  };
  const auto value = lookup(env, k_imex_channels);
  if (!mounts.empty()) {
    for (const auto rest : mounts) {
      if (rest == "all") {
        request.imex_all = true;
        continue;
      }
      const std::string context = "volume mount " + std::string(k_device_mount_dir) +
                                  std::string(k_imex_mount_prefix) + std::string(rest);
      GPUCTK_TRY(add(context, rest, k_imex_mount_wanted));
    }
    if (value) {
      request.log.push_back("ignoring " + variable + ": IMEX channels were requested by volume mount");
    }
    request.log.push_back("IMEX channels from volume mounts: " + described());
    return {};
  }
  if (!value) {
    return {};
  }
  if (!request.privileged && !rc.accept_envvar_when_unprivileged) {
    request.log.push_back("ignoring " + variable + " from an unprivileged container");
    return {};
  }
  GPUCTK_TRY(check_length(variable, *value));
  std::vector<std::string_view> entries;
  for (const auto piece : split(*value, ',')) {
    if (const auto entry = trim(piece); !entry.empty()) {
      entries.push_back(entry);
    }
  }
  // As for NVIDIA_VISIBLE_DEVICES, the first of all, none and void decides for the whole list.
  const auto special = std::ranges::find_if(
      entries, [](std::string_view e) { return e == "all" || e == "none" || e == "void"; });
  if (special != entries.end() && *special == "all") {
    request.log.push_back("ignoring " + variable + "=" + quote(*value) +
                          ": \"all\" gives no IMEX channel, as in NVIDIA's toolkit (name the channels)");
    return {};
  }
  if (special != entries.end() || entries.empty()) {
    return {};
  }
  for (const auto entry : entries) {
    GPUCTK_TRY(add(variable, entry, k_imex_env_wanted));
  }
  request.log.push_back("IMEX channels from " + variable + ": " + described());
  return {};
}

}  // namespace

bool is_privileged(const nlohmann::ordered_json& config) {
  const Json* process = member(config, "process");
  const Json* capabilities = process != nullptr ? member(*process, "capabilities") : nullptr;
  if (capabilities == nullptr) {
    return false;
  }
  if (capabilities->is_array()) {
    return array_has_string(capabilities, "CAP_SYS_ADMIN");  // pre-1.0 OCI: one flat list
  }
  return array_has_string(member(*capabilities, "bounding"), "CAP_SYS_ADMIN");
}

bool may_request_gpu(const nlohmann::ordered_json& config) {
  config::RequestConfig accepting;
  accepting.accept_envvar_when_unprivileged = true;
  accepting.accept_volume_mounts = true;
  const auto request = read_request(config, accepting);
  if (!request || request->gpu_container) {
    return true;
  }
  const Json* annotations = member(config, "annotations");
  if (annotations == nullptr || !annotations->is_object()) {
    return false;
  }
  // Linear in the annotations' size: each comma piece is parsed once.
  for (const Json& value : *annotations) {
    if (!value.is_string()) {
      continue;
    }
    for (const auto piece : split(value.get_ref<const std::string&>(), ',')) {
      if (cdi::parse_qualified_name(trim(piece))) {
        return true;
      }
    }
  }
  return false;
}

Result<Request> read_request(const nlohmann::ordered_json& config, const config::RequestConfig& rc) {
  Request request;
  request.privileged = is_privileged(config);
  const Environment env = environment_of(config);
  const bool legacy = is_legacy_cuda_image(env);
  const auto visible = lookup(env, k_visible_devices);
  const std::string visible_name(k_visible_devices);

  DeviceList list(rc.max_devices);
  std::vector<std::string_view> imex_mounts;
  GPUCTK_TRY(read_annotations(config, rc, list, request.log));
  GPUCTK_TRY(read_volume_mounts(config, rc, list, imex_mounts, request.log));
  bool none_only = false;
  if (!list.empty()) {
    if (visible) {
      request.log.push_back("ignoring " + visible_name +
                            ": devices were requested by annotation or volume mount");
    }
  } else if (visible || legacy) {
    if (!request.privileged && !rc.accept_envvar_when_unprivileged) {
      request.log.push_back(visible ? "ignoring " + visible_name + " from an unprivileged container"
                                    : "ignoring the legacy CUDA image's implicit " + visible_name +
                                          "=all from an unprivileged container");
      return request;
    }
    std::string_view value = "all";
    if (visible) {
      value = *visible;
      request.log.push_back("request from " + visible_name + ": " + quote(value));
    } else {
      request.log.push_back("legacy CUDA image (" + std::string(k_cuda_version) + " set, " +
                            std::string(k_require_cuda) + " unset): " + visible_name + " unset means all");
    }
    GPUCTK_TRY_ASSIGN(auto outcome, read_visible_devices(value, list, none_only, request.log));
    if (outcome == Visible::not_gpu) {
      return request;
    }
  } else {
    return request;  // no request at all: not a GPU container
  }

  request.gpu_container = true;
  request.all = list.all;
  request.driver_only = none_only;
  if (!list.all) {
    request.devices = std::move(list.devices);  // with "all" the plain ids are redundant
  }
  request.cdi_devices = std::move(list.cdi_devices);

  GPUCTK_TRY_ASSIGN(auto capabilities, read_capabilities(env, rc, legacy));
  request.capabilities = capabilities;

  GPUCTK_TRY_ASSIGN(auto requirements, read_requirements(env, rc, legacy, request.log));
  request.requirements = std::move(requirements);

  GPUCTK_TRY_ASSIGN(auto mig_config, read_mig_flag(env, k_mig_config, request.privileged));
  request.mig_config = mig_config;
  GPUCTK_TRY_ASSIGN(auto mig_monitor, read_mig_flag(env, k_mig_monitor, request.privileged));
  request.mig_monitor = mig_monitor;

  GPUCTK_TRY_ASSIGN(request.mps_pipe_directory, read_mps_directory(env, k_mps_pipe_directory));
  GPUCTK_TRY_ASSIGN(request.mps_log_directory, read_mps_directory(env, k_mps_log_directory));
  GPUCTK_TRY(read_imex_channels(env, imex_mounts, rc, request));
  for (const auto& feature : discover::gated_features()) {
    if (lookup(env, feature.variable) == "enabled") {
      request.gated_features.push_back(feature.feature);
      request.log.push_back(std::string(feature.variable) + "=enabled: " + std::string(feature.what) +
                            " devices");
    }
  }
  return request;
}

}  // namespace gpuctk::inject
