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
#include <string_view>
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
  if (id == user->end() || !id->is_number_integer()) {
    return std::nullopt;
  }
  if (id->is_number_unsigned()) {
    const auto value = id->get<uint64_t>();
    if (value > 0 && value <= std::numeric_limits<uint32_t>::max()) {
      return static_cast<uint32_t>(value);
    }
    return std::nullopt;
  }
  const auto value = id->get<int64_t>();
  if (value > 0 && value <= std::numeric_limits<uint32_t>::max()) {
    return static_cast<uint32_t>(value);
  }
  return std::nullopt;
}

// ---- env ---------------------------------------------------------------------------------------

Result<void> apply_env(Json& config, const std::vector<std::string>& env) {
  if (env.empty()) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const auto list, array_at(config, {"process", "env"}));
  for (const auto& entry : env) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return fail("invalid environment variable " + quote(entry));
    }
    const std::string_view key(entry.data(), eq);
    bool replaced = false;
    for (auto& existing : *list) {
      if (!existing.is_string()) {
        continue;
      }
      const std::string_view text = existing.get_ref<const std::string&>();
      // "KEY=..." or a bare "KEY" (which getenv ignores, but it names the same variable).
      if (text.starts_with(key) && (text.size() == key.size() || text[key.size()] == '=')) {
        existing = entry;
        replaced = true;
      }
    }
    if (!replaced) {
      list->push_back(entry);
    }
  }
  return {};
}

// ---- device nodes ------------------------------------------------------------------------------

// A device node with everything the OCI config needs.
struct ResolvedNode {
  std::string type;
  int64_t major = 0;
  int64_t minor = 0;
  std::optional<uint32_t> file_mode;
};

Result<ResolvedNode> resolve_node(const DeviceNode& node, const StatNode& stat) {
  const std::string context = "CDI device " + quote(node.path);
  ResolvedNode out{.type = node.type,
                   .major = node.major.value_or(0),
                   .minor = node.minor.value_or(0),
                   .file_mode = node.file_mode};
  // As the reference: a type and a non-zero major (or a fifo) are enough to trust the spec.
  const bool minimal = !out.type.empty() && (out.major != 0 || out.type == "p");
  if (!minimal || !out.file_mode) {
    const std::string& host_path = node.host_path.empty() ? node.path : node.host_path;
    const auto host = stat(host_path);
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

Result<void> apply_device_nodes(Json& config, const std::vector<DeviceNode>& nodes, const StatNode& stat) {
  if (nodes.empty()) {
    return {};
  }
  const auto process_uid = container_user_id(config, "uid");
  const auto process_gid = container_user_id(config, "gid");
  const auto devices = array_at(config, {"linux", "devices"});
  if (!devices) {
    return std::unexpected(devices.error());
  }
  // Adding a key to an object can copy its other members (ordered_map is a vector of pairs with const
  // keys), so `list` is looked up again once linux.resources.devices has been created.
  Json::array_t* list = &(*devices)->get_ref<Json::array_t&>();
  Json::array_t* rules = nullptr;  // linux.resources.devices, looked up when first needed
  // The rules already there by (major, minor), so a new rule is compared only with those that could
  // equal it; rules without integer numbers are compared with every new rule.
  std::multimap<std::pair<int64_t, int64_t>, size_t> rules_by_number;
  std::vector<size_t> other_rules;
  const auto index_rule = [&](size_t i) {
    const Json& rule = (*rules)[i];
    const auto major = rule.is_object() ? rule.find("major") : rule.end();
    const auto minor = rule.is_object() ? rule.find("minor") : rule.end();
    if (major != rule.end() && minor != rule.end() && major->is_number_integer() &&
        minor->is_number_integer()) {
      rules_by_number.emplace(std::pair(major->get<int64_t>(), minor->get<int64_t>()), i);
    } else {
      other_rules.push_back(i);
    }
  };
  for (const auto& node : nodes) {
    GPUCTK_TRY_ASSIGN(const auto resolved, resolve_node(node, stat));
    const auto uid = node.uid ? node.uid : process_uid;
    const auto gid = node.gid ? node.gid : process_gid;

    const std::string clean = clean_path(node.path);
    std::erase_if(*list, [&](const Json& entry) { return same_path(entry, "path", clean); });
    Json device = Json::object();
    device["path"] = node.path;
    device["type"] = resolved.type;
    device["major"] = resolved.major;
    device["minor"] = resolved.minor;
    if (resolved.file_mode) {
      device["fileMode"] = *resolved.file_mode;
    }
    if (uid) {
      device["uid"] = *uid;
    }
    if (gid) {
      device["gid"] = *gid;
    }
    list->push_back(std::move(device));

    if (resolved.type == "b" || resolved.type == "c") {
      if (rules == nullptr) {
        GPUCTK_TRY_ASSIGN(const auto found, array_at(config, {"linux", "resources", "devices"}));
        rules = &found->get_ref<Json::array_t&>();
        GPUCTK_TRY_ASSIGN(const auto again, array_at(config, {"linux", "devices"}));
        list = &again->get_ref<Json::array_t&>();
        for (size_t i = 0; i < rules->size(); ++i) {
          index_rule(i);
        }
      }
      Json rule = Json::object();
      rule["allow"] = true;
      rule["type"] = resolved.type;
      rule["major"] = resolved.major;
      rule["minor"] = resolved.minor;
      rule["access"] = node.permissions.empty() ? "rwm" : node.permissions;
      const auto same = [&](size_t i) { return same_value((*rules)[i], rule); };
      const auto [first, last] = rules_by_number.equal_range({resolved.major, resolved.minor});
      if (std::none_of(first, last, [&](const auto& entry) { return same(entry.second); }) &&
          std::ranges::none_of(other_rules, same)) {
        rules->push_back(std::move(rule));
        index_rule(rules->size() - 1);
      }
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
  if (hooks.empty()) {
    return {};
  }
  for (const auto& hook : hooks) {
    if (std::find(k_hook_names.begin(), k_hook_names.end(), hook.hook_name) == k_hook_names.end()) {
      return fail("CDI hook " + quote(hook.path) + ": unknown hook name " + quote(hook.hook_name));
    }
  }
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
  for (const uint32_t gid : gids) {
    if (gid != 0) {
      push_unique(*list, Json(gid));
    }
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

Result<void> apply_edits(nlohmann::ordered_json& config, const ContainerEdits& edits, const StatNode& stat) {
  if (!config.is_object()) {
    return fail("OCI config: the document is " + oci::json_type_phrase(config) + ", expected an object");
  }
  // Work on a copy so that an error leaves the caller's config untouched.
  Json work = config;
  try {
    Result<void> result = apply_env(work, edits.env);
    if (result) {
      result = apply_device_nodes(work, edits.device_nodes, stat);
    }
    if (result) {
      result = apply_net_devices(work, edits.net_devices);
    }
    if (result) {
      result = apply_mounts(work, edits.mounts);
    }
    if (result) {
      result = apply_hooks(work, edits.hooks);
    }
    if (result) {
      result = apply_intel_rdt(work, edits.intel_rdt);
    }
    if (result) {
      result = apply_additional_gids(work, edits.additional_gids);
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
