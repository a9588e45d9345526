#pragma once
// The devices of NVIDIA's opt-in features, which a container asks for with NVIDIA_GDS, NVIDIA_MOFED,
// NVIDIA_GDRCOPY or NVIDIA_NVSWITCH set to "enabled" (inject/request.hpp): the nodes (and for GDS the
// files) NVIDIA's toolkit v1.20 gives for each, found on the host under the dev root and driver root.
// Each is optional: a host without them gives none, and the caller says so once.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

enum class GatedFeature : uint8_t {
  gds,       // GPUDirect Storage (nvidia-fs)
  mofed,     // Mellanox OFED: InfiniBand verbs and the RDMA connection manager
  gdrcopy,   // GDRCopy (gdrdrv)
  nvswitch,  // NVSwitch nodes (the fabric manager's tools in a container)
};

// One opt-in feature: its variable and the host nodes it gives.
struct GatedFeatureInfo {
  GatedFeature feature;
  std::string_view name;      // "gds": NVIDIA's name of the feature, `cdi generate --mode`'s value
  std::string_view variable;  // "NVIDIA_GDS": the feature is asked for by the value "enabled"
  std::string_view what;      // for log lines: "GPUDirect Storage"
  std::string_view patterns;  // for log lines: the nodes it looks for
};

// Every feature, in the order NVIDIA's toolkit asks for them (GDS, MOFED, GDRCopy, NVSwitch).
std::span<const GatedFeatureInfo> gated_features();

// At most this many nodes per feature (a host has a handful: one nvidia-fs node per GPU, one uverbs
// node per InfiniBand port, a dozen NVSwitches); more is an error naming the feature.
inline constexpr size_t k_max_gated_nodes = 1024;

// What a feature gives: character devices (sorted by path) and, for GDS, host files to mount read-only
// (host path under the driver root, container path).
struct GatedDevices {
  std::vector<DeviceNode> nodes;
  std::vector<std::pair<std::string, std::string>> mounts;  // (host path, container path), sorted
  [[nodiscard]] bool empty() const { return nodes.empty() && mounts.empty(); }
};

// The nodes and files of `feature` on this host: the character devices whose names match its patterns
// (links and other files are skipped, never followed), and for GDS, when it has nodes, /etc/cufile.json (a
// regular file) and /run/udev (a directory) when the driver root has them, resolved inside it. Missing is
// empty, not an error; an unreadable directory is one.
Result<GatedDevices> discover_gated_devices(GatedFeature feature, std::string_view dev_root,
                                            std::string_view driver_root);

}  // namespace gpuctk::discover
