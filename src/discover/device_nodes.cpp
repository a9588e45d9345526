#include "discover/device_nodes.hpp"

#include <dirent.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "discover/host_fs.hpp"

namespace gpuctk::discover {

namespace {

// The control nodes every GPU container needs, in the order they are reported.
struct ControlRow {
  std::string_view path;
  bool required;
};
constexpr ControlRow k_control_nodes[] = {
    {"/dev/nvidiactl", true},          // the driver's control device: nothing works without it
    {"/dev/nvidia-uvm", false},        // unified memory (CUDA); created when nvidia-uvm is loaded
    {"/dev/nvidia-uvm-tools", false},  // UVM profiling tools
    {"/dev/nvidia-modeset", false},    // modesetting (graphics, Vulkan)
};

// Directories and name prefixes of the nodes management mode adds to the control nodes and GPUs.
constexpr std::string_view k_management_dirs[] = {
    "/dev/nvidia-caps",                // MIG config/monitor and GI/CI access capabilities
    "/dev/nvidia-caps-imex-channels",  // IMEX channels (multi-node NVLink)
};

}  // namespace

Result<std::optional<DeviceNode>> stat_device_node(std::string_view dev_root, std::string_view path) {
  const std::string host = under_root(dev_root, path);
  GPUCTK_TRY_ASSIGN(const auto st, lstat_path(host));
  if (!st) {
    return std::optional<DeviceNode>{};
  }
  if (!S_ISCHR(st->st_mode) && !S_ISBLK(st->st_mode)) {
    return fail(host + ": not a device node");
  }
  DeviceNode node;
  node.path = std::string(path);
  node.host_path = host;
  node.type = S_ISCHR(st->st_mode) ? 'c' : 'b';
  node.major = major(st->st_rdev);
  node.minor = minor(st->st_rdev);
  node.mode = st->st_mode & 07777;
  node.gid = st->st_gid;
  return std::optional<DeviceNode>(std::move(node));
}

Result<std::vector<DeviceNode>> discover_control_nodes(std::string_view dev_root,
                                                       std::vector<std::string>& warnings) {
  std::vector<DeviceNode> nodes;
  for (const auto& row : k_control_nodes) {
    GPUCTK_TRY_ASSIGN(auto node, stat_device_node(dev_root, row.path));
    if (node) {
      nodes.push_back(std::move(*node));
    } else if (row.required) {
      return fail(under_root(dev_root, row.path) + ": missing (is the NVIDIA driver loaded?)");
    } else {
      warnings.push_back(under_root(dev_root, row.path) + ": missing; not injected");
    }
  }
  return nodes;
}

Result<DrmNodes> discover_drm_nodes(std::string_view dev_root, std::string_view bus_id,
                                    std::vector<std::string>& warnings) {
  DrmNodes out;
  const std::string sys_dir = under_root(dev_root, "/sys/bus/pci/devices/" + std::string(bus_id) + "/drm");
  GPUCTK_TRY_ASSIGN(auto entries, list_dir(sys_dir));
  for (const auto& entry : entries) {
    // card<N> and renderD<N>; controlD<N> exists only on old kernels and has no /dev node today.
    if (!entry.name.starts_with("card") && !entry.name.starts_with("renderD")) {
      continue;
    }
    const std::string path = "/dev/dri/" + entry.name;
    GPUCTK_TRY_ASSIGN(auto node, stat_device_node(dev_root, path));
    if (!node) {
      warnings.push_back(under_root(dev_root, path) + ": listed in " + sys_dir +
                         " but missing; not injected");
      continue;
    }
    const bool card = entry.name.starts_with("card");
    const std::string link = "/dev/dri/by-path/pci-" + std::string(bus_id) + (card ? "-card" : "-render");
    GPUCTK_TRY_ASSIGN(const auto link_st, lstat_path(under_root(dev_root, link)));
    if (link_st) {
      out.by_path_links.push_back({"../" + entry.name, link});
    }
    out.nodes.push_back(std::move(*node));
  }
  std::ranges::sort(out.nodes, {}, &DeviceNode::path);
  std::ranges::sort(out.by_path_links);
  return out;
}

Result<std::vector<DeviceNode>> discover_management_nodes(std::string_view dev_root) {
  std::vector<DeviceNode> nodes;
  const auto add_dir = [&](std::string_view dir, const auto& wanted) -> Result<void> {
    GPUCTK_TRY_ASSIGN(auto entries, list_dir(under_root(dev_root, dir)));
    for (const auto& entry : entries) {
      if (!wanted(entry.name) || (entry.type != DT_CHR && entry.type != DT_BLK)) {
        continue;
      }
      GPUCTK_TRY_ASSIGN(auto node, stat_device_node(dev_root, std::string(dir) + "/" + entry.name));
      if (node) {
        nodes.push_back(std::move(*node));
      }
    }
    return {};
  };
  for (const auto dir : k_management_dirs) {
    GPUCTK_TRY(add_dir(dir, [](std::string_view) { return true; }));
  }
  // Every GPU node, whether or not /proc lists its GPU (a driver container's /proc, a GPU the driver
  // failed to initialise): management containers are there to look at GPUs in any state.
  GPUCTK_TRY(add_dir("/dev", is_gpu_node_name));
  std::ranges::sort(nodes, {}, &DeviceNode::path);
  return nodes;
}

bool is_gpu_node_name(std::string_view name) {
  constexpr std::string_view k_prefix = "nvidia";
  if (!name.starts_with(k_prefix) || name.size() == k_prefix.size()) {
    return false;
  }
  return name.substr(k_prefix.size()).find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace gpuctk::discover
