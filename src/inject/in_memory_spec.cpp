#include "inject/in_memory_spec.hpp"

#include <memory>
#include <utility>

#include "cdi/names.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"

namespace gpuctk::inject {

Result<InMemorySpec> build_in_memory_spec(const config::Config& cfg, const std::string& why) {
  discover::DiscoverOptions options;
  options.driver_root = cfg.driver_root;
  options.dev_root = cfg.dev_root;
  options.mode = discover::Mode::proc;
  auto inventory = discover::discover(options);
  if (!inventory) {
    return fail_with(why + "; building it in memory failed", inventory.error());
  }
  auto kind = cdi::parse_qualified_name(cfg.request.default_kind + "=x");
  if (!kind) {
    return fail_with("default-kind", kind.error());
  }
  cdi::BuildOptions build;
  build.vendor = kind->vendor;
  build.klass = kind->klass;
  build.hook_path = cfg.hook_path;
  // With the 32-bit libraries: the capability filter keeps them for a compat32 request and drops them
  // (and their links) for every other.
  build.libraries32 = true;
  if (cfg.no_additional_gids_for_device_nodes) {
    build.additional_gids = cdi::AdditionalGids::none;
  }
  auto spec = cdi::build_spec(*inventory, build);
  if (!spec) {
    return fail_with(why + "; building it in memory failed", spec.error());
  }
  auto shared = std::make_shared<const cdi::Spec>(std::move(*spec));
  InMemorySpec out;
  for (size_t i = 0; i < shared->devices.size(); ++i) {
    cdi::ResolvedDevice device;
    device.name = cdi::QualifiedName{kind->vendor, kind->klass, shared->devices[i].name};
    device.spec_file = "(in memory)";
    device.spec = shared;
    device.device_index = i;
    out.devices.push_back(std::move(device));
  }
  out.source = "in-memory spec (driver " + inventory->driver_version + ")";
  return out;
}

}  // namespace gpuctk::inject
