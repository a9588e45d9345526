#include "cdi/gated_spec.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "cdi/validate.hpp"
#include "cdi/version.hpp"

namespace gpuctk::cdi {

Result<Spec> generate_gated_spec(discover::GatedFeature feature, std::string_view dev_root,
                                 std::string_view driver_root, const BuildOptions& options) {
  const auto& info =
      *std::ranges::find(discover::gated_features(), feature, &discover::GatedFeatureInfo::feature);
  GPUCTK_TRY_ASSIGN(auto found, discover::discover_gated_devices(feature, dev_root, driver_root));
  if (found.nodes.empty()) {
    return fail("no devices to generate: no " + std::string(info.what) + " devices on this host (" +
                std::string(info.patterns) + " under " + std::string(dev_root) + ")");
  }
  Spec spec;
  spec.kind = options.vendor + "/" + options.klass;
  spec.container_edits.env.emplace_back("NVIDIA_VISIBLE_DEVICES=void");
  Device all{"all", {}, {}};
  for (const auto& node : found.nodes) {
    all.container_edits.device_nodes.push_back(spec_device_node(node));
  }
  for (auto& [host, container] : found.mounts) {
    all.container_edits.mounts.push_back({std::move(host), std::move(container), k_file_mount_options, ""});
  }
  spec.devices.push_back(std::move(all));
  set_device_node_gids(spec, options.additional_gids);
  spec.cdi_version = minimum_version(spec).version.str();
  GPUCTK_TRY(check_generated(spec));
  return spec;
}

}  // namespace gpuctk::cdi
