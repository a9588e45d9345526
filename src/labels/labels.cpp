// The node's label set: every vendor's, merged.
#include "labels/labels.hpp"

namespace gpuctk::labels {

Result<Labels> node_labels(const discover::Inventory& inventory, const discover::HardwareFacts& facts,
                           const NvidiaOptions& options, std::vector<std::string>& warnings,
                           const discover::DrmInventory& drm) {
  // Each vendor's set writes only its own prefix (nvidia.com/, amd.com/, gpu.intel.com/): no overrides.
  GPUCTK_TRY_ASSIGN(Labels labels, nvidia_labels(inventory, facts, options, warnings));
  // The GPU Operator's label (not GFD's), which DaemonSets of NVIDIA's stack select nodes by: written
  // for NVIDIA GPUs on the PCI bus, driver or not, or ones discovery found.
  if (facts.nvidia_pci_gpu || !inventory.gpus.empty()) {
    labels.emplace("nvidia.com/gpu.present", "true");
  }
  labels.merge(amd_labels(drm));
  labels.merge(intel_labels(drm, facts));
  drop_invalid(labels, warnings);
  return labels;
}

}  // namespace gpuctk::labels
