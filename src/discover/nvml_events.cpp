// NVML events for the device plugin's health check: one event set, GPUs registered by UUID, and a wait
// that sleeps in NVML (nvmlEventSetWait_v2) until an event or the timeout.
#include <algorithm>
#include <climits>

#include "discover/nvml.hpp"
#include "discover/nvml_abi.h"
#include "discover/nvml_library.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {

struct NvmlEvents::State {
  const nvml_detail::Api* api = nullptr;
  nvmlEventSet_t set = nullptr;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (set != nullptr) {
      api->event_set_free(set);
    }
  }
};

NvmlEvents::NvmlEvents(std::unique_ptr<State> state) : m_state(std::move(state)) {}
NvmlEvents::NvmlEvents(NvmlEvents&&) noexcept = default;
NvmlEvents& NvmlEvents::operator=(NvmlEvents&&) noexcept = default;
NvmlEvents::~NvmlEvents() = default;

Result<NvmlEvents> Nvml::events() const {
  const auto& api = m_library->api;
  std::vector<std::string> missing;
  const std::pair<const void*, const char*> needed[] = {
      {reinterpret_cast<const void*>(api.handle_by_uuid), "nvmlDeviceGetHandleByUUID"},
      {reinterpret_cast<const void*>(api.event_set_create), "nvmlEventSetCreate"},
      {reinterpret_cast<const void*>(api.supported_events), "nvmlDeviceGetSupportedEventTypes"},
      {reinterpret_cast<const void*>(api.register_events), "nvmlDeviceRegisterEvents"},
      {reinterpret_cast<const void*>(api.event_wait), "nvmlEventSetWait_v2"},
      {reinterpret_cast<const void*>(api.event_set_free), "nvmlEventSetFree"},
  };
  for (const auto& [address, symbol] : needed) {
    if (address == nullptr) {
      missing.emplace_back(symbol);
    }
  }
  if (!missing.empty()) {
    return fail("nvml: " + m_library->path + " lacks " + join(missing, ", ") + " (health checks need them)");
  }
  auto state = std::make_unique<NvmlEvents::State>();
  state->api = &api;
  GPUCTK_TRY(nvml_detail::check(api, api.event_set_create(&state->set), "nvmlEventSetCreate"));
  return NvmlEvents(std::move(state));
}

Result<bool> NvmlEvents::add(const std::string& uuid, uint64_t types) {
  const auto& api = *m_state->api;
  const auto step = [&](nvmlReturn_t rc, const char* call) -> Result<void> {
    if (auto checked = nvml_detail::check(api, rc, call); !checked) {
      return fail("nvml: " + uuid + ": " + checked.error().message.substr(std::string_view("nvml: ").size()));
    }
    return {};
  };
  nvmlDevice_t device = nullptr;
  GPUCTK_TRY(step(api.handle_by_uuid(uuid.c_str(), &device), "nvmlDeviceGetHandleByUUID"));
  unsigned long long supported = 0;
  GPUCTK_TRY(step(api.supported_events(device, &supported), "nvmlDeviceGetSupportedEventTypes"));
  const unsigned long long wanted = types & supported;
  if (wanted == 0) {
    return false;
  }
  const nvmlReturn_t rc = api.register_events(device, wanted, m_state->set);
  if (rc == NVML_ERROR_NOT_SUPPORTED) {
    return false;
  }
  GPUCTK_TRY(step(rc, "nvmlDeviceRegisterEvents"));
  return true;
}

Result<std::optional<NvmlEvent>> NvmlEvents::wait(std::chrono::milliseconds timeout) {
  const auto& api = *m_state->api;
  const auto ms = static_cast<unsigned int>(std::clamp<int64_t>(timeout.count(), 0, UINT_MAX));
  nvmlEventData_t data{};
  const nvmlReturn_t rc = api.event_wait(m_state->set, &data, ms);
  if (rc == NVML_ERROR_TIMEOUT) {
    return std::nullopt;
  }
  GPUCTK_TRY(nvml_detail::check(api, rc, "nvmlEventSetWait_v2"));
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  GPUCTK_TRY(nvml_detail::check(api, api.uuid(data.device, uuid, sizeof uuid), "nvmlDeviceGetUUID (event)"));
  NvmlEvent event;
  event.uuid = uuid;
  event.type = data.eventType;
  event.data = data.eventData;
  if (data.gpuInstanceId != NVML_EVENT_INSTANCE_NONE) {
    event.gi = data.gpuInstanceId;
  }
  if (data.computeInstanceId != NVML_EVENT_INSTANCE_NONE) {
    event.ci = data.computeInstanceId;
  }
  return event;
}

}  // namespace gpuctk::discover
