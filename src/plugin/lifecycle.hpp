#pragma once
// The device plugin daemon's life-cycle decisions, without gRPC or file descriptors (daemon.cpp acts on
// them, tests/plugin/lifecycle_test.cpp pins them): the backoff of a failed Register, the names in a
// buffer of inotify events, which resources wait for their MPS daemon, what a reload changed, and when
// a failed NVML start is refused instead of falling back to /proc.

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/config.hpp"
#include "plugin/resources.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

// The delays between failed Register calls: 1 s, doubling, at most 30 s (NVIDIA's plugin retries every
// 30 s; a kubelet that is starting answers within a second or two). reset() after a success or when the
// kubelet restarted.
class Backoff {
 public:
  static constexpr std::chrono::seconds k_first{1};
  static constexpr std::chrono::seconds k_most{30};
  // The delay before the next try; the one after it is twice as long, up to k_most.
  std::chrono::seconds next();
  void reset() { m_next = k_first; }

 private:
  std::chrono::seconds m_next = k_first;
};

// The names of the events in `buffer`, the bytes one read(2) of an inotify descriptor returned, in order;
// an event without a name (about the watched directory itself) is left out, and so is a truncated last
// event (the kernel never writes one; the bound is for safety).
std::vector<std::string> inotify_names(std::span<const char> buffer);

// Whether `resource` is shared through MPS, and so is registered only once plugin::mps_ready says its MPS
// daemon is ready (an MPS replica handed out before would find no daemon behind its pipe folder).
bool shared_through_mps(const Config& config, const Resource& resource);

// What a rebuild changed in the advertised resources, one line per resource that changed, by name:
//   "nvidia.com/gpu: 8 -> 16 devices (16 new, 8 gone)"
//   "nvidia.com/mig-3g.20gb: new, 2 devices"
//   "nvidia.com/gpu.shared: gone (16 devices)"
// Nothing when every resource has the same device IDs.
std::vector<std::string> resource_changes(const std::vector<Resource>& before,
                                          const std::vector<Resource>& after);

// Auto discovery found the driver root's NVML but it did not start (`nvml_error`, why: discover() keeps it
// only as a warning), and fell back to /proc. On a host whose driver is loaded (`version_file`,
// <dev root>/proc/driver/nvidia/version, exists: `driver_loaded`) that is a broken driver install (a
// library/module mismatch after an upgrade), which /proc would hide: every GPU advertised Healthy,
// unwatched, without topology. NVIDIA's plugin fails there; so does this, with one line:
//   "NVML did not start: nvml: nvmlInit_v2: Driver Not Loaded; the driver is loaded (<version_file>), so
//    the GPUs are not taken from /proc, where nothing would watch their health"
// A host without NVML (`nvml_error` ""), or without a loaded driver, or another discovery mode passes.
Result<void> check_nvml_start(const Config& config, std::string_view nvml_error,
                              std::string_view version_file, bool driver_loaded);

}  // namespace gpuctk::plugin
