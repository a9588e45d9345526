#include "inject/spec_resolver.hpp"

#include <algorithm>
#include <set>
#include <span>
#include <string_view>

#include "cdi/hook_args.hpp"
#include "discover/driver_files.hpp"
#include "discover/driver_version.hpp"
#include "discover/host_fs.hpp"
#include "inject/in_memory_spec.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::inject {

namespace {

std::string quote_name(const std::string& name) {
  return "\"" + name + "\"";
}

}  // namespace

const std::string& RunningDriver::version() {
  if (!m_version) {
    auto parsed = read_parsed(discover::under_root(m_cfg.dev_root, "/proc/driver/nvidia/version"),
                              discover::parse_driver_version);
    m_version = parsed ? parsed->version : std::string();
  }
  return *m_version;
}

std::string spec_driver_version(const cdi::Spec& spec) {
  constexpr std::string_view flag = cdi::k_opt_host_driver_version;
  for (const auto& hook : spec.container_edits.hooks) {
    for (auto it = hook.args.begin(); it != hook.args.end(); ++it) {
      if (*it == flag && it + 1 != hook.args.end()) {
        return *(it + 1);
      }
      if (it->starts_with(flag) && it->size() > flag.size() && (*it)[flag.size()] == '=') {
        return it->substr(flag.size() + 1);
      }
    }
  }
  for (const auto& mount : spec.container_edits.mounts) {
    const auto slash = mount.container_path.rfind('/');
    if (auto version = discover::library_driver_version(
            std::string_view(mount.container_path).substr(slash + 1), "libcuda.so.")) {
      return *version;
    }
  }
  return {};
}

Result<void> SpecResolver::load(bool need_default_kind) {
  m_registry = cdi::scan_spec_dirs(m_cfg.spec_dirs);
  for (const auto& error : m_registry.errors) {
    m_log.warning("CDI spec problem: " + error);
  }
  if (!need_default_kind) {
    return {};
  }
  const std::string prefix = m_cfg.request.default_kind + "=";
  const cdi::ResolvedDevice* any = nullptr;
  std::set<std::string> files;
  for (const auto& [name, device] : m_registry.devices) {
    if (name.starts_with(prefix)) {
      any = any != nullptr ? any : &device;
      files.insert(device.spec_file);
    }
  }
  const std::string& running = m_driver.version();
  std::string why;
  if (any == nullptr) {
    why = "no spec for " + m_cfg.request.default_kind + " in the spec directories";
  } else if (const auto made_for = spec_driver_version(*any->spec); !running.empty() && made_for != running) {
    why = any->spec_file + " was generated for driver " + (made_for.empty() ? "(unknown)" : made_for) +
          ", running driver is " + running;
  }
  if (why.empty()) {
    for (const auto& f : files) {
      m_source += (m_source.empty() ? "" : ", ") + f;
    }
    return {};
  }
  m_log.warning(why + "; building the spec in memory");
  return build_in_memory(why);
}

Result<std::vector<const cdi::ResolvedDevice*>> SpecResolver::find(
    const std::vector<std::string>& names) const {
  std::vector<const cdi::ResolvedDevice*> out;
  for (const auto& name : names) {
    const auto it = m_registry.devices.find(name);
    if (it == m_registry.devices.end()) {
      return fail("unknown device " + quote_name(name) + " (" + existing(name) + ")");
    }
    out.push_back(&it->second);
  }
  return out;
}

std::shared_ptr<const cdi::Spec> SpecResolver::default_spec() const {
  const std::string prefix = m_cfg.request.default_kind + "=";
  for (const auto& [name, device] : m_registry.devices) {
    if (name.starts_with(prefix)) {
      return device.spec;
    }
  }
  return nullptr;
}

// "devices: 0, 0:0, 1, …" for the error of an unknown device: the names in sorted order (indexes and
// MIG indexes sort before UUIDs and "all"), at most k_listed_devices of them and "and N more": a node
// with 8 GPUs in MIG mode has over a hundred names, kilobytes on one line.
std::string SpecResolver::existing(const std::string& wanted) const {
  const auto eq = wanted.find('=');
  const std::string prefix = wanted.substr(0, eq + 1);
  std::vector<std::string_view> names;
  for (const auto& [name, device] : m_registry.devices) {
    if (name.starts_with(prefix)) {
      names.push_back(std::string_view(name).substr(prefix.size()));
    }
  }
  if (names.empty()) {
    return "no devices of " + wanted.substr(0, eq) + " are defined";
  }
  const size_t listed = std::min(names.size(), k_listed_devices);
  std::string list = "devices: " + join(std::span(names).first(listed), ", ");
  if (listed < names.size()) {
    list += " and " + std::to_string(names.size() - listed) + " more; gpuctk cdi list shows all";
  }
  return list;
}

// The configured kind's devices of the spec directories are replaced, all of them: a stale spec's
// devices must not stay resolvable beside the fresh ones.
Result<void> SpecResolver::build_in_memory(const std::string& why) {
  GPUCTK_TRY_ASSIGN(auto built, build_in_memory_spec(m_cfg, why));
  const std::string prefix = m_cfg.request.default_kind + "=";
  std::erase_if(m_registry.devices, [&](const auto& entry) { return entry.first.starts_with(prefix); });
  for (auto& device : built.devices) {
    auto name = device.name.str();
    m_registry.devices.emplace(std::move(name), std::move(device));
  }
  m_source = std::move(built.source);
  return {};
}

}  // namespace gpuctk::inject
