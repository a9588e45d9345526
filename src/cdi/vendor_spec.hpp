#pragma once
// Specs of AMD and Intel GPUs (kinds amd.com/gpu and intel.com/gpu), and the vendor set of
// `cdi generate --vendor-set`: one spec per vendor that has GPUs on the host.
//
// An AMD or Intel spec carries device nodes only: the user space of those GPUs (ROCm, Level Zero, Mesa)
// lives in the image, so no driver file is mounted and no library hook runs. Per GPU (per partition for
// a partitioned AMD GPU): its /dev/dri card and render nodes, its /dev/dri/by-path links (the
// create-symlinks hook), and for AMD /dev/kfd, the compute node every ROCm process opens (its major is
// dynamic, so the spec leaves major and minor to the runtime: see spec_device_node). Pure and
// deterministic, like build_spec.

#include <string>
#include <string_view>
#include <vector>

#include "cdi/codec.hpp"
#include "cdi/spec.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "discover/drm_gpus.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

enum class GpuVendor { nvidia, amd, intel };

// "nvidia", "amd", "intel".
std::string_view gpu_vendor_name(GpuVendor vendor);

// A --vendor-set value: a comma list of nvidia, amd and intel, each at most once, in any order. The set
// comes back in the order nvidia, amd, intel. Errors: `unknown GPU vendor "x" (want nvidia, amd or
// intel)`, `"amd" is listed twice`, `empty vendor set`.
Result<std::vector<GpuVendor>> parse_vendor_set(std::string_view text);

// The kinds of the non-NVIDIA vendors' specs.
inline constexpr std::string_view k_amd_kind = "amd.com/gpu";
inline constexpr std::string_view k_intel_kind = "intel.com/gpu";

// The spec of the `vendor` GPUs of `inventory` (kind k_amd_kind or k_intel_kind). From `options` it uses
// the naming strategies, `all_device`, `hook_path`, `disabled_hooks` and `additional_gids` (the groups of
// the nodes a non-root process could not open otherwise, as in NVIDIA's specs); device_ids must be empty.
// Names: index "0" (position among the vendor's GPUs, partitions counted one by one), type-index "gpu0",
// uuid (AMD only, the "0x…" form of DrmGpu::uuid): an unpartitioned GPU's device, or for a partitioned
// GPU a device with all its partitions (the UUID names the whole GPU, as AMD_VISIBLE_DEVICES has it). A
// UUID that two GPUs report is not used as a name (a warning in `warnings`). An inventory without a GPU
// of `vendor` is an error: "no devices to generate: no AMD GPUs in <dev-root>/sys/class/drm".
Result<Spec> build_drm_spec(const discover::DrmInventory& inventory, discover::DrmVendor vendor,
                            const BuildOptions& options, std::vector<std::string>& warnings);

// The file name of a kind's spec in a spec directory, as the CDI library names generated specs
// ("<vendor>-<class>"): "amd.com-gpu.yaml", "nvidia.com-gpu.json".
std::string spec_file_name(std::string_view kind, Format format);

// The specs of a vendor set.
struct VendorSpecs {
  struct Entry {
    GpuVendor vendor = GpuVendor::nvidia;
    Spec spec;
  };
  std::vector<Entry> specs;  // one per vendor of the set that has GPUs, in set order
  // One line per vendor without a GPU, e.g. "no AMD GPU in <dev-root>/sys/class/drm: no amd.com/gpu spec".
  std::vector<std::string> absent;
  std::vector<std::string> warnings;  // discovery's warnings, every vendor's
};

// Discovers the vendors of the set on the node (discover::discover_node with `discover`; its errors are
// this function's) and builds every spec. NVIDIA: absent when the driver is not loaded
// (<dev-root>/proc/driver/nvidia missing) or lists no GPU; otherwise generate_spec with `nvidia`. AMD and
// Intel: build_drm_spec with `nvidia`'s naming, all-device and hook options. Every spec
// passed check_generated (cdi/validate.hpp).
// `nvidia.device_ids` selects NVIDIA devices only: with amd or intel in the set it is an error.
Result<VendorSpecs> build_vendor_specs(const std::vector<GpuVendor>& vendors,
                                       const discover::DiscoverOptions& discover, const BuildOptions& nvidia);

}  // namespace gpuctk::cdi
