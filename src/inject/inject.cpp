#include "inject/inject.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "cdi/apply.hpp"
#include "cdi/hook_args.hpp"
#include "cdi/names.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "discover/gated_devices.hpp"
#include "discover/gpu_information.hpp"
#include "discover/host_fs.hpp"
#include "discover/imex_channels.hpp"
#include "discover/nvidia_caps.hpp"
#include "inject/capability_filter.hpp"
#include "inject/mps.hpp"
#include "inject/requirements.hpp"
#include "inject/spec_resolver.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::inject {

namespace {

// Spec-wide edits of each spec once, before its first device; then the device's own (CDI order). The
// edits of devices of `default_kind` and of their spec go through `filter` (when given); every other
// spec's edits pass untouched.
cdi::ContainerEdits collect(const std::vector<const cdi::ResolvedDevice*>& devices,
                            const std::string& default_kind, CapabilityFilter* filter) {
  cdi::ContainerEdits edits;
  std::set<const cdi::Spec*> seen;
  for (const auto* device : devices) {
    CapabilityFilter* device_filter = device->name.kind() == default_kind ? filter : nullptr;
    const auto add = [&](const cdi::ContainerEdits& from) {
      if (device_filter == nullptr) {
        cdi::append(edits, from);
        return;
      }
      cdi::ContainerEdits filtered = from;
      device_filter->apply(filtered);
      cdi::append(edits, filtered);
    };
    if (seen.insert(device->spec.get()).second) {
      add(device->spec->container_edits);
    }
    add(device->device().container_edits);
  }
  return edits;
}

void make_hooks_safe(cdi::ContainerEdits& edits) {
  for (auto& hook : edits.hooks) {
    if (hook.env.empty()) {
      hook.env = cdi::k_safe_hook_env;
    }
  }
}

// The host's nodes of the requested IMEX channels (request.hpp): a channel asked for by number that the
// host lacks is an error, as in NVIDIA's toolkit; "all" on a host without channels adds none (a warning).
Result<void> add_imex_channels(cdi::ContainerEdits& edits, const Request& request, const config::Config& cfg,
                               const config::Log& log) {
  std::vector<discover::DeviceNode> nodes;
  if (request.imex_all) {
    GPUCTK_TRY_ASSIGN(nodes, discover::discover_imex_channels(cfg.dev_root));
    if (nodes.empty()) {
      log.warning("IMEX channels \"all\": none in " +
                  discover::under_root(cfg.dev_root, discover::k_imex_channels_dir));
    }
  }
  for (const auto channel : request.imex_channels) {
    GPUCTK_TRY_ASSIGN(auto node, discover::imex_channel_node(cfg.dev_root, channel));
    nodes.push_back(std::move(node));
  }
  std::set<std::string> seen;
  for (auto& node : nodes) {
    if (seen.insert(node.path).second) {
      // Type and numbers come from the host node when the edits are applied, as for every dynamic major.
      cdi::DeviceNode added;
      added.path = std::move(node.path);
      added.host_path = std::move(node.host_path);
      edits.device_nodes.push_back(std::move(added));
    }
  }
  return {};
}

// The nodes and files of the opt-in features asked for (NVIDIA_GDS=enabled, ...); a feature the host
// lacks adds nothing and is one warning, as NVIDIA's toolkit gives nothing for it either.
Result<void> add_gated_features(cdi::ContainerEdits& edits, const Request& request, const config::Config& cfg,
                                const config::Log& log) {
  for (const auto feature : request.gated_features) {
    const auto& info =
        *std::ranges::find(discover::gated_features(), feature, &discover::GatedFeatureInfo::feature);
    auto found = discover::discover_gated_devices(feature, cfg.dev_root, cfg.driver_root);
    if (!found) {
      return fail_with(std::string(info.variable) + "=enabled", found.error());
    }
    if (found->nodes.empty()) {
      log.warning(std::string(info.variable) + "=enabled: no " + std::string(info.what) +
                  " devices on this host (" + std::string(info.patterns) + " under " + cfg.dev_root +
                  "); none injected");
    }
    for (auto& node : found->nodes) {
      cdi::DeviceNode added;
      added.path = std::move(node.path);
      added.host_path = std::move(node.host_path);
      edits.device_nodes.push_back(std::move(added));
    }
    for (auto& [host, container] : found->mounts) {
      edits.mounts.push_back({std::move(host), std::move(container), cdi::k_file_mount_options, ""});
    }
  }
  return {};
}

// MIG management capabilities, IMEX channels, opt-in features' devices and the MPS directories, which no
// spec device carries.
Result<void> add_extras(cdi::ContainerEdits& edits, const nlohmann::ordered_json& config,
                        const Request& request, const config::Config& cfg, const config::Log& log) {
  if (request.mig_config || request.mig_monitor) {
    GPUCTK_TRY_ASSIGN(auto minors, discover::read_mig_minors(cfg.dev_root));
    struct Wanted {
      bool wanted;
      std::optional<uint32_t> minor;
      const char* what;
    };
    for (const auto& [wanted, minor, what] : {Wanted{request.mig_config, minors.config(), "config"},
                                              Wanted{request.mig_monitor, minors.monitor(), "monitor"}}) {
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
  GPUCTK_TRY(add_imex_channels(edits, request, cfg, log));
  GPUCTK_TRY(add_gated_features(edits, request, cfg, log));
  return add_mps_mounts(edits, config, request, cfg, log);
}

// Whether a constraint of the request is about `property` ("brand", "arch").
bool wants(const Request& request, std::string_view property) {
  return std::ranges::any_of(request.requirements, [&](const Requirement& r) {
    return std::ranges::any_of(r.any_of, [&](const std::vector<Constraint>& all) {
      return std::ranges::any_of(all, [&](const Constraint& c) { return c.property == property; });
    });
  });
}

Result<void> check_host_requirements(const Request& request, const config::Config& cfg,
                                     RunningDriver& driver) {
  if (request.requirements.empty()) {
    return {};
  }
  HostFacts facts;
  facts.driver_version = driver.version();
  facts.cuda_version = cuda_version_for_driver(facts.driver_version);
  // GPU brands cost a read per GPU, compute capabilities an NVML load: only when a constraint asks.
  const std::string gpus_dir = discover::under_root(cfg.dev_root, "/proc/driver/nvidia/gpus");
  if (auto gpus = wants(request, "brand") ? discover::list_dir(gpus_dir)
                                          : Result<std::vector<discover::DirEntry>>{}) {
    for (const auto& entry : *gpus) {
      if (auto info =
              read_parsed(gpus_dir + "/" + entry.name + "/information", discover::parse_gpu_information)) {
        facts.brands.push_back(brand_for_model(info->model));
      }
    }
  }
  // Compute capabilities come only from NVML, loaded only for an arch constraint; without NVML (or
  // with one that cannot say) the facts stay unknown and the constraint fails as unknown.
  if (wants(request, "arch")) {
    if (auto inventory = discover::discover({cfg.driver_root, cfg.dev_root, discover::Mode::nvml, {}, {}})) {
      for (const auto& gpu : inventory->gpus) {
        if (gpu.compute_capability) {
          facts.archs.push_back(std::to_string(gpu.compute_capability->major) + "." +
                                std::to_string(gpu.compute_capability->minor));
        }
      }
    }
  }
  return check_requirements(request.requirements, facts);
}

InjectResult applied(const ResolvedRequest& resolved) {
  InjectResult result;
  result.changed = true;
  result.spec_source = resolved.spec_source;
  result.devices = resolved.devices;
  return result;
}

std::vector<std::string> device_names(const std::vector<const cdi::ResolvedDevice*>& devices) {
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (const auto* d : devices) {
    names.push_back(d->name.str());
  }
  return names;
}

}  // namespace

Result<ResolvedRequest> resolve_request(const nlohmann::ordered_json& config, const config::Config& cfg,
                                        const config::Log& log) {
  GPUCTK_TRY_ASSIGN(auto request, read_request(config, cfg.request));
  for (const auto& line : request.log) {
    log.info(line);
  }
  if (!request.gpu_container) {
    return ResolvedRequest{};
  }
  RunningDriver driver(cfg);
  GPUCTK_TRY(check_host_requirements(request, cfg, driver));

  std::vector<std::string> names;
  const std::string kind = cfg.request.default_kind;
  if (request.all) {
    names.push_back(kind + "=all");
  } else {
    for (const auto& id : request.devices) {
      names.push_back(kind + "=" + id);
    }
  }
  std::set<std::string> named(names.begin(), names.end());  // no per-name scan: up to k_max_devices names
  for (const auto& name : request.cdi_devices) {
    if (named.insert(name).second) {
      names.push_back(name);
    }
  }
  const bool needs_default_kind =
      request.driver_only ||
      std::ranges::any_of(names, [&](const std::string& n) { return n.starts_with(kind + "="); });

  SpecResolver resolver(cfg, log, driver);
  GPUCTK_TRY(resolver.load(needs_default_kind));
  GPUCTK_TRY_ASSIGN(auto devices, resolver.find(names));
  // NVIDIA_DRIVER_CAPABILITIES filters the default kind's driver files only (see CapabilityFilter).
  CapabilityFilter filter(request.capabilities);
  cdi::ContainerEdits edits = collect(devices, kind, &filter);
  if (request.driver_only && devices.empty()) {
    const auto spec = resolver.default_spec();
    if (!spec) {
      return fail("NVIDIA_VISIBLE_DEVICES=none: no spec for " + kind);
    }
    edits = spec->container_edits;
    filter.apply(edits);
  }
  GPUCTK_TRY(add_extras(edits, config, request, cfg, log));
  make_hooks_safe(edits);
  return ResolvedRequest{true, std::move(edits), device_names(devices), resolver.source()};
}

std::string describe(const ResolvedRequest& resolved) {
  return (resolved.devices.empty() ? std::string("driver only") : join(resolved.devices, ",")) + " from " +
         resolved.spec_source;
}

Result<InjectResult> inject_request(nlohmann::ordered_json& config, const config::Config& cfg,
                                    const config::Log& log) {
  GPUCTK_TRY_ASSIGN(const auto resolved, resolve_request(config, cfg, log));
  if (!resolved.gpu_container) {
    return InjectResult{};
  }
  GPUCTK_TRY(cdi::apply_edits(config, resolved.edits));
  log.info("injected " + describe(resolved));
  return applied(resolved);
}

Result<InjectResult> inject_devices(nlohmann::ordered_json& config, const std::vector<std::string>& names,
                                    const config::Config& cfg, const config::Log& log) {
  for (const auto& name : names) {
    GPUCTK_TRY(cdi::parse_qualified_name(name));
  }
  const std::string prefix = cfg.request.default_kind + "=";
  RunningDriver driver(cfg);
  SpecResolver resolver(cfg, log, driver);
  if (auto loaded =
          resolver.load(std::ranges::any_of(names, [&](const auto& n) { return n.starts_with(prefix); }));
      !loaded) {
    return std::unexpected(loaded.error());
  }
  GPUCTK_TRY_ASSIGN(auto devices, resolver.find(names));
  ResolvedRequest resolved{true, collect(devices, cfg.request.default_kind, nullptr), device_names(devices),
                           resolver.source()};
  make_hooks_safe(resolved.edits);
  GPUCTK_TRY(cdi::apply_edits(config, resolved.edits));
  return applied(resolved);
}

}  // namespace gpuctk::inject
