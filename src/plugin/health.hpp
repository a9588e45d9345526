#pragma once
// Device health, as NVIDIA's device plugin decides it (internal/rm/health.go): NVML's critical Xid
// events mark devices unhealthy, except the application errors of its skip list (13, 31, 43, 45, 68, 109)
// and what DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS say; a failed wait (NVML lost) marks every
// device unhealthy. Nothing marks a device healthy again (NVIDIA's neither) but a new board: the daemon
// starts one with each new device set (a reload, a kubelet restart), as NVIDIA's plugin starts anew. Without
// NVML (proc mode) devices are reported healthy and not watched.
//
// Deliberate differences: DP_DISABLE_HEALTHCHECKS=all with some Xids in DP_ENABLE_HEALTHCHECKS watches
// those Xids (what NVIDIA's comment on IsAllDisabled says; its code turns every check off); an event marks
// every device it concerns (each replica of the GPU, and for a whole-GPU event each MIG device on it;
// NVIDIA's map keeps one device per GPU, so it marks one); after NVML is lost the watch ends instead of
// retrying the failed wait in a loop.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "discover/nvml.hpp"
#include "plugin/resources.hpp"

namespace gpuctk::plugin {

// Which Xids count. Built from the two variables' values (comma lists of Xids, or "all"/"xids").
class XidPolicy {
 public:
  // DP_DISABLE_HEALTHCHECKS adds Xids to NVIDIA's skip list ("all" or "xids": skip every Xid);
  // DP_ENABLE_HEALTHCHECKS takes Xids off it ("all": count every Xid). Malformed entries are ignored with
  // a note in `notes`, as NVIDIA's plugin logs and ignores them.
  static XidPolicy from(std::string_view disable, std::string_view enable, std::vector<std::string>& notes);

  // Health checks are off entirely ("all" disabled and nothing enabled).
  [[nodiscard]] bool all_disabled() const;
  // Whether an Xid leaves the device healthy.
  [[nodiscard]] bool skipped(uint64_t xid) const;
  // "13, 31, 43, 45, 68, 109" (sorted, the skipped ones), or "all".
  [[nodiscard]] std::string describe() const;

 private:
  std::map<uint64_t, bool> m_disabled;  // xid -> disabled; key 0 is "all"
};

// The health of every advertised device, shared by the watcher (which marks) and the ListAndWatch
// streams (which wait for a change). Thread-safe.
class HealthBoard {
 public:
  // Marks the devices whose IDs are given; returns those that were healthy until now.
  std::vector<std::string> mark_unhealthy(const std::vector<std::string>& ids);
  [[nodiscard]] bool healthy(const std::string& id) const;
  // A counter that grows with every change.
  [[nodiscard]] uint64_t version() const;
  // Waits until version() differs from `seen`, stop() was called, wake() is called during the wait or
  // `done` (when given) is true; returns the version then (`seen` again after a wake or `done`). `done` is
  // read under the board's lock, before the wait and after every wake: a flag set before wake() is never
  // missed, even when wake() came before the wait began. With a `timeout`, the wait also ends when it
  // passed (returning `seen` when nothing changed): a caller whose `done` can turn true without a wake
  // (a gRPC stream the client cancelled) looks at it again that often.
  uint64_t wait_change(uint64_t seen, const std::function<bool()>& done = {},
                       std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
  // Ends every wait_change now without a change: a stream that is closing sets its flag (the `done` of its
  // wait), then wakes.
  void wake();
  void stop();
  [[nodiscard]] bool stopped() const;

 private:
  mutable std::mutex m_mutex;
  mutable std::condition_variable m_changed;
  std::set<std::string> m_unhealthy;
  uint64_t m_version = 0;
  uint64_t m_wakes = 0;  // how many times wake() was called
  bool m_stopped = false;
};

// The devices (IDs) an NVML event concerns among `resources`; none for a GPU they do not have. An event
// without both instance ids: every device on the GPU (its replicas, the MIG devices on it); with both:
// the MIG device of those ids, and the GPU itself where it is advertised whole.
std::vector<std::string> devices_of_event(const std::vector<Resource>& resources,
                                          const discover::NvmlEvent& event);

// Every device of the resources (IDs).
std::vector<std::string> all_devices(const std::vector<Resource>& resources);

// The event types the health check registers: Xid, double- and single-bit ECC (NVIDIA registers all
// three and then skips every event that is not an Xid).
uint64_t watched_event_types();

// What the watch decides for one event: the devices to mark, or nothing (and why, for the log).
struct EventVerdict {
  std::vector<std::string> unhealthy;
  std::string note;  // "skipped Xid 13 on GPU-…", "Xid 79 on GPU-…: marking GPU-… unhealthy"
};
EventVerdict judge_event(const std::vector<Resource>& resources, const XidPolicy& policy,
                         const discover::NvmlEvent& event);

// Watches `resources` through `events` until `board` is stopped or `stop` (when given) is true, waiting at
// most `poll` per NVML call, so that either is seen within it; `stop` ends the watch alone, the streams
// on the board go on (the daemon closes the NVML session so, to discover again). Registers every GPU of the
// resources: a GPU that cannot register is marked unhealthy, one too old for events is left healthy with a
// note. A failed wait marks everything unhealthy and ends the watch. Every decision goes to `log`.
void watch_health(discover::NvmlEvents& events, const std::vector<Resource>& resources,
                  const XidPolicy& policy, HealthBoard& board, std::chrono::milliseconds poll,
                  const std::function<void(const std::string&)>& log, const std::function<bool()>& stop = {});

}  // namespace gpuctk::plugin
