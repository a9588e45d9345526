#pragma once
// One device set of gpuctk-device-plugin: a configuration, what discovery found under it, the resources it
// advertises, the NVML topology, the health board the streams read, and the Xid watch that marks it. The
// daemon (daemon.hpp) builds a new one at each reload, kubelet restart and retry, and swaps it in only once
// it is complete; the servers (server.hpp) hold references into it, so it lives behind a pointer and never
// moves.

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "discover/inventory.hpp"
#include "discover/nvml.hpp"
#include "plugin/config.hpp"
#include "plugin/health.hpp"
#include "plugin/preferred.hpp"
#include "plugin/resources.hpp"

namespace gpuctk::plugin {

struct Node {
  Config config;
  discover::Inventory inventory;
  std::vector<Resource> resources;
  Links links;
  HealthBoard board;
};

// The Xid watch of one node: an NVML session of its own, its event set and a thread. Stopping it closes the
// session, which discovery needs: NVML (the mock's data file too) is read anew only by a first nvmlInit.
class HealthWatch {
 public:
  HealthWatch() = default;
  HealthWatch(const HealthWatch&) = delete;
  HealthWatch& operator=(const HealthWatch&) = delete;
  ~HealthWatch() { stop(); }

  // Watches `node`'s devices, which must outlive the watch: nothing without NVML (proc discovery) or with
  // every check off, and a failing NVML session or event set leaves the devices healthy; each is logged.
  void start(Node& node, const XidPolicy& policy);
  // Ends the watch (within one NVML wait, k_health_poll) and closes its session. The board goes on.
  void stop();

 private:
  std::optional<discover::Nvml> m_nvml;
  std::optional<discover::NvmlEvents> m_events;
  std::thread m_thread;
  std::atomic<bool> m_stop{false};
};

}  // namespace gpuctk::plugin
