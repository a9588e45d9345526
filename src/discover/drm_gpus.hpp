#pragma once
// AMD and Intel GPUs, found through the kernel's DRM and PCI sysfs under the dev root (no vendor library,
// no ioctl): /sys/class/drm/card<N>/device (PCI vendor, device id, bound driver, bus id, AMD's
// unique_id) and, for AMD compute, the KFD topology /sys/class/kfd/kfd/topology/nodes/<n>/{gpu_id,
// properties}. Every sysfs path is resolved inside the dev root (sysfs is links all the way down), every
// read is bounded, and device nodes come from stat(2) of the nodes themselves.
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
  uint32_t partition = 0;              // position among its GPU's partitions, by render minor
  uint32_t partitions = 1;             // how many partitions its GPU has (1: not partitioned)
  uint32_t kfd_gpu_id = 0;             // AMD: the KFD node's gpu_id; 0 when KFD does not list it
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
};

// Parses the `properties` text: one "<name> <decimal value>" per line (the kernel's format), blank lines
// skipped, names it does not need ignored. A line that is not a name and a decimal number, or a value out
// of range for its field -> error "line <n>: ...".
Result<KfdProperties> parse_kfd_properties(std::string_view text);

// The PCI bus id a KFD node names: "dddd:bb:dd.f" from domain and location_id.
std::string kfd_bus_id(const KfdProperties& properties);

// AMD's spelling of a unique_id: "0x" and upper-case hex digits, no padding ("0x1A2B"); empty for 0.
std::string amd_uuid(uint64_t unique_id);

}  // namespace gpuctk::discover
