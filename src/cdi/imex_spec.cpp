#include "cdi/imex_spec.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cdi/apply.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "discover/host_fs.hpp"
#include "discover/imex_channels.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

// The nodes of the channels `ids` names, every channel when none or "all" does.
Result<std::vector<discover::DeviceNode>> channel_nodes(std::string_view dev_root,
                                                        const std::vector<std::string>& ids) {
  if (ids.empty() || std::ranges::find(ids, "all") != ids.end()) {
    return discover::discover_imex_channels(dev_root);
  }
  std::vector<discover::DeviceNode> nodes;
  for (const auto& id : ids) {
    const auto channel = discover::parse_imex_channel(id);
    if (!channel) {
      return fail("--device-ids: invalid IMEX channel " + quote(id) +
                  " (want a channel number from 0 to 1048575, channel<N> or all)");
    }
    GPUCTK_TRY_ASSIGN(auto node, discover::imex_channel_node(dev_root, *channel));
    nodes.push_back(std::move(node));
  }
  std::ranges::sort(nodes, {}, &discover::DeviceNode::path);
  nodes.erase(std::ranges::unique(nodes, {}, &discover::DeviceNode::path).begin(), nodes.end());
  return nodes;
}

}  // namespace

Result<Spec> generate_imex_spec(std::string_view dev_root, const BuildOptions& options) {
  GPUCTK_TRY_ASSIGN(const auto nodes, channel_nodes(dev_root, options.device_ids));
  if (nodes.empty()) {
    return fail("no devices to generate: no IMEX channels in " +
                discover::under_root(dev_root, discover::k_imex_channels_dir));
  }
  Spec spec;
  spec.kind = options.vendor + "/" + options.klass;
  spec.container_edits.env.emplace_back("NVIDIA_VISIBLE_DEVICES=void");
  Device all{"all", {}, {}};
  for (const auto& node : nodes) {
    // "channel<N>" without its prefix: the number, as NVIDIA names the device.
    const std::string name = node.path.substr(node.path.rfind('/') + 1 + std::string_view("channel").size());
    Device device{name, {}, {}};
    device.container_edits.device_nodes.push_back(spec_device_node(node));
    append(all.container_edits, device.container_edits);
    spec.devices.push_back(std::move(device));
  }
  if (options.all_device) {
    spec.devices.push_back(std::move(all));
  }
  std::ranges::sort(spec.devices, {}, &Device::name);
  set_device_node_gids(spec, options.additional_gids);
  spec.cdi_version = minimum_version(spec).version.str();
  GPUCTK_TRY(check_generated(spec));
  return spec;
}

}  // namespace gpuctk::cdi
