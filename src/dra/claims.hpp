#pragma once
// What a ResourceClaim (resource.k8s.io/v1) allocated on this node to gpuctk-dra-plugin's driver: the
// kubelet names the claim (namespace, name, UID); the plugin reads the claim object from the API server
// and takes the allocation results of its own driver in this node's pool. The claim object is hostile
// input: every field read is type-checked and bounded, and text from it reaches errors quoted.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace gpuctk::dra {

// A claim as the kubelet names it in NodePrepareResources / NodeUnprepareResources.
struct ClaimRef {
  std::string namespace_name;
  std::string uid;
  std::string name;
  bool operator==(const ClaimRef&) const = default;
};

// One allocation result of this driver: the claim's request that got it (`<request>` or
// `<request>/<subrequest>`), the pool and the DRA device name in it ("gpu-0").
struct AllocatedDevice {
  std::string request;
  std::string pool;
  std::string device;
  bool operator==(const AllocatedDevice&) const = default;
};

// The most results an allocation may have (resource.k8s.io/v1's AllocationResultsMaxSize).
inline constexpr size_t k_max_allocation_results = 32;

// Success, or why `uid` is not a Kubernetes object UID as the API server makes them: 36 characters,
// hexadecimal digits in groups of 8-4-4-4-12 joined by "-". The claim UID names files (the claim's CDI
// spec), so nothing else passes: `claim uid "../x" is not a UID (want 8-4-4-4-12 hexadecimal digits)`.
Result<void> check_claim_uid(std::string_view uid);

// Success, or why `ref` is not a claim reference the kubelet can send: the UID as check_claim_uid, the
// namespace a DNS label, the name a DNS subdomain (then "ns/name" is safe to print unquoted).
Result<void> check_claim_ref(const ClaimRef& ref);

// "<namespace>/<name>" of a checked reference, as errors name the claim.
std::string claim_text(const ClaimRef& ref);

// The results of `claim` (a ResourceClaim as JSON) for `driver` in the pool `node_name` (NVIDIA's driver
// publishes each node's devices in a pool named after the node), in the claim's order; results of other
// drivers, or of other pools, are left out: no device there is this node's to prepare. Errors, each one line:
//   claim uid "a..." is not the UID the kubelet named ("b..."): the claim was deleted and made again
//   claim namespace "x" is not the one the kubelet named ("y")   (and the same for the name)
//   not allocated                                               (no status.allocation)
//   allocated for another node (its node selector does not select "node-1")
//   node selector: cannot evaluate matchExpressions (node labels) for node "node-1"
//   more than 32 allocation results (33)
//   no device of driver gpu.nvidia.com in this node's pool
//   status.allocation.devices.results[1].device: expected a string
// A node selector (status.allocation.nodeSelector, a core/v1 NodeSelector) is evaluated as Kubernetes
// does: its terms ORed, each term's requirements ANDed, an empty term selects nothing. matchFields on
// metadata.name with In or NotIn is what the scheduler writes for a node-local allocation; matchExpressions
// need the node's labels, which the plugin does not have: a selector that only such a term could satisfy is
// refused rather than guessed.
Result<std::vector<AllocatedDevice>> allocated_devices(const nlohmann::json& claim, const ClaimRef& ref,
                                                       std::string_view node_name, std::string_view driver);

}  // namespace gpuctk::dra
