#include "inject/shim_bundle.hpp"

#include <nlohmann/json.hpp>

#include "cdi/apply.hpp"
#include "inject/container_label.hpp"
#include "inject/inject.hpp"
#include "inject/prestart.hpp"
#include "inject/request.hpp"
#include "oci/bundle.hpp"

namespace gpuctk::inject {

namespace {

// runtime-mode: prestart. A GPU container gets the prestart hook, which injects once the container exists.
Result<void> add_prestart_hook(const ShimBundle& bundle, nlohmann::ordered_json& config,
                               const config::Config& cfg, const config::Log& log) {
  GPUCTK_TRY_ASSIGN(const auto request, read_request(config, cfg.request));
  if (!request.gpu_container) {
    return {};
  }
  // The hook runs with PATH as its only environment: it is told which config file the shim used.
  cdi::ContainerEdits edits;
  edits.hooks.push_back(prestart_hook(cfg.hook_path, bundle.gpuctk_config));
  GPUCTK_TRY(cdi::apply_edits(config, edits));
  log.info("runtime-mode prestart: added the prestart hook " + cfg.hook_path + " to " + bundle.config_file);
  return oci::write_config_file(bundle.config_file, config);
}

}  // namespace

Result<void> edit_bundle(const ShimBundle& bundle, HookStart& start, const Warn& warn) {
  GPUCTK_TRY_ASSIGN(auto config, oci::read_config_file(bundle.config_file));
  start.log.set_context(container_label(config) + " in " + bundle.bundle);
  announce_warnings(start, warn);
  start.warnings.clear();
  GPUCTK_TRY_ASSIGN(const auto gated, gate(start, config, bundle.config_file, warn));
  if (gated == Gate::pass_through) {
    return {};
  }
  const config::Config& cfg = start.config;
  if (cfg.runtime_mode == config::RuntimeMode::prestart) {
    return add_prestart_hook(bundle, config, cfg, start.log);
  }
  GPUCTK_TRY_ASSIGN(const auto result, inject_request(config, cfg, start.log));
  if (!result.changed) {
    return {};
  }
  return oci::write_config_file(bundle.config_file, config);
}

}  // namespace gpuctk::inject
