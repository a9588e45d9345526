#pragma once
// AMD and Intel GPUs, found through the kernel's DRM and PCI sysfs under the dev root (no vendor library,
// no ioctl): /sys/class/drm/card<N>/device (PCI vendor, device id, bound driver, bus id, AMD's
// unique_id and product_name) and, for AMD compute, the KFD topology
// /sys/class/kfd/kfd/topology/nodes/<n>/{gpu_id,properties,mem_banks/0/properties}. Every sysfs path is
// resolved inside the dev root (sysfs is links all the way down), every read is bounded, and device nodes
// come from stat(2) of the nodes themselves.
//
// What counts as a GPU:
//   AMD    PCI vendor 0x1002 bound to amdgpu. A GPU that KFD lists more than once (an MI300 in CPX or
//          another partition mode: each partition a KFD node with its own render node, the first on the
//          PCI device, the others on amdgpu_xcp_<n> platform devices) gives one DrmGpu per partition.
//   Intel  PCI vendor 0x8086 bound to i915 or xe.
// Other vendors (NVIDIA's own DRM nodes), other drivers (vfio-pci, radeon) and DRM devices that are not
// PCI devices (simpledrm, vkms) are not GPUs here.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

enum class DrmVendor { amd, intel };

// "amd", "intel".
std::string_view drm_vendor_name(DrmVendor vendor);

struct DrmGpu {
  DrmVendor vendor = DrmVendor::amd;
  std::string bus_id;  // the PCI device: "0000:0c:00.0"
  std::string driver;  // "amdgpu", "i915", "xe"
  uint16_t device_id = 0;
  // AMD: "0x" and the upper-case hex digits of the GPU's 64-bit unique_id (KFD's, else sysfs'), as AMD's
  // own tools (amd-ctk, AMD_VISIBLE_DEVICES) spell it; the same for every partition of one GPU. Empty when
  // unknown (no KFD node and no unique_id file, or the value 0) and for Intel.
  std::string uuid;
  uint32_t partition = 0;   // position among its GPU's partitions, by render minor
  uint32_t partitions = 1;  // how many partitions its GPU has (1: not partitioned)
  uint32_t kfd_gpu_id = 0;  // AMD: the KFD node's gpu_id; 0 when KFD does not list it
  // AMD, for AMD's node labeller's labels; empty / absent when unknown. The product name is the PCI
  // device's sysfs product_name (the board FRU's, which only some server boards have), trimmed; the same
  // for every partition of a GPU. The rest are this GPU's KFD node's, so a partition's own share of the
  // GPU (its CUs, its part of the memory), and unknown without KFD; a 0 in KFD's files is unknown too.
  std::string product_name;
  std::optional<uint64_t> vram_bytes;  // mem_banks/0/properties: size_in_bytes
  std::optional<uint32_t> simd_count;  // properties: simd_count
  std::optional<uint32_t> cu_count;    // properties: simd_count / simd_per_cu (KFD multiplies the two)
  std::vector<DeviceNode> nodes;       // /dev/dri/card<N>, /dev/dri/renderD<N>, sorted by path
  std::vector<Symlink> by_path_links;  // /dev/dri/by-path/{pci-<bus>,platform-<dev>}-{card,render}, sorted
};

struct DrmInventory {
  // AMD first, then Intel; within a vendor by bus id, then render minor. A device's index in its
  // vendor's spec is its position among that vendor's entries.
  std::vector<DrmGpu> gpus;
  std::optional<DeviceNode> kfd;  // /dev/kfd (dynamic major); looked for only when there is an AMD GPU
  std::vector<std::string> warnings;
  std::string searched;  // "<dev-root>/sys/class/drm", for messages
};

// The GPUs of the vendors in `vendors` (others are not looked at). A sysfs directory or node that exists
// but cannot be read, or a malformed KFD properties file, is an error naming the path; a DRM device listed
// in sysfs whose /dev node is missing, a KFD GPU node with no matching amdgpu device and a missing
// /dev/kfd are warnings.
Result<DrmInventory> discover_drm_gpus(std::string_view dev_root, const std::vector<DrmVendor>& vendors);

// What a KFD topology node's `properties` file says that matters here. Fields the file lacks are 0.
struct KfdProperties {
  uint32_t drm_render_minor = 0;  // the render node: /dev/dri/renderD<minor>
  uint64_t unique_id = 0;         // decimal in the file; 0 when the GPU has none
  uint32_t domain = 0;            // PCI domain
  uint32_t location_id = 0;       // PCI bus << 8 | device << 3 | function
  uint32_t simd_count = 0;        // SIMDs of the node: simd_per_cu times its active CUs
  uint32_t simd_per_cu = 0;
};

// Parses the `properties` text: one "<name> <decimal value>" per line (the kernel's format), blank lines
// skipped, names it does not need ignored. A line that is not a name and a decimal number, or a value out
// of range for its field -> error "line <n>: ...".
Result<KfdProperties> parse_kfd_properties(std::string_view text);

// What a KFD node's memory bank file (mem_banks/<n>/properties) says that matters here: its size (0 when
// the file lacks it). The same format and errors as parse_kfd_properties.
struct KfdMemBank {
  uint64_t size_in_bytes = 0;
};
Result<KfdMemBank> parse_kfd_mem_bank(std::string_view text);

// The PCI device a KFD node belongs to: "dddd:bb:dd.0" from domain and location_id. The function is
// always 0: a GPU is PCI function 0, and KFD puts a partition's index in location_id's function bits (an
// MI300X in CPX mode: 0x500, 0x501, ... 0x507 for the eight partitions of 05:00.0), so the partitions of one
// GPU name the same device, as AMD's node labeller reads them.
std::string kfd_bus_id(const KfdProperties& properties);

// AMD's spelling of a unique_id: "0x" and upper-case hex digits, no padding ("0x1A2B"); empty for 0.
std::string amd_uuid(uint64_t unique_id);

}  // namespace gpuctk::discover
