#pragma once
// The node's ResourceSlices (resource.k8s.io/v1) as JSON objects: the published devices of one pool, the
// node's, split in order across as many slices as the API's per-slice limit needs. A pure builder: the
// daemon creates, updates or deletes the objects (updating only those whose content changed, raising
// the pool generation on every change).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/devices.hpp"
#include "dra/taints.hpp"

namespace gpuctk::dra {

inline constexpr size_t k_max_slice_devices = 128;             // ResourceSliceMaxDevices
inline constexpr size_t k_max_slice_devices_with_taints = 64;  // ...MaxDevicesWithAdvancedFeatures

// The pool: the node's, named after it, owned by the Node object (as the kubelet's DRA helper sets it).
struct Pool {
  std::string node_name;
  std::string node_uid;
  int64_t generation = 0;
};

// The slice objects for `devices` with their `taints` (by device name): at most 128 devices a slice, 64
// when one of its devices has taints; no devices: one slice without devices, so that the pool exists.
// Slice i is named "<node>-gpu.nvidia.com-<i>", or, when that is no DNS subdomain of at most 253
// characters, slice_name's shortened form.
std::vector<nlohmann::json> build_slices(const std::vector<Device>& devices, const Taints& taints,
                                         const Pool& pool);

// The name of slice `index` of the pool of `node`: "<node>-gpu.nvidia.com-<index>" when that is a DNS
// subdomain of at most 253 characters. Otherwise (a long node name, or a last label that "-gpu" makes
// longer than 63) "<label>-<hash>-gpu.nvidia.com-<index>": <label> the node name's first label, lower
// case, other characters than [a-z0-9-] as '-', cut to 40 characters ("node" when nothing is left),
// <hash> the 16 hex digits of the node name's 64-bit FNV-1a hash, so two long node names stay apart.
std::string slice_name(const std::string& node, size_t index);

// Whether a published slice has the content of a wanted one: the same name, labels of the owner and spec,
// whatever metadata the API server set (uid, resourceVersion, managedFields, creationTimestamp...).
bool same_content(const nlohmann::json& published, const nlohmann::json& wanted);

}  // namespace gpuctk::dra
