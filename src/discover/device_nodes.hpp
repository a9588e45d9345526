#pragma once
// Device nodes of NVIDIA GPUs, read with stat under the dev root. Major, minor, permission bits and
// group come from the node itself, never from assumptions, so a spec always matches the host.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

// The node at `<dev_root><path>` (path like "/dev/nvidia0"); nothing when it does not exist. A path that
// exists but is not a character or block device is an error naming it.
Result<std::optional<DeviceNode>> stat_device_node(std::string_view dev_root, std::string_view path);

// /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset, those present. A missing
// nvidiactl is an error (no usable driver); the others are warnings.
Result<std::vector<DeviceNode>> discover_control_nodes(std::string_view dev_root,
                                                       std::vector<std::string>& warnings);

// The DRM nodes of the GPU at PCI `bus_id` ("0000:07:00.0"), from /sys/bus/pci/devices/<bus>/drm/, and the
// /dev/dri/by-path links that udev made for them. A GPU without DRM nodes has none (headless servers);
// a sysfs entry whose /dev node is missing is a warning.
struct DrmNodes {
  std::vector<DeviceNode> nodes;
  std::vector<Symlink> by_path_links;
};
Result<DrmNodes> discover_drm_nodes(std::string_view dev_root, std::string_view bus_id,
                                    std::vector<std::string>& warnings);

// The nodes management mode adds to the control nodes: every GPU node /dev/nvidia<N> (whether or not
// /proc/driver/nvidia/gpus lists it), /dev/nvidia-caps/* and /dev/nvidia-caps-imex-channels/*. Sorted by
// path. NVSwitch nodes are left out on purpose (README, "Management specs"): the fabric manager owns them.
Result<std::vector<DeviceNode>> discover_management_nodes(std::string_view dev_root);

// Whether `name` is a GPU node's name: "nvidia" and decimal digits ("nvidia0", not "nvidiactl").
bool is_gpu_node_name(std::string_view name);

}  // namespace gpuctk::discover
