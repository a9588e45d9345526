#include "plugin/node.hpp"

#include "plugin/log.hpp"

namespace gpuctk::plugin {

namespace {

// How long one NVML wait lasts before the health watch looks at its stop flags (NVML sleeps in the kernel
// meanwhile): the most SIGTERM, a reload or a kubelet restart waits for the watch to end.
constexpr auto k_health_poll = std::chrono::milliseconds(500);

}  // namespace

void HealthWatch::start(Node& node, const XidPolicy& policy) {
  stop();
  if (node.inventory.nvml_library.empty()) {
    return;  // proc discovery: said once by the daemon ("no NVML ...")
  }
  if (policy.all_disabled()) {
    log("health checks are disabled (DP_DISABLE_HEALTHCHECKS)");
    return;
  }
  auto nvml = discover::Nvml::open(node.inventory.nvml_library);
  if (!nvml) {
    log("health: " + nvml.error().message + ": devices are reported healthy and not watched");
    return;
  }
  m_nvml = std::move(*nvml);
  auto made = m_nvml->events();
  if (!made) {
    log("health: " + made.error().message + ": devices are reported healthy and not watched");
    m_nvml.reset();
    return;
  }
  m_events = std::move(*made);
  log("health: watching Xid events, skipping Xids " + policy.describe());
  m_stop = false;
  m_thread = std::thread([this, &node, policy] {
    watch_health(
        *m_events, node.resources, policy, node.board, k_health_poll,
        [](const std::string& line) { log(line); }, [this] { return m_stop.load(); });
  });
}

void HealthWatch::stop() {
  m_stop = true;
  if (m_thread.joinable()) {
    m_thread.join();
  }
  m_events.reset();  // before the session it came from
  m_nvml.reset();
}

}  // namespace gpuctk::plugin
