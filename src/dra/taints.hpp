#pragma once
// Health taints of the published devices, as NVIDIA's DRA driver sets them (cmd/gpu-kubelet-plugin:
// device_health.go, allocatable.go): an NVML critical Xid event taints the devices it concerns with key
// "gpu.nvidia.com/xid", the Xid as value, effect NoSchedule, or None for the application errors of the
// skip list (plugin::XidPolicy: 13, 31, 43, 45, 68, 109 and DP_DISABLE_HEALTHCHECKS's); NVML lost taints
// every device with "gpu.nvidia.com/gpu-lost", NoSchedule. One taint per key per device: a newer Xid
// replaces the value. Nothing removes a taint but a rediscovery (the operator reset the GPU and sent
// SIGHUP, or the plugin restarted), which clears the board.
//
// Deliberate differences: with health checks off entirely (DP_DISABLE_HEALTHCHECKS=all) Xids taint
// nothing; a whole-GPU event taints every MIG device on the GPU (NVIDIA's lookup finds none when the GPU
// is not published whole); the board sets timeAdded itself, when a taint appears or its value or effect
// changes (NVIDIA leaves it to the API server), so that republishing an unchanged taint changes nothing.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/nvml.hpp"
#include "dra/devices.hpp"
#include "plugin/health.hpp"

namespace gpuctk::dra {

inline constexpr std::string_view k_xid_taint = "gpu.nvidia.com/xid";
inline constexpr std::string_view k_gpu_lost_taint = "gpu.nvidia.com/gpu-lost";
inline constexpr size_t k_max_taints = 16;  // resource.k8s.io/v1's DeviceTaintsMaxLength

// One resource.k8s.io/v1 DeviceTaint.
struct Taint {
  std::string key;         // "gpu.nvidia.com/xid"
  std::string value;       // "79"; "" for gpu-lost
  std::string effect;      // "NoSchedule" or "None"
  std::string time_added;  // RFC 3339 UTC, "2025-06-01T12:00:00Z"
  bool operator==(const Taint&) const = default;
};

// Device name -> its taints, in the order they appeared; a device without taints has no entry.
using Taints = std::map<std::string, std::vector<Taint>>;

// The devices (names) an NVML event concerns among `devices`: without both instance ids, the GPU of that
// UUID and every MIG device on it; with both, that MIG device and the GPU when it is published whole.
std::vector<std::string> devices_of_event(const std::vector<Device>& devices,
                                          const discover::NvmlEvent& event);

// `time` as RFC 3339 in UTC, to the second: "2025-06-01T12:00:00Z".
std::string rfc3339(std::chrono::system_clock::time_point time);

// The taints of the published devices, shared by the health watch (which taints, then pokes the publisher)
// and the publisher (which publishes a snapshot). Thread-safe.
class TaintBoard {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  explicit TaintBoard(std::vector<Device> devices, Clock now = &std::chrono::system_clock::now);

  // Taints the devices an Xid event concerns (other events and, with health checks off, every event
  // change nothing); whether a taint was added or changed.
  bool apply(const discover::NvmlEvent& event, const plugin::XidPolicy& policy);
  // NVML is lost: taints every device with gpu-lost; whether that changed anything.
  bool mark_lost();
  // A rediscovery: no taint any more (on `devices` from now on, when given).
  void clear(std::optional<std::vector<Device>> devices = std::nullopt);
  [[nodiscard]] Taints snapshot() const;

  // A counter that grows with every change.
  [[nodiscard]] uint64_t version() const;

 private:
  bool taint(const std::vector<std::string>& names, const Taint& wanted);
  bool taint_one(std::vector<Taint>& taints, const Taint& wanted) const;

  mutable std::mutex m_mutex;
  std::vector<Device> m_devices;
  Clock m_now;
  Taints m_taints;
  uint64_t m_version = 0;
};

}  // namespace gpuctk::dra
