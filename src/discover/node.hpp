#pragma once
// The node's discovery: every vendor's GPUs and the hardware facts their inventories do not carry, read
// once for the commands that look at the whole node (`gpuctk labels`, `gpuctk info`, `cdi generate
// --vendor-set`). NVIDIA's GPUs are discovered (discover()) only where its driver is loaded; the AMD and
// Intel GPUs by their DRM devices (discover_drm_gpus). Every read is below the dev root and bounded.
//
// `cdi generate` without --vendor-set and `gpuctk install` call discover() themselves: they want NVIDIA's
// inventory or discover()'s error (no driver is an error there, not a note), and nothing of the rest.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "discover/discover.hpp"
#include "discover/drm_gpus.hpp"
#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

// Facts about the host's hardware that the inventories do not carry (labels: nvidia.com/gpu.machine,
// gpu.mode and gpu.present, Intel's device-id classes).
struct HardwareFacts {
  // /sys/class/dmi/id/product_name, trimmed ("DGX A100"); nullopt when unreadable, empty or larger than
  // 4 KiB.
  std::optional<std::string> machine;
  // The PCI class of each GPU by bus id ("0000:07:00.0"): /sys/bus/pci/devices/<bus>/class, e.g.
  // 0x030200; absent when unreadable, larger than 64 bytes or not "0x" and hex digits.
  std::map<std::string, uint32_t> pci_classes;
  // Whether /sys/bus/pci/devices has an NVIDIA display controller (vendor 0x10de, class 0x0300xx or
  // 0x0302xx), loaded driver or not: the GPU Operator's meaning of nvidia.com/gpu.present. At most
  // 65536 PCI functions are looked at.
  bool nvidia_pci_gpu = false;
};

// Reads HardwareFacts for the GPUs of `nvidia` and `drm` below `dev_root`. Missing or oversized files are
// unknown facts, never errors.
HardwareFacts read_hardware_facts(const std::string& dev_root, const Inventory& nvidia,
                                  const DrmInventory& drm = {});

// Which vendors' GPUs discover_node looks for.
struct NodeVendors {
  bool nvidia = true;
  std::vector<DrmVendor> drm{DrmVendor::amd, DrmVendor::intel};  // empty: no DRM discovery at all
};

// What discover_node found.
struct Node {
  Inventory nvidia;  // empty when NVIDIA was not looked for or its driver is not loaded
  DrmInventory drm;  // the GPUs of NodeVendors::drm; empty when none was asked for
  HardwareFacts facts;
  std::vector<std::string> warnings;  // NVIDIA discovery's, then the DRM discovery's
  // Why there is no NVIDIA inventory when NVIDIA was looked for: "no NVIDIA driver
  // (<dev-root>/proc/driver/nvidia missing)"; empty when it was discovered or not looked for.
  std::string no_nvidia_driver;
};

// Discovers `vendors` on the node: NVIDIA with discover(options) when <dev-root>/proc/driver/nvidia
// exists (else `no_nvidia_driver` says so), the DRM vendors with discover_drm_gpus(options.dev_root),
// then the hardware facts of the GPUs found. Errors are discovery's (NVIDIA's first).
Result<Node> discover_node(const DiscoverOptions& options, const NodeVendors& vendors = {});

}  // namespace gpuctk::discover
