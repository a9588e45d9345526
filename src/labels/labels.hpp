#pragma once
// Kubernetes node labels from discovery, for Node Feature Discovery's "local" source (features.d files of
// `key=value` lines) or as JSON.
//
// Each vendor has one label set, made by a pure function of what discovery found (discover::discover_node:
// the inventories and the hardware facts beside them) and merged into one sorted map; nothing here reads
// the host. NVIDIA's set has GPU Feature Discovery's (GFD's) names and meanings (nvidia_labels); AMD's and
// Intel's sets, with the names their own node labellers use, plug in beside it once discovery reports
// those GPUs. A value discovery does not know (memory and compute
// capability without NVML, the CUDA version, a MIG profile) is left out, never guessed; docs/labels.md lists
// every deliberate difference from GFD.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/discover.hpp"
#include "discover/drm_gpus.hpp"
#include "discover/inventory.hpp"
#include "discover/node.hpp"
#include "labels/sharing_config.hpp"
#include "util/error.hpp"

namespace gpuctk::labels {

// Label key -> value, sorted by key: the order of both output formats.
using Labels = std::map<std::string, std::string>;

struct NvidiaOptions {
  MigStrategy mig_strategy = MigStrategy::none;
  // The device plugin's configuration (--config-file); nullptr: none, i.e. no sharing.
  const SharingConfig* sharing = nullptr;
};

// GFD's label set for the NVIDIA GPUs of `inventory` (no GPUs: no labels):
//   nvidia.com/gpu.{count,product,memory,family,compute.major,compute.minor,replicas,sharing-strategy}
//     of one GPU model (the first whole GPU's; docs/labels.md when a node has several models),
//   nvidia.com/gpu.{machine,mode}, nvidia.com/cuda.driver.{major,minor,rev},
//   nvidia.com/cuda.driver-version.{major,minor,revision,full}, nvidia.com/cuda.runtime.{major,minor},
//   nvidia.com/cuda.runtime-version.{major,minor,full}, nvidia.com/mig.capable, nvidia.com/mps.capable,
//   nvidia.com/mig.strategy (single and mixed), the MIG device labels of the strategy: single overrides
//   nvidia.com/gpu.* with the one MIG profile (or marks it -MIG-INVALID), mixed adds
//   nvidia.com/mig-<profile>.{count,product,replicas,sharing-strategy,memory,multiprocessors,slices.gi,
//   slices.ci,engines.copy,engines.decoder,engines.encoder,engines.jpeg,engines.ofa}.
// What GFD would log is appended to `warnings`. The one error: an MPS config on a host with a MIG-enabled
// GPU (the device plugin refuses MPS there, and GFD fails).
Result<Labels> nvidia_labels(const discover::Inventory& inventory, const discover::HardwareFacts& facts,
                             const NvidiaOptions& options, std::vector<std::string>& warnings);

// AMD's node labeller's set (ROCm/k8s-device-plugin, cmd/k8s-node-labeller), each label the labeller's
// way: amd.com/gpu.<name>=<value> when every GPU with a known value has that one, else one
// amd.com/gpu.<name>.<value>=<count> per value; GPUs whose value is unknown are not counted, and no GPU
// with a known value means no label. Per PCI device (a partitioned GPU counts once): device-id ("74a1"),
// product-name (sysfs product_name, spaces as '_', no parentheses: "AMD_Instinct_MI300X_OAM"). Per KFD
// node (each partition counts, with its own share): vram (KFD's first memory bank in GiB, rounded:
// "192G"), simd-count ("1216"), cu-count (SIMDs / SIMDs per CU: "304"). The family (an ioctl's family
// id), firmware and driver versions are left out.
Labels amd_labels(const discover::DrmInventory& drm);

// The labels Intel's NFD rules give Intel GPUs (PCI class 0300 or 0380):
// gpu.intel.com/device-id.<class>-<device>.present=true and .count=<n> per class and device id, and for
// the data-centre GPUs those rules know gpu.intel.com/family (Max_Series, Flex_Series, A_Series),
// gpu.intel.com/product (Max_1100, Max_1550, Flex_140, Flex_170) and gpu.intel.com/device.count (when
// every such GPU is the same product). A GPU whose PCI class is unknown gets no device-id labels.
Labels intel_labels(const discover::DrmInventory& drm, const discover::HardwareFacts& facts);

// Every vendor's label set for the node, merged (each vendor writes only its own prefix), with invalid
// labels dropped (drop_invalid); and the GPU Operator's nvidia.com/gpu.present=true when the node has an
// NVIDIA GPU on its PCI bus (facts.nvidia_pci_gpu) or in `inventory`.
Result<Labels> node_labels(const discover::Inventory& inventory, const discover::HardwareFacts& facts,
                           const NvidiaOptions& options, std::vector<std::string>& warnings,
                           const discover::DrmInventory& drm = {});

// Removes (with one warning each) the labels Kubernetes would refuse: a key that is not
// [prefix/]name with a DNS-subdomain prefix and a name of at most 63 characters, or a value longer than
// 63 characters or not of letters, digits, '-', '_', '.' beginning and ending with a letter or digit.
void drop_invalid(Labels& labels, std::vector<std::string>& warnings);

// GFD's sanitising of names for label values: characters other than letters, digits, '-', '_', '.' and
// space are dropped, then runs of spaces become one '-' ("NVIDIA A100-SXM4-40GB" -> "NVIDIA-A100-SXM4-40GB").
std::string sanitise(std::string_view text);

// GFD's architecture family of a compute capability: 7.0 volta, 7.5 turing, 8.0 ampere, 8.9 ada-lovelace,
// 9.0 hopper, 10.x and 12.x blackwell, ...; nullopt for a major GFD does not know.
std::optional<std::string_view> architecture_family(discover::ComputeCapability capability);

// NFD's local feature file: one "key=value" line per label, in key order.
std::string format_nfd(const Labels& labels);

// A JSON object of the labels, keys in order, two-space indent, a final newline.
std::string format_json(const Labels& labels);

}  // namespace gpuctk::labels
