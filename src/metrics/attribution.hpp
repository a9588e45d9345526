#pragma once
// Which pod holds which device, from the kubelet's pod-resources API (v1 List): the answer decoded into
// plain structs by the exporter's client (pod_resources.hpp), then mapped onto the collection's devices here.
// Device IDs are what device plugins advertise: a GPU's UUID ("GPU-…"), a MIG device's ("MIG-…"), a
// time-sliced or MPS replica of either ("<uuid>::<n>", gpuctk's and NVIDIA's plugin); resources are
// nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-<profile> and any other name under nvidia.com/.
//
// Everything here came from the kubelet and is bounded: at most k_max_pods pods, k_max_containers
// containers per pod, k_max_device_ids device IDs per container and k_max_holders holders per device;
// names longer than 253 bytes are refused. What is cut or refused is counted in the warnings, never
// silently dropped.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "metrics/exposition.hpp"

namespace gpuctk::metrics {

inline constexpr std::size_t k_max_pods = 4096;
inline constexpr std::size_t k_max_containers = 64;
inline constexpr std::size_t k_max_device_ids = 1024;
inline constexpr std::size_t k_max_holders = 64;

// One container's devices of one resource, as pod-resources lists them.
struct ContainerDevices {
  std::string pod;
  std::string namespace_name;
  std::string container;
  std::string resource_name;            // "nvidia.com/gpu"
  std::vector<std::string> device_ids;  // "GPU-…", "MIG-…", "GPU-…::3"
  // IDs listed past the first k_max_device_ids that the client did not copy (attribute counts them with
  // the ones it cuts itself), so a hostile answer of tiny IDs never costs more memory than the bound.
  std::size_t device_ids_not_copied = 0;
};

struct Attribution {
  // Holders by device UUID ("GPU-…" or "MIG-…", replica suffixes taken off), sorted and unique.
  std::map<std::string, std::vector<Holder>> holders;
  // One line per kind of cut, counted, naming the first thing it left out with untrusted text escaped:
  // "pod-resources: 3 pods past the first 4096 left out (the first: ml/train-4096)", "pod-resources: 1
  // name of more than 253 bytes left out (the first: a device ID of 300 bytes in nvidia.com/gpu of
  // ml/train-0/main)". Kinds: pods, containers of a pod, device IDs of a container, holders of a device,
  // names of more than 253 bytes, device IDs without a GPU or MIG device UUID. Resources outside
  // nvidia.com/ are not NVIDIA's: ignored without a warning.
  std::vector<std::string> warnings;
};

// Maps the listed devices of NVIDIA resources onto device UUIDs.
Attribution attribute(const std::vector<ContainerDevices>& listed);

// Sets each device's holders in `collection` from `attribution` (a MIG device by its MIG UUID, a GPU by
// its UUID); devices no pod holds get none.
void apply(const Attribution& attribution, Collection& collection);

}  // namespace gpuctk::metrics
