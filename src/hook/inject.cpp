#include "hook/inject.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "cdi/apply.hpp"
#include "cdi/names.hpp"
#include "cdi/registry.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "discover/driver_files.hpp"
#include "discover/driver_version.hpp"
#include "discover/gpu_information.hpp"
#include "discover/host_fs.hpp"
#include "discover/nvidia_caps.hpp"
#include "hook/requirements.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::hook {

namespace {

// What a hook we write runs with when a spec gave it no environment: never the container's.
const std::vector<std::string> k_safe_hook_env{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};

// The running driver's version, from /proc, read at most once per request (the requirements and the
// spec staleness check both want it). Empty when unknown.
class RunningDriver {
 public:
  explicit RunningDriver(const Config& cfg) : m_cfg(cfg) {}
  const std::string& version() {
    if (!m_version) {
      auto parsed = read_parsed(discover::under_root(m_cfg.dev_root, "/proc/driver/nvidia/version"),
                                discover::parse_driver_version);
      m_version = parsed ? parsed->version : std::string();
    }
    return *m_version;
  }

 private:
  const Config& m_cfg;
  std::optional<std::string> m_version;
};

// The driver version a generated spec was made for: the enable-cuda-compat hook's argument, else the
// version suffix of the libcuda it mounts. Empty when the spec does not say.
std::string spec_driver_version(const cdi::Spec& spec) {
  for (const auto& hook : spec.container_edits.hooks) {
    const auto it = std::ranges::find(hook.args, "--host-driver-version");
    if (it != hook.args.end() && it + 1 != hook.args.end()) {
      return *(it + 1);
    }
  }
  for (const auto& mount : spec.container_edits.mounts) {
    const auto slash = mount.container_path.rfind('/');
    if (auto version =
            discover::library_driver_version(std::string_view(mount.container_path).substr(slash + 1), "libcuda.so.")) {
      return *version;
    }
  }
  return {};
}

// The devices that can be resolved, from the spec directories or an in-memory spec.
class Resolver {
 public:
  Resolver(const Config& cfg, const Log& log, RunningDriver& driver) : m_cfg(cfg), m_log(log), m_driver(driver) {}

  // Loads the spec directories; replaces the configured kind's devices with an in-memory spec when
  // the installed one is missing or stale.
  Result<void> load(bool need_default_kind) {
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

  // The devices named `names` (qualified), or an error listing what exists.
  Result<std::vector<const cdi::ResolvedDevice*>> find(const std::vector<std::string>& names) const {
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

  // A spec of the configured kind (for "none": its common edits only).
  [[nodiscard]] std::shared_ptr<const cdi::Spec> default_spec() const {
    const std::string prefix = m_cfg.request.default_kind + "=";
    for (const auto& [name, device] : m_registry.devices) {
      if (name.starts_with(prefix)) {
        return device.spec;
      }
    }
    return nullptr;
  }

  [[nodiscard]] const std::string& source() const { return m_source; }

 private:
  static std::string quote_name(const std::string& name) { return "\"" + name + "\""; }

  [[nodiscard]] std::string existing(const std::string& wanted) const {
    const auto eq = wanted.find('=');
    const std::string prefix = wanted.substr(0, eq + 1);
    std::string list;
    for (const auto& [name, device] : m_registry.devices) {
      if (name.starts_with(prefix)) {
        list += (list.empty() ? "" : ", ") + name.substr(prefix.size());
      }
    }
    return list.empty() ? "no devices of " + wanted.substr(0, eq) + " are defined" : "devices: " + list;
  }

  Result<void> build_in_memory(const std::string& why) {
    discover::DiscoverOptions options;
    options.driver_root = m_cfg.driver_root;
    options.dev_root = m_cfg.dev_root;
    options.mode = discover::Mode::proc;
    auto inventory = discover::discover(options);
    if (!inventory) {
      return fail_with(why + "; building it in memory failed", inventory.error());
    }
    auto kind = cdi::parse_qualified_name(m_cfg.request.default_kind + "=x");
    if (!kind) {
      return fail_with("default-kind", kind.error());
    }
    cdi::BuildOptions build;
    build.vendor = kind->vendor;
    build.klass = kind->klass;
    build.hook_path = m_cfg.hook_path;
    auto spec = cdi::build_spec(*inventory, build);
    if (!spec) {
      return fail_with(why + "; building it in memory failed", spec.error());
    }
    auto shared = std::make_shared<const cdi::Spec>(std::move(*spec));
    std::erase_if(m_registry.devices,
                  [&](const auto& entry) { return entry.first.starts_with(m_cfg.request.default_kind + "="); });
    for (size_t i = 0; i < shared->devices.size(); ++i) {
      cdi::ResolvedDevice device;
      device.name = cdi::QualifiedName{kind->vendor, kind->klass, shared->devices[i].name};
      device.spec_file = "(in memory)";
      device.spec = shared;
      device.device_index = i;
      m_registry.devices.emplace(device.name.str(), std::move(device));
    }
    m_source = "in-memory spec (driver " + inventory->driver_version + ")";
    return {};
  }

  const Config& m_cfg;
  const Log& m_log;
  RunningDriver& m_driver;
  cdi::Registry m_registry;
  std::string m_source;
};

// Keeps only the driver files the requested capabilities need, and the symlinks into kept files.
void filter_capabilities(cdi::ContainerEdits& edits, const discover::CapabilitySet& caps) {
  if (caps == discover::CapabilitySet::all()) {
    return;
  }
  std::set<std::string> dropped;
  std::erase_if(edits.mounts, [&](const cdi::Mount& m) {
    const auto need = discover::file_need(m.container_path);
    bool keep = false;
    switch (need.kind) {
      case discover::FileNeed::Kind::always: keep = true; break;
      case discover::FileNeed::Kind::unknown: keep = false; break;
      case discover::FileNeed::Kind::capability:
        keep = caps.has(need.capability) && (!need.is_32bit || caps.has(discover::Capability::compat32));
        break;
    }
    if (!keep) {
      dropped.insert(m.container_path);
    }
    return !keep;
  });
  // A link whose target is a dropped file (directly or through another dropped link) goes too.
  for (auto& hook : edits.hooks) {
    if (!cdi::is_create_symlinks_hook(hook)) {
      continue;
    }
    bool removed = true;
    while (removed) {
      removed = false;
      for (size_t i = 3; i + 1 < hook.args.size(); i += 2) {
        const auto& pair = hook.args[i + 1];
        const auto sep = pair.find("::");
        if (sep == std::string::npos) {
          continue;
        }
        const std::string target = pair.substr(0, sep);
        const std::string link = pair.substr(sep + 2);
        const std::string resolved =
            target.starts_with("/") ? target : link.substr(0, link.rfind('/') + 1) + target;
        if (dropped.contains(resolved)) {
          dropped.insert(link);
          hook.args.erase(hook.args.begin() + static_cast<std::ptrdiff_t>(i),
                          hook.args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
          removed = true;
          break;
        }
      }
    }
  }
  std::erase_if(edits.hooks, [](const cdi::Hook& h) { return cdi::is_create_symlinks_hook(h) && h.args.size() == 3; });
}

// Spec-wide edits of each spec once, before its first device; then the device's own (CDI order).
cdi::ContainerEdits collect(const std::vector<const cdi::ResolvedDevice*>& devices) {
  cdi::ContainerEdits edits;
  std::set<const cdi::Spec*> seen;
  for (const auto* device : devices) {
    if (seen.insert(device->spec.get()).second) {
      cdi::append(edits, device->spec->container_edits);
    }
    cdi::append(edits, device->device().container_edits);
  }
  return edits;
}

void make_hooks_safe(cdi::ContainerEdits& edits) {
  for (auto& hook : edits.hooks) {
    if (hook.env.empty()) {
      hook.env = k_safe_hook_env;
    }
  }
}

// The host directory to mount for CUDA_MPS_PIPE_DIRECTORY. The value comes from the container, so it is
// honoured only inside a configured MPS pipe root, checked after resolving symlinks on the host: a pod must
// not get /etc or / mounted writable by naming it.
Result<std::string> mps_pipe_directory(const std::string& requested, const Config& cfg) {
  const auto resolved = discover::resolve_in_root(cfg.dev_root, requested);
  const auto st = resolved ? discover::stat_path(*resolved) : std::nullopt;
  if (!st || !S_ISDIR(st->st_mode)) {
    return fail("CUDA_MPS_PIPE_DIRECTORY: " + discover::under_root(cfg.dev_root, requested) +
                " is not a directory on the host (is the MPS control daemon running?)");
  }
  const std::string inside = discover::strip_root(cfg.dev_root, *resolved);
  for (const auto& root : cfg.mps_pipe_roots) {
    if (inside == root || inside.starts_with(root + "/")) {
      return *resolved;
    }
  }
  std::string roots;
  for (const auto& root : cfg.mps_pipe_roots) {
    roots += (roots.empty() ? "" : ", ") + root;
  }
  return fail("CUDA_MPS_PIPE_DIRECTORY: " + requested + " resolves to " + inside +
              ", outside the MPS pipe roots (" + roots + "; config key mps-pipe-roots)");
}

// MIG management capabilities and the MPS pipe directory, which no spec device carries.
Result<void> add_extras(cdi::ContainerEdits& edits, const Request& request, const Config& cfg) {
  if (request.mig_config || request.mig_monitor) {
    auto minors = discover::read_mig_minors(cfg.dev_root);
    if (!minors) {
      return std::unexpected(minors.error());
    }
    struct Wanted {
      bool wanted;
      std::optional<uint32_t> minor;
      const char* what;
    };
    for (const auto& [wanted, minor, what] : {Wanted{request.mig_config, minors->config(), "config"},
                                               Wanted{request.mig_monitor, minors->monitor(), "monitor"}}) {
      if (!wanted) {
        continue;
      }
      if (!minor) {
        return fail(discover::under_root(cfg.dev_root, discover::k_mig_minors_path) + ": no MIG " + what +
                    " capability");
      }
      cdi::DeviceNode node;
      node.path = discover::capability_device_path(*minor);
      node.host_path = discover::under_root(cfg.dev_root, node.path);
      edits.device_nodes.push_back(std::move(node));
    }
  }
  if (!request.mps_pipe_directory.empty()) {
    auto host = mps_pipe_directory(request.mps_pipe_directory, cfg);
    if (!host) {
      return std::unexpected(host.error());
    }
    edits.mounts.push_back({*host, request.mps_pipe_directory, cdi::k_ipc_mount_options, ""});
  }
  return {};
}

Result<void> check_host_requirements(const Request& request, const Config& cfg, RunningDriver& driver) {
  if (request.requirements.empty()) {
    return {};
  }
  HostFacts facts;
  facts.driver_version = driver.version();
  facts.cuda_version = cuda_version_for_driver(facts.driver_version);
  // GPU brands cost a read per GPU: only when a constraint asks for one.
  const bool wants_brand = std::ranges::any_of(request.requirements, [](const Requirement& r) {
    return std::ranges::any_of(r.any_of, [](const std::vector<Constraint>& all) {
      return std::ranges::any_of(all, [](const Constraint& c) { return c.property == "brand"; });
    });
  });
  const std::string gpus_dir = discover::under_root(cfg.dev_root, "/proc/driver/nvidia/gpus");
  if (auto gpus = wants_brand ? discover::list_dir(gpus_dir) : Result<std::vector<discover::DirEntry>>{}) {
    for (const auto& entry : *gpus) {
      if (auto info = read_parsed(gpus_dir + "/" + entry.name + "/information", discover::parse_gpu_information)) {
        facts.brands.push_back(brand_for_model(info->model));
      }
    }
  }
  return check_requirements(request.requirements, facts);
}

Result<InjectResult> apply_resolved(nlohmann::ordered_json& config, const std::vector<const cdi::ResolvedDevice*>& devices,
                                    cdi::ContainerEdits edits, const std::string& source) {
  make_hooks_safe(edits);
  if (auto applied = cdi::apply_edits(config, edits); !applied) {
    return std::unexpected(applied.error());
  }
  InjectResult result;
  result.changed = true;
  result.spec_source = source;
  for (const auto* d : devices) {
    result.devices.push_back(d->name.str());
  }
  return result;
}

}  // namespace

Result<InjectResult> inject_request(nlohmann::ordered_json& config, const Config& cfg, const Log& log) {
  auto request = read_request(config, cfg.request);
  if (!request) {
    return std::unexpected(request.error());
  }
  for (const auto& line : request->log) {
    log.info(line);
  }
  if (!request->gpu_container) {
    return InjectResult{};
  }
  RunningDriver driver(cfg);
  if (auto ok = check_host_requirements(*request, cfg, driver); !ok) {
    return std::unexpected(ok.error());
  }

  std::vector<std::string> names;
  const std::string kind = cfg.request.default_kind;
  if (request->all) {
    names.push_back(kind + "=all");
  } else {
    for (const auto& id : request->devices) {
      names.push_back(kind + "=" + id);
    }
  }
  for (const auto& name : request->cdi_devices) {
    if (std::ranges::find(names, name) == names.end()) {
      names.push_back(name);
    }
  }
  const bool needs_default_kind =
      request->driver_only || std::ranges::any_of(names, [&](const std::string& n) { return n.starts_with(kind + "="); });

  Resolver resolver(cfg, log, driver);
  if (auto loaded = resolver.load(needs_default_kind); !loaded) {
    return std::unexpected(loaded.error());
  }
  auto devices = resolver.find(names);
  if (!devices) {
    return std::unexpected(devices.error());
  }
  cdi::ContainerEdits edits = collect(*devices);
  if (request->driver_only && devices->empty()) {
    const auto spec = resolver.default_spec();
    if (!spec) {
      return fail("NVIDIA_VISIBLE_DEVICES=none: no spec for " + kind);
    }
    edits = spec->container_edits;
  }
  filter_capabilities(edits, request->capabilities);
  if (auto extras = add_extras(edits, *request, cfg); !extras) {
    return std::unexpected(extras.error());
  }
  auto result = apply_resolved(config, *devices, std::move(edits), resolver.source());
  if (result) {
    log.info("injected " + (result->devices.empty() ? std::string("driver only") : join(result->devices, ",")) +
             " from " + result->spec_source);
  }
  return result;
}

Result<InjectResult> inject_devices(nlohmann::ordered_json& config, const std::vector<std::string>& names,
                                    const Config& cfg, const Log& log) {
  for (const auto& name : names) {
    if (auto parsed = cdi::parse_qualified_name(name); !parsed) {
      return std::unexpected(parsed.error());
    }
  }
  const std::string prefix = cfg.request.default_kind + "=";
  RunningDriver driver(cfg);
  Resolver resolver(cfg, log, driver);
  if (auto loaded = resolver.load(std::ranges::any_of(names, [&](const auto& n) { return n.starts_with(prefix); }));
      !loaded) {
    return std::unexpected(loaded.error());
  }
  auto devices = resolver.find(names);
  if (!devices) {
    return std::unexpected(devices.error());
  }
  return apply_resolved(config, *devices, collect(*devices), resolver.source());
}

}  // namespace gpuctk::hook
