#pragma once
// What the device plugin advertises: one resource per name, each with its devices, made from the
// inventory and the configuration as NVIDIA's device plugin makes them (internal/rm/device_map.go):
//
//   migStrategy none    every GPU, MIG mode or not, is nvidia.com/gpu
//   migStrategy single  MIG devices are nvidia.com/gpu, GPUs in MIG mode are not advertised; refused when
//                       GPUs with and without MIG are mixed, a MIG GPU has no MIG device, or MIG devices
//                       differ
//   migStrategy mixed   MIG devices are nvidia.com/mig-<profile> ('+' as '.'), GPUs in MIG mode are not
//                       advertised; a profile of fewer compute than GPU slices ("1c.3g.20gb") is refused
//   sharing             each replicated resource's devices become <uuid>::0 .. <uuid>::<n-1> (renamed
//                       <name>.shared under renameByDefault)
//
// Device IDs are UUIDs (replicas: "<uuid>::<n>"), whatever deviceIDStrategy says (it only changes the
// answers). Output is deterministic: resources by name, devices in GPU order, MIG devices in slot order,
// replicas in order (NVIDIA's come out of Go maps in any order).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "discover/inventory.hpp"
#include "plugin/config.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

struct Device {
  std::string id;              // what the kubelet sees: "GPU-…", "MIG-…", "GPU-…::3"
  std::string uuid;            // without the replica suffix
  std::string index;           // "0", or "<gpu>:<mig>" for a MIG device
  uint32_t gpu = 0;            // NVML index of the GPU (a MIG device's parent)
  std::string gpu_uuid;        // the UUID of that GPU (NVML's events name it)
  std::optional<uint32_t> gi;  // MIG instance ids; nullopt for a whole GPU
  std::optional<uint32_t> ci;
  // Device nodes in the container: /dev/nvidia<minor>, and a MIG device's two capability nodes.
  std::vector<std::string> paths;
  std::optional<int64_t> numa_node;  // of the GPU's PCI device; nullopt when unknown or none
  uint64_t memory_bytes = 0;         // 0 when unknown
  uint32_t replicas = 0;             // how many replicas of the device exist; 0 when not shared
  [[nodiscard]] bool is_mig() const { return gi.has_value(); }
};

struct Resource {
  std::string name;  // "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/gpu.shared"
  std::vector<Device> devices;
};

// NUMA node of each GPU by bus id ("0000:07:00.0"); a GPU missing here has none.
using NumaNodes = std::map<std::string, int64_t>;

// The resources of the node, sorted by name. Errors are NVIDIA's refusals, naming the GPU or profile:
//   "migStrategy single: GPU 1 is in MIG mode without MIG devices"
//   "migStrategy single: more than one MIG device type (1g.5gb on GPU 0, 2g.10gb on GPU 1)"
//   "migStrategy single: all GPUs must be in MIG mode or none (GPU 0 is not, GPU 1 is)"
//   "migStrategy mixed: MIG profile 1c.3g.20gb (GPU 0, MIG 1) matches no resource (fewer compute than GPU
//   slices)" "migStrategy mixed: the profile of MIG device 0:1 is unknown (MIG profiles come from NVML)" "MIG
//   device 0:1 has no UUID (MIG UUIDs come from NVML): use deviceIDStrategy index"  (never: IDs are UUIDs)
//   "sharing.mps: not supported for MIG devices (nvidia.com/gpu has MIG device 0:1)"
// `warnings` gets what NVIDIA logs (a mixed-strategy MIG GPU without MIG devices).
Result<std::vector<Resource>> build_resources(const discover::Inventory& inventory, const Config& config,
                                              const NumaNodes& numa, std::vector<std::string>& warnings);

// Reads /sys/bus/pci/devices/<bus>/numa_node below `dev_root` for every GPU; unreadable or negative
// values are left out (no NUMA affinity), as NVIDIA's plugin leaves them out.
NumaNodes read_numa_nodes(const std::string& dev_root, const discover::Inventory& inventory);

// "mig-" + the profile with '+' as '.' (GFD's and the plugin's name of a MIG type): "mig-1g.10gb.me".
std::string mig_resource_name(std::string_view profile);

}  // namespace gpuctk::plugin
