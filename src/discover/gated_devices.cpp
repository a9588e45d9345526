#include "discover/gated_devices.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <utility>

#include "discover/device_nodes.hpp"
#include "discover/host_fs.hpp"

namespace gpuctk::discover {

namespace {

constexpr std::array k_features{
    GatedFeatureInfo{GatedFeature::gds, "gds", "NVIDIA_GDS", "GPUDirect Storage", "/dev/nvidia-fs*"},
    GatedFeatureInfo{GatedFeature::mofed, "mofed", "NVIDIA_MOFED", "MOFED",
                     "/dev/infiniband/uverbs*, /dev/infiniband/rdma_cm"},
    GatedFeatureInfo{GatedFeature::gdrcopy, "gdrcopy", "NVIDIA_GDRCOPY", "GDRCopy", "/dev/gdrdrv"},
    GatedFeatureInfo{GatedFeature::nvswitch, "nvswitch", "NVIDIA_NVSWITCH", "NVSwitch",
                     "/dev/nvidia-nvswitchctl, /dev/nvidia-nvswitch*"},
};

// How an entry's name matches a pattern's: all of it, or its start (NVIDIA's "name*").
enum class Match : uint8_t { exact, prefix };

// Nodes of a feature: the entries of `dir` whose names match `name`.
struct NodePattern {
  GatedFeature feature;
  std::string_view dir;
  std::string_view name;
  Match match;
};
constexpr NodePattern k_node_patterns[] = {
    {GatedFeature::gds, "/dev", "nvidia-fs", Match::prefix},  // one per GPU: nvidia-fs0, nvidia-fs1, ...
    {GatedFeature::mofed, "/dev/infiniband", "uverbs", Match::prefix},  // verbs, one per port
    {GatedFeature::mofed, "/dev/infiniband", "rdma_cm", Match::exact},  // RDMA connection manager
    {GatedFeature::gdrcopy, "/dev", "gdrdrv", Match::exact},            // the gdrdrv module's node
    {GatedFeature::nvswitch, "/dev", "nvidia-nvswitch",
     Match::prefix},  // nvidia-nvswitch<N> and nvidia-nvswitchctl
};

// Files GDS mounts from the driver root, as NVIDIA's toolkit does: cuFile's configuration, and udev's
// database, which cuFile reads to map block devices to PCI devices.
struct FilePattern {
  std::string_view path;
  mode_t type;  // S_IFREG or S_IFDIR
};
constexpr FilePattern k_gds_files[] = {
    {"/etc/cufile.json", S_IFREG},
    {"/run/udev", S_IFDIR},
};

}  // namespace

std::span<const GatedFeatureInfo> gated_features() {
  return k_features;
}

Result<GatedDevices> discover_gated_devices(GatedFeature feature, std::string_view dev_root,
                                            std::string_view driver_root) {
  GatedDevices out;
  for (const auto& pattern : k_node_patterns) {
    if (pattern.feature != feature) {
      continue;
    }
    GPUCTK_TRY_ASSIGN(const auto entries, list_dir(under_root(dev_root, pattern.dir)));
    for (const auto& entry : entries) {
      const bool match =
          pattern.match == Match::prefix ? entry.name.starts_with(pattern.name) : entry.name == pattern.name;
      if (!match || entry.type != DT_CHR) {
        continue;
      }
      if (out.nodes.size() == k_max_gated_nodes) {
        return fail(under_root(dev_root, pattern.dir) + ": more than " + std::to_string(k_max_gated_nodes) +
                    " nodes of " + std::string(pattern.name));
      }
      GPUCTK_TRY_ASSIGN(auto node, stat_device_node(dev_root, std::string(pattern.dir) + "/" + entry.name));
      if (node && node->type == 'c') {
        out.nodes.push_back(std::move(*node));
      }
    }
  }
  // GDS's files only beside its nodes, as NVIDIA's toolkit gives them: without nvidia-fs they serve nothing.
  if (feature == GatedFeature::gds && !out.nodes.empty()) {
    for (const auto& file : k_gds_files) {
      const auto host = resolve_in_host_root_strict(driver_root, file.path);
      if (!host) {
        continue;
      }
      GPUCTK_TRY_ASSIGN(const auto st, lstat_path(*host));
      if (st && (st->st_mode & S_IFMT) == file.type) {
        out.mounts.emplace_back(*host, std::string(file.path));
      }
    }
  }
  std::ranges::sort(out.nodes, {}, &DeviceNode::path);
  out.nodes.erase(std::ranges::unique(out.nodes, {}, &DeviceNode::path).begin(), out.nodes.end());
  std::ranges::sort(out.mounts);
  return out;
}

}  // namespace gpuctk::discover
