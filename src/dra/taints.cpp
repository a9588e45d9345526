// The health taints board: which devices an NVML event concerns, and one taint per key per device.
#include "dra/taints.hpp"

#include <algorithm>
#include <ctime>
#include <utility>

#include "discover/nvml_abi.h"

namespace gpuctk::dra {

namespace {

constexpr std::string_view k_no_schedule = "NoSchedule";
constexpr std::string_view k_none = "None";  // informational: NVIDIA's effect for a skipped Xid

}  // namespace

std::vector<std::string> devices_of_event(const std::vector<Device>& devices,
                                          const discover::NvmlEvent& event) {
  const bool instance = event.gi.has_value() && event.ci.has_value();
  std::vector<std::string> out;
  for (const auto& device : devices) {
    const std::string& gpu_uuid = device.mig ? device.parent_uuid : device.uuid;
    if (gpu_uuid != event.uuid) {
      continue;  // events come on the GPU's UUID, a MIG device's too
    }
    if (device.mig && instance && (device.gi != *event.gi || device.ci != *event.ci)) {
      continue;  // another MIG instance of the GPU
    }
    out.push_back(device.name);
  }
  return out;
}

std::string rfc3339(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32] = {};
  const size_t size = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text, size);
}

TaintBoard::TaintBoard(std::vector<Device> devices, Clock now)
    : m_devices(std::move(devices)), m_now(std::move(now)) {}

bool TaintBoard::apply(const discover::NvmlEvent& event, const plugin::XidPolicy& policy) {
  if (event.type != static_cast<uint64_t>(nvmlEventTypeXidCriticalError) || policy.all_disabled()) {
    return false;
  }
  const Taint wanted{.key = std::string(k_xid_taint),
                     .value = std::to_string(event.data),
                     .effect = std::string(policy.skipped(event.data) ? k_none : k_no_schedule),
                     .time_added = {}};
  const std::lock_guard lock(m_mutex);
  return taint(devices_of_event(m_devices, event), wanted);
}

bool TaintBoard::mark_lost() {
  const Taint wanted{.key = std::string(k_gpu_lost_taint),
                     .value = {},
                     .effect = std::string(k_no_schedule),
                     .time_added = {}};
  const std::lock_guard lock(m_mutex);
  std::vector<std::string> names;
  for (const auto& device : m_devices) {
    names.push_back(device.name);
  }
  return taint(names, wanted);
}

void TaintBoard::clear(std::optional<std::vector<Device>> devices) {
  {
    const std::lock_guard lock(m_mutex);
    if (devices) {
      m_devices = std::move(*devices);
    }
    if (m_taints.empty()) {
      return;
    }
    m_taints.clear();
    ++m_version;
  }
}

Taints TaintBoard::snapshot() const {
  const std::lock_guard lock(m_mutex);
  return m_taints;
}

// Under the lock; counts one change when any device's taints changed.
bool TaintBoard::taint(const std::vector<std::string>& names, const Taint& wanted) {
  bool any = false;
  for (const auto& name : names) {
    any = taint_one(m_taints[name], wanted) || any;
    if (m_taints[name].empty()) {
      m_taints.erase(name);
    }
  }
  if (any) {
    ++m_version;
  }
  return any;
}

// One taint per key: the same value and effect change nothing, another replaces them with a new time; a
// new key beyond the API's 16 is not added.
bool TaintBoard::taint_one(std::vector<Taint>& taints, const Taint& wanted) const {
  const auto same_key = std::ranges::find(taints, wanted.key, &Taint::key);
  if (same_key != taints.end() && same_key->value == wanted.value && same_key->effect == wanted.effect) {
    return false;
  }
  if (same_key == taints.end() && taints.size() >= k_max_taints) {
    return false;
  }
  Taint taint = wanted;
  taint.time_added = rfc3339(m_now());
  if (same_key != taints.end()) {
    *same_key = std::move(taint);
  } else {
    taints.push_back(std::move(taint));
  }
  return true;
}

uint64_t TaintBoard::version() const {
  const std::lock_guard lock(m_mutex);
  return m_version;
}

}  // namespace gpuctk::dra
