#include "cdi/apply.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "oci/json_text.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

using Json = nlohmann::ordered_json;

std::unexpected<Error> wrong_type(std::string_view where, const Json& value, std::string_view expected) {
  return fail("OCI config: " + std::string(where) + " is " + oci::json_type_phrase(value) + ", expected " +
              std::string(expected));
}

// parent[key] as an object, created when missing or null (Go reads null as absent).
Result<Json*> object_member(Json& parent, const char* key, std::string_view where) {
  Json& member = parent[key];
  if (member.is_null()) {
    member = Json::object();
  } else if (!member.is_object()) {
    return wrong_type(where, member, "an object");
  }
  return &member;
}

// parent[key] as an array, created when missing or null.
Result<Json*> array_member(Json& parent, const char* key, std::string_view where) {
  Json& member = parent[key];
  if (member.is_null()) {
    member = Json::array();
  } else if (!member.is_array()) {
    return wrong_type(where, member, "an array");
  }
  return &member;
}

// The list at root.<keys...>, creating missing (or null) objects on the way and the list itself.
// Pointers into an ordered_json object do not survive adding a key to it (its members live in a
// vector), so callers look a list up again after anything may have added a sibling on its path.
Result<Json*> array_at(Json& root, std::initializer_list<const char*> keys) {
  Json* node = &root;
  std::string where;
  size_t index = 0;
  for (const char* key : keys) {
    where.append(where.empty() ? "" : ".").append(key);
    const bool last = ++index == keys.size();
    GPUCTK_TRY_ASSIGN(const auto member,
                      last ? array_member(*node, key, where) : object_member(*node, key, where));
    node = member;
  }
  return node;
}

// The number of components of the cleaned `path`: "/" -> 0, "/a" -> 1, "/a/b/" -> 2.
size_t path_depth(std::string_view path) {
  const std::string clean = clean_path(path);
  size_t depth = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    depth += clean[i] != '/' && (i == 0 || clean[i - 1] == '/');  // the first character of a component
  }
  return depth;
}

// True when `entry` is an object whose `key` is a string naming the same path as `clean`.
bool same_path(const Json& entry, const char* key, const std::string& clean) {
  if (!entry.is_object()) {
    return false;
  }
  const auto it = entry.find(key);
  if (it == entry.end() || !it->is_string()) {
    return false;
  }
  const auto& path = it->get_ref<const std::string&>();
  return is_clean_path(path) ? path == clean : clean_path(path) == clean;
}

// Equality that ignores the order of object keys (a runtime may write a hook's keys in any order).
bool same_value(const Json& a, const Json& b) {
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) {
      return false;
    }
    for (const auto& [key, value] : a.items()) {
      const auto it = b.find(key);
      if (it == b.end() || !same_value(value, *it)) {
        return false;
      }
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const Json& x, const Json& y) { return same_value(x, y); });
  }
  return a == b;
}

void push_unique(Json& list, Json item) {
  if (std::none_of(list.begin(), list.end(),
                   [&](const Json& existing) { return same_value(existing, item); })) {
    list.push_back(std::move(item));
  }
}

// `value` when it is an integer in 0..UINT32_MAX (a uid or gid as the OCI spec types them).
std::optional<uint32_t> as_uint32(const Json& value) {
  if (value.is_number_unsigned()) {
    const auto n = value.get<uint64_t>();
    return n <= UINT32_MAX ? std::optional<uint32_t>(static_cast<uint32_t>(n)) : std::nullopt;
  }
  if (value.is_number_integer()) {
    const auto n = value.get<int64_t>();
    return n >= 0 && n <= UINT32_MAX ? std::optional<uint32_t>(static_cast<uint32_t>(n)) : std::nullopt;
  }
  return std::nullopt;
}

// process.user.<key> when it is an integer in 1..UINT32_MAX; the owner CDI gives unowned nodes.
std::optional<uint32_t> container_user_id(const Json& config, const char* key) {
  const auto process = config.find("process");
  if (process == config.end() || !process->is_object()) {
    return std::nullopt;
  }
  const auto user = process->find("user");
  if (user == process->end() || !user->is_object()) {
    return std::nullopt;
  }
  const auto id = user->find(key);
  if (id == user->end()) {
    return std::nullopt;
  }
  const auto value = as_uint32(*id);
  return value && *value > 0 ? value : std::nullopt;
}

// ---- env ---------------------------------------------------------------------------------------

// The key of "KEY=VALUE" (empty when the entry has none).
std::string_view env_key(std::string_view entry) {
  const auto eq = entry.find('=');
  return eq == std::string_view::npos ? std::string_view() : entry.substr(0, eq);
}

// Replaces every entry of `list` that names `key` ("KEY=..." or a bare "KEY", which getenv ignores but
// which names the same variable) with `entry`; false when there is none.
template <class List, class Text>
bool replace_env(List& list, std::string_view key, const std::string& entry, Text text_of) {
  bool replaced = false;
  for (auto& existing : list) {
    const std::optional<std::string_view> text = text_of(existing);
    if (text && text->starts_with(key) && (text->size() == key.size() || (*text)[key.size()] == '=')) {
      existing = entry;
      replaced = true;
    }
  }
  return replaced;
}

Result<std::vector<std::string>> resolve_env(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const auto& entry : env) {
    const auto key = env_key(entry);
    if (key.empty()) {
      return fail("invalid environment variable " + quote(entry));
    }
    if (!replace_env(out, key, entry,
                     [](const std::string& e) { return std::optional<std::string_view>(e); })) {
      out.push_back(entry);
    }
  }
  return out;
}

Result<void> apply_env(Json& config, const std::vector<std::string>& env) {
  if (env.empty()) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const auto list, array_at(config, {"process", "env"}));
  for (const auto& entry : env) {
    const auto text_of = [](const Json& e) {
      return e.is_string() ? std::optional<std::string_view>(e.get_ref<const std::string&>()) : std::nullopt;
    };
    if (!replace_env(*list, env_key(entry), entry, text_of)) {
      list->push_back(entry);
    }
  }
  return {};
}

// ---- device nodes ------------------------------------------------------------------------------

Result<DeviceEntry> resolve_device(const DeviceNode& node, const ProcessOwner& owner, const StatNode& stat) {
  const std::string context = "CDI device " + quote(node.path);
  DeviceEntry out{.path = node.path,
                  .host_path = node.host_path.empty() ? node.path : node.host_path,
                  .type = node.type,
                  .major = node.major.value_or(0),
                  .minor = node.minor.value_or(0),
                  .file_mode = node.file_mode,
                  .uid = node.uid ? node.uid : owner.uid,
                  .gid = node.gid ? node.gid : owner.gid};
  // As the reference: a type and a non-zero major (or a fifo) are enough to trust the spec.
  const bool minimal = !out.type.empty() && (out.major != 0 || out.type == "p");
  if (!minimal || !out.file_mode) {
    const auto host = stat(out.host_path);
    if (!host) {
      if (!minimal) {
        return fail_with(context, host.error());
      }
    } else {
      if (!out.file_mode) {
        out.file_mode = host->mode;
      }
      if (!minimal) {
        const std::string host_type(1, host->type);
        if (out.type.empty()) {
          out.type = host_type;
        } else if (out.type != host_type) {
          return fail(context + ": host type mismatch (" + out.type + ", " + host_type + ")");
        }
        if (out.major == 0 && out.type != "p") {
          out.major = host->major;
          out.minor = host->minor;
        }
      }
    }
  }
  if (out.type != "b" && out.type != "c" && out.type != "u" && out.type != "p") {
    return fail(context + ": invalid device type " + quote(out.type));
  }
  return out;
}

// `items` with one entry per cleaned path (`path_of` an entry): the last, in its own place. Each path is
// cleaned once (apply_edits runs at every GPU container's start).
template <class T, class PathOf>
std::vector<T> last_per_path(std::vector<T> items, PathOf path_of) {
  std::unordered_set<std::string> seen;
  std::vector<T> out;
  out.reserve(items.size());
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (seen.insert(clean_path(path_of(*it))).second) {
      out.push_back(std::move(*it));
    }
  }
  std::ranges::reverse(out);
  return out;
}

// Each node resolved; one device per cleaned path (a later entry replaces an earlier one, in its own
// place); an allow rule for each b and c node unless the very same rule is there.
Result<void> resolve_devices(const std::vector<DeviceNode>& nodes, const ProcessOwner& owner,
                             const StatNode& stat, ResolvedEdits& out) {
  for (const auto& node : nodes) {
    GPUCTK_TRY_ASSIGN(auto device, resolve_device(node, owner, stat));
    if (device.type == "b" || device.type == "c") {
      DeviceRule rule{device.type, device.major, device.minor,
                      node.permissions.empty() ? "rwm" : node.permissions};
      if (std::ranges::find(out.rules, rule) == out.rules.end()) {
        out.rules.push_back(std::move(rule));
      }
    }
    out.devices.push_back(std::move(device));
  }
  out.devices = last_per_path(std::move(out.devices), [](const DeviceEntry& d) { return d.path; });
  return {};
}

Result<void> apply_device_nodes(Json& config, const std::vector<DeviceEntry>& devices,
                                const std::vector<DeviceRule>& new_rules) {
  if (devices.empty()) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const auto list_json, array_at(config, {"linux", "devices"}));
  auto& list = list_json->get_ref<Json::array_t&>();
  for (const auto& device : devices) {
    const std::string clean = clean_path(device.path);
    std::erase_if(list, [&](const Json& entry) { return same_path(entry, "path", clean); });
    Json entry = Json::object();
    entry["path"] = device.path;
    entry["type"] = device.type;
    entry["major"] = device.major;
    entry["minor"] = device.minor;
    if (device.file_mode) {
      entry["fileMode"] = *device.file_mode;
    }
    if (device.uid) {
      entry["uid"] = *device.uid;
    }
    if (device.gid) {
      entry["gid"] = *device.gid;
    }
    list.push_back(std::move(entry));
  }
  if (new_rules.empty()) {
    return {};
  }
  // linux.devices is not used below: adding linux.resources may move it (ordered_json).
  GPUCTK_TRY_ASSIGN(const auto found, array_at(config, {"linux", "resources", "devices"}));
  auto& rules = found->get_ref<Json::array_t&>();
  // The rules already there by (major, minor), so a new rule is compared only with those that could
  // equal it; rules without integer numbers are compared with every new rule.
  std::multimap<std::pair<int64_t, int64_t>, size_t> rules_by_number;
  std::vector<size_t> other_rules;
  const auto index_rule = [&](size_t i) {
    const Json& rule = rules[i];
    const auto major = rule.is_object() ? rule.find("major") : rule.end();
    const auto minor = rule.is_object() ? rule.find("minor") : rule.end();
    if (major != rule.end() && minor != rule.end() && major->is_number_integer() &&
        minor->is_number_integer()) {
      rules_by_number.emplace(std::pair(major->get<int64_t>(), minor->get<int64_t>()), i);
    } else {
      other_rules.push_back(i);
    }
  };
  for (size_t i = 0; i < rules.size(); ++i) {
    index_rule(i);
  }
  for (const auto& wanted : new_rules) {
    Json rule = Json::object();
    rule["allow"] = true;
    rule["type"] = wanted.type;
    rule["major"] = wanted.major;
    rule["minor"] = wanted.minor;
    rule["access"] = wanted.access;
    const auto same = [&](size_t i) { return same_value(rules[i], rule); };
    const auto [first, last] = rules_by_number.equal_range({wanted.major, wanted.minor});
    if (std::none_of(first, last, [&](const auto& entry) { return same(entry.second); }) &&
        std::ranges::none_of(other_rules, same)) {
      rules.push_back(std::move(rule));
      index_rule(rules.size() - 1);
    }
  }
  return {};
}

// ---- netDevices --------------------------------------------------------------------------------

Result<void> apply_net_devices(Json& config, const std::vector<NetDevice>& net_devices) {
  if (net_devices.empty()) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const auto linux_section, object_member(config, "linux", "linux"));
  GPUCTK_TRY_ASSIGN(const auto map, object_member(*linux_section, "netDevices", "linux.netDevices"));
  for (const auto& device : net_devices) {
    Json value = Json::object();
    value["name"] = device.name;
    (*map)[device.host_interface_name] = std::move(value);
  }
  return {};
}

// ---- mounts ------------------------------------------------------------------------------------

Result<void> apply_mounts(Json& config, const std::vector<Mount>& mounts) {
  if (mounts.empty()) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const auto list_member, array_member(config, "mounts", "mounts"));
  auto& list = list_member->get_ref<Json::array_t&>();
  for (const auto& mount : mounts) {
    const std::string clean = clean_path(mount.container_path);
    std::erase_if(list, [&](const Json& entry) { return same_path(entry, "destination", clean); });
    Json entry = Json::object();  // the OCI key order
    entry["destination"] = mount.container_path;
    if (!mount.type.empty()) {
      entry["type"] = mount.type;
    }
    entry["source"] = mount.host_path;
    if (!mount.options.empty()) {
      entry["options"] = mount.options;
    }
    list.push_back(std::move(entry));
  }

  // Parents before children: a stable sort by depth, so equal depths keep their order.
  std::vector<std::pair<size_t, Json>> by_depth;
  by_depth.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const auto destination = list[i].is_object() ? list[i].find("destination") : list[i].end();
    if (!list[i].is_object() || destination == list[i].end() || !destination->is_string()) {
      return fail("OCI config: mounts[" + std::to_string(i) + "] has no destination");
    }
    by_depth.emplace_back(path_depth(destination->get_ref<const std::string&>()), std::move(list[i]));
  }
  std::stable_sort(by_depth.begin(), by_depth.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  list.clear();
  for (auto& [depth, entry] : by_depth) {
    list.push_back(std::move(entry));
  }
  return {};
}

// ---- hooks -------------------------------------------------------------------------------------

Result<void> apply_hooks(Json& config, const std::vector<Hook>& hooks) {
  for (const auto& hook : hooks) {
    GPUCTK_TRY_ASSIGN(const auto list, array_at(config, {"hooks", hook.hook_name.c_str()}));
    Json entry = Json::object();
    entry["path"] = hook.path;
    if (!hook.args.empty()) {
      entry["args"] = hook.args;
    }
    if (!hook.env.empty()) {
      entry["env"] = hook.env;
    }
    if (hook.timeout) {
      entry["timeout"] = *hook.timeout;
    }
    push_unique(*list, std::move(entry));
  }
  return {};
}

// ---- intelRdt, additionalGids ------------------------------------------------------------------

Result<void> apply_intel_rdt(Json& config, const std::optional<IntelRdt>& rdt) {
  if (!rdt) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const auto linux_section, object_member(config, "linux", "linux"));
  Json value = Json::object();  // OCI LinuxIntelRdt; empty fields are omitted as in Go
  if (!rdt->clos_id.empty()) {
    value["closID"] = rdt->clos_id;
  }
  if (!rdt->l3_cache_schema.empty()) {
    value["l3CacheSchema"] = rdt->l3_cache_schema;
  }
  if (!rdt->mem_bw_schema.empty()) {
    value["memBwSchema"] = rdt->mem_bw_schema;
  }
  if (rdt->schemata && !rdt->schemata->empty()) {
    value["schemata"] = *rdt->schemata;
  }
  if (rdt->enable_monitoring) {
    value["enableMonitoring"] = true;
  }
  if (rdt->enable_cmt) {
    value["enableCMT"] = true;
  }
  if (rdt->enable_mbm) {
    value["enableMBM"] = true;
  }
  (*linux_section)["intelRdt"] = std::move(value);
  return {};
}

Result<void> apply_additional_gids(Json& config, const std::vector<uint32_t>& gids) {
  if (std::all_of(gids.begin(), gids.end(), [](uint32_t gid) { return gid == 0; })) {
    return {};
  }
  const auto process = object_member(config, "process", "process");
  if (!process) {
    return std::unexpected(process.error());
  }
  const bool had_user = (*process)->contains("user") && !(**process)["user"].is_null();
  const auto user = object_member(**process, "user", "process.user");
  if (!user) {
    return std::unexpected(user.error());
  }
  if (!had_user) {
    // uid and gid are required members of an OCI user.
    (**user)["uid"] = 0;
    (**user)["gid"] = 0;
  }
  GPUCTK_TRY_ASSIGN(const auto list, array_member(**user, "additionalGids", "process.user.additionalGids"));
  // A set of what is there: the config is the container's, its list as long as config.json's bound lets it.
  std::set<uint32_t> had;
  for (const auto& entry : *list) {
    if (const auto gid = as_uint32(entry)) {
      had.insert(*gid);
    }
  }
  bool added = false;
  for (const uint32_t gid : gids) {
    if (gid != 0 && !had.contains(gid)) {
      had.insert(gid);
      list->push_back(gid);
      added = true;
    }
  }
  if (added && list->size() > k_max_additional_gids) {
    return fail("OCI config: process.user.additionalGids: " + std::to_string(list->size()) +
                " groups, more than Linux allows (" + std::to_string(k_max_additional_gids) + ")");
  }
  return {};
}

}  // namespace

Result<HostNode> stat_host_node(const std::string& host_path) {
  struct stat st {};
  if (::lstat(host_path.c_str(), &st) != 0) {
    return fail_errno("stat " + host_path, errno);
  }
  HostNode node;
  if (S_ISCHR(st.st_mode)) {
    node.type = 'c';
  } else if (S_ISBLK(st.st_mode)) {
    node.type = 'b';
  } else if (S_ISFIFO(st.st_mode)) {
    node.type = 'p';
  } else {
    return fail("stat " + host_path + ": not a device node");
  }
  node.major = static_cast<int64_t>(major(st.st_rdev));
  node.minor = static_cast<int64_t>(minor(st.st_rdev));
  node.mode = st.st_mode & 0777;
  return node;
}

ProcessOwner process_owner(const nlohmann::ordered_json& config) {
  return {container_user_id(config, "uid"), container_user_id(config, "gid")};
}

Result<ResolvedEdits> resolve_edits(const ContainerEdits& edits, const ProcessOwner& owner,
                                    const StatNode& stat) {
  ResolvedEdits out;
  GPUCTK_TRY_ASSIGN(out.env, resolve_env(edits.env));
  GPUCTK_TRY(resolve_devices(edits.device_nodes, owner, stat, out));
  out.net_devices = edits.net_devices;
  out.mounts = last_per_path(edits.mounts, [](const Mount& m) { return m.container_path; });
  // Parents before children: a stable sort by depth, so equal depths keep their order.
  std::ranges::stable_sort(out.mounts, {}, [](const Mount& m) { return path_depth(m.container_path); });
  for (const auto& hook : edits.hooks) {
    if (std::ranges::find(k_hook_names, hook.hook_name) == k_hook_names.end()) {
      return fail("CDI hook " + quote(hook.path) + ": unknown hook name " + quote(hook.hook_name));
    }
  }
  for (const auto& hook : edits.hooks) {
    if (std::ranges::find(out.hooks, hook) == out.hooks.end()) {
      out.hooks.push_back(hook);
    }
  }
  out.intel_rdt = edits.intel_rdt;
  std::set<uint32_t> seen;
  for (const uint32_t gid : edits.additional_gids) {
    if (gid != 0 && seen.insert(gid).second) {
      out.additional_gids.push_back(gid);
    }
  }
  if (out.additional_gids.size() > k_max_additional_gids) {
    return fail("CDI additionalGids: " + std::to_string(out.additional_gids.size()) +
                " groups, more than Linux allows (" + std::to_string(k_max_additional_gids) + ")");
  }
  return out;
}

Result<void> apply_edits(nlohmann::ordered_json& config, const ContainerEdits& edits, const StatNode& stat) {
  if (!config.is_object()) {
    return fail("OCI config: the document is " + oci::json_type_phrase(config) + ", expected an object");
  }
  GPUCTK_TRY_ASSIGN(const auto resolved, resolve_edits(edits, process_owner(config), stat));
  // Work on a copy so that an error leaves the caller's config untouched.
  Json work = config;
  try {
    Result<void> result = apply_env(work, resolved.env);
    if (result) {
      result = apply_device_nodes(work, resolved.devices, resolved.rules);
    }
    if (result) {
      result = apply_net_devices(work, resolved.net_devices);
    }
    if (result) {
      result = apply_mounts(work, resolved.mounts);
    }
    if (result) {
      result = apply_hooks(work, resolved.hooks);
    }
    if (result) {
      result = apply_intel_rdt(work, resolved.intel_rdt);
    }
    if (result) {
      result = apply_additional_gids(work, resolved.additional_gids);
    }
    if (!result) {
      return result;
    }
  } catch (const nlohmann::json::exception& e) {
    // Unreachable with the type checks above; a safety net so no exception leaves the layer.
    return fail(std::string("OCI config: ") + e.what());
  }
  config = std::move(work);
  return {};
}

void append(ContainerEdits& into, const ContainerEdits& from) {
  into.env.insert(into.env.end(), from.env.begin(), from.env.end());
  into.device_nodes.insert(into.device_nodes.end(), from.device_nodes.begin(), from.device_nodes.end());
  into.mounts.insert(into.mounts.end(), from.mounts.begin(), from.mounts.end());
  into.hooks.insert(into.hooks.end(), from.hooks.begin(), from.hooks.end());
  if (from.intel_rdt) {
    into.intel_rdt = from.intel_rdt;
  }
  into.additional_gids.insert(into.additional_gids.end(), from.additional_gids.begin(),
                              from.additional_gids.end());
  into.net_devices.insert(into.net_devices.end(), from.net_devices.begin(), from.net_devices.end());
}

}  // namespace gpuctk::cdi
