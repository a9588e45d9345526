#include "plugin/health.hpp"

#include <algorithm>
#include <cctype>

#include "discover/nvml_abi.h"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

constexpr uint64_t k_all = 0;  // the "every Xid" key of XidPolicy::m_disabled

// Xids of application errors: the GPU is still healthy (NVIDIA's plugin's hard-coded skip list).
constexpr uint64_t k_skipped_xids[] = {
    13,   // Graphics Engine Exception
    31,   // GPU memory page fault
    43,   // GPU stopped processing
    45,   // Preemptive cleanup, due to previous errors
    68,   // Video processor exception
    109,  // Context Switch Timeout Error
};

// One variable's value: {} for nothing, {k_all: true} for "all"/"xids", else each Xid -> true.
std::map<uint64_t, bool> xid_list(std::string_view text, std::string_view variable,
                                  std::vector<std::string>& notes) {
  std::map<uint64_t, bool> out;
  for (const auto item : split(text, ',')) {
    std::string lower(trim(item));
    std::ranges::transform(lower, lower.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "all" || lower == "xids") {
      return {{k_all, true}};
    }
    if (lower.empty()) {
      continue;
    }
    if (const auto xid = parse_unsigned(lower)) {
      out[*xid] = true;
    } else {
      notes.push_back(std::string(variable) + ": ignoring the malformed Xid " + quote(lower));
    }
  }
  return out;
}

}  // namespace

XidPolicy XidPolicy::from(std::string_view disable, std::string_view enable,
                          std::vector<std::string>& notes) {
  XidPolicy policy;
  policy.m_disabled = xid_list(disable, "DP_DISABLE_HEALTHCHECKS", notes);
  for (const uint64_t xid : k_skipped_xids) {
    policy.m_disabled[xid] = true;
  }
  // An enabled Xid beats a disabled one; "all" enabled means every Xid counts.
  for (const auto& [xid, unused] : xid_list(enable, "DP_ENABLE_HEALTHCHECKS", notes)) {
    policy.m_disabled[xid] = false;
  }
  return policy;
}

bool XidPolicy::all_disabled() const {
  const auto it = m_disabled.find(k_all);
  return it != m_disabled.end() && it->second &&
         std::ranges::none_of(m_disabled, [](const auto& entry) { return !entry.second; });
}

bool XidPolicy::skipped(uint64_t xid) const {
  if (const auto all = m_disabled.find(k_all); all != m_disabled.end() && !all->second) {
    return false;  // every Xid enabled
  }
  if (const auto it = m_disabled.find(xid); it != m_disabled.end()) {
    return it->second;
  }
  // Not named: skipped when "all" is disabled, whatever else is enabled.
  const auto all = m_disabled.find(k_all);
  return all != m_disabled.end() && all->second;
}

std::string XidPolicy::describe() const {
  if (all_disabled()) {
    return "all";
  }
  if (const auto all = m_disabled.find(k_all); all != m_disabled.end() && !all->second) {
    return {};  // every Xid enabled: none skipped
  }
  std::vector<std::string> xids;
  for (const auto& [xid, disabled] : m_disabled) {
    if (xid != k_all && disabled) {
      xids.push_back(std::to_string(xid));
    }
  }
  return join(xids, ", ");
}

std::vector<std::string> HealthBoard::mark_unhealthy(const std::vector<std::string>& ids) {
  std::vector<std::string> changed;
  {
    const std::lock_guard lock(m_mutex);
    for (const auto& id : ids) {
      if (m_unhealthy.insert(id).second) {
        changed.push_back(id);
      }
    }
    if (!changed.empty()) {
      ++m_version;
    }
  }
  if (!changed.empty()) {
    m_changed.notify_all();
  }
  return changed;
}

bool HealthBoard::healthy(const std::string& id) const {
  const std::lock_guard lock(m_mutex);
  return !m_unhealthy.contains(id);
}

uint64_t HealthBoard::version() const {
  const std::lock_guard lock(m_mutex);
  return m_version;
}

uint64_t HealthBoard::wait_change(uint64_t seen, const std::function<bool()>& done,
                                  std::optional<std::chrono::milliseconds> timeout) const {
  std::unique_lock lock(m_mutex);
  const uint64_t wakes = m_wakes;
  const auto over = [&] { return m_version != seen || m_stopped || m_wakes != wakes || (done && done()); };
  if (timeout) {
    m_changed.wait_for(lock, *timeout, over);
  } else {
    m_changed.wait(lock, over);
  }
  return m_version;
}

void HealthBoard::wake() {
  {
    const std::lock_guard lock(m_mutex);
    ++m_wakes;
  }
  m_changed.notify_all();
}

void HealthBoard::stop() {
  {
    const std::lock_guard lock(m_mutex);
    m_stopped = true;
  }
  m_changed.notify_all();
}

bool HealthBoard::stopped() const {
  const std::lock_guard lock(m_mutex);
  return m_stopped;
}

std::vector<std::string> devices_of_event(const std::vector<Resource>& resources,
                                          const discover::NvmlEvent& event) {
  const bool instance = event.gi.has_value() && event.ci.has_value();
  std::vector<std::string> out;
  for (const auto& resource : resources) {
    for (const auto& device : resource.devices) {
      if (device.gpu_uuid != event.uuid) {
        continue;  // events come on the GPU's UUID, a MIG device's too
      }
      if (device.is_mig() && instance && (device.gi != event.gi || device.ci != event.ci)) {
        continue;  // another MIG instance of the GPU
      }
      out.push_back(device.id);
    }
  }
  return out;
}

EventVerdict judge_event(const std::vector<Resource>& resources, const XidPolicy& policy,
                         const discover::NvmlEvent& event) {
  EventVerdict verdict;
  std::string what = event.uuid;
  if (event.gi && event.ci) {
    what += " (GPU instance " + std::to_string(*event.gi) + ", compute instance " +
            std::to_string(*event.ci) + ")";
  }
  if (event.type != static_cast<uint64_t>(nvmlEventTypeXidCriticalError)) {
    verdict.note = "skipped a non-Xid event (type " + std::to_string(event.type) + ") on " + what;
    return verdict;
  }
  if (policy.skipped(event.data)) {
    verdict.note = "skipped Xid " + std::to_string(event.data) + " on " + what;
    return verdict;
  }
  verdict.unhealthy = devices_of_event(resources, event);
  if (verdict.unhealthy.empty()) {
    verdict.note = "Xid " + std::to_string(event.data) + " on " + what + ": no device of this plugin";
  } else {
    verdict.note = "Xid " + std::to_string(event.data) + " on " + what + ": marking " +
                   join(verdict.unhealthy, ", ") + " unhealthy";
  }
  return verdict;
}

void watch_health(discover::NvmlEvents& events, const std::vector<Resource>& resources,
                  const XidPolicy& policy, HealthBoard& board, std::chrono::milliseconds poll,
                  const std::function<void(const std::string&)>& log, const std::function<bool()>& stop) {
  std::vector<std::string> gpus;
  for (const auto& resource : resources) {
    for (const auto& device : resource.devices) {
      if (std::ranges::find(gpus, device.gpu_uuid) == gpus.end()) {
        gpus.push_back(device.gpu_uuid);
      }
    }
  }
  for (const auto& gpu : gpus) {
    auto added = events.add(gpu, watched_event_types());
    if (!added) {
      const discover::NvmlEvent whole{
          .uuid = gpu, .type = 0, .data = 0, .gi = std::nullopt, .ci = std::nullopt};
      const auto marked = board.mark_unhealthy(devices_of_event(resources, whole));
      log("health: " + added.error().message + ": marking " + join(marked, ", ") + " unhealthy");
    } else if (!*added) {
      log("health: " + gpu + " is too old for health checks (no Xid events): left healthy");
    }
  }
  while (!board.stopped() && !(stop && stop())) {
    auto event = events.wait(poll);
    if (!event) {
      const auto marked = board.mark_unhealthy(all_devices(resources));
      log("health: " + event.error().message + ": marking every device unhealthy (" + join(marked, ", ") +
          "); health checks end");
      return;
    }
    if (!*event) {
      continue;  // nothing within `poll`: look at the stop flag
    }
    const auto verdict = judge_event(resources, policy, **event);
    board.mark_unhealthy(verdict.unhealthy);
    log("health: " + verdict.note);
  }
}

std::vector<std::string> all_devices(const std::vector<Resource>& resources) {
  std::vector<std::string> out;
  for (const auto& resource : resources) {
    for (const auto& device : resource.devices) {
      out.push_back(device.id);
    }
  }
  return out;
}

uint64_t watched_event_types() {
  return static_cast<uint64_t>(nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError |
                               nvmlEventTypeSingleBitEccError);
}

}  // namespace gpuctk::plugin
