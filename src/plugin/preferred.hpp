#pragma once
// GetPreferredAllocation: which `size` devices of the `available` ones (always including the `required`
// ones) the plugin prefers, as NVIDIA's device plugin prefers them (internal/rm/nvml_manager.go,
// allocate.go, and go-gpuallocator's best-effort policy):
//
// * Whole GPUs, no replicas: the best-effort policy. Every pair of GPUs scores by its links (NVLinks 100
//   each; a PCIe path 10 across NUMA nodes, 20 one NUMA node, 30 one host bridge, 40 several switches, 50
//   one switch, 60 one board), a set by the sum of its pairs. It partitions all available GPUs into sets
//   of `size` (padding the last), takes the partition with the highest total whose sets include one with
//   every required GPU, and answers that partition's best set holding the required GPUs: GPUs linked by
//   NVLink first, then the same PCIe switch, host bridge, NUMA node. Ties go to the first found in
//   `available`'s order (NVIDIA's order too).
// * Replicas or MIG devices: greedy, one device at a time, the GPU with the fewest replicas already taken
//   (distributed; packed: the most), ties broken by the fewest picked from it in this answer: replicas
//   spread across GPUs.
// Required devices come first in the answer. Empty answers where NVIDIA's are empty: a size the available
// devices cannot fill, more required devices than the size.

#include <span>
#include <string>
#include <vector>

#include "discover/nvml.hpp"
#include "plugin/config.hpp"
#include "plugin/resources.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

// links[i][j] between GPUs by NVML index (discover::NvmlTopology::links); empty when unknown.
using Links = std::vector<std::vector<discover::GpuLink>>;

// NVIDIA's allocator's score of a pair of GPUs.
int link_score(const discover::GpuLink& link);

// The preferred devices (IDs). Errors: an ID the resource does not have
// ("unknown device: \"GPU-…\""), "not enough available devices to satisfy allocation" (greedy, as NVIDIA).
Result<std::vector<std::string>> preferred_allocation(const Resource& resource, const Links& links,
                                                      AllocationPolicy policy,
                                                      std::span<const std::string> available,
                                                      std::span<const std::string> required, int size);

}  // namespace gpuctk::plugin
