// A GPU's compute mode through NVML, for gpuctk-mps-control-daemon: EXCLUSIVE_PROCESS while an MPS server
// shares the GPU (only the server then holds a context on it), DEFAULT again when it stops.
#include "discover/nvml.hpp"
#include "discover/nvml_abi.h"
#include "discover/nvml_library.hpp"

namespace gpuctk::discover {

namespace {

// The GPU's handle, or an error naming it and the call.
Result<nvmlDevice_t> gpu_handle(const nvml_detail::Api& api, uint32_t gpu_index) {
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t rc = api.handle(gpu_index, &device);
  if (rc != NVML_SUCCESS) {
    return fail("nvml: GPU " + std::to_string(gpu_index) +
                ": nvmlDeviceGetHandleByIndex_v2: " + api.error_string(rc));
  }
  return device;
}

Result<void> check_gpu(const nvml_detail::Api& api, uint32_t gpu_index, nvmlReturn_t rc, const char* call) {
  if (rc != NVML_SUCCESS) {
    return fail("nvml: GPU " + std::to_string(gpu_index) + ": " + call + ": " + api.error_string(rc));
  }
  return {};
}

}  // namespace

Result<uint32_t> Nvml::compute_mode(uint32_t gpu_index) const {
  const auto& api = m_library->api;
  if (api.compute_mode == nullptr) {
    return fail("nvml: " + m_library->path + " lacks nvmlDeviceGetComputeMode");
  }
  GPUCTK_TRY_ASSIGN(nvmlDevice_t device, gpu_handle(api, gpu_index));
  nvmlComputeMode_t mode = NVML_COMPUTEMODE_DEFAULT;
  GPUCTK_TRY(check_gpu(api, gpu_index, api.compute_mode(device, &mode), "nvmlDeviceGetComputeMode"));
  return static_cast<uint32_t>(mode);
}

Result<void> Nvml::set_compute_mode(uint32_t gpu_index, uint32_t mode) const {
  const auto& api = m_library->api;
  if (api.set_compute_mode == nullptr) {
    return fail("nvml: " + m_library->path + " lacks nvmlDeviceSetComputeMode");
  }
  GPUCTK_TRY_ASSIGN(nvmlDevice_t device, gpu_handle(api, gpu_index));
  return check_gpu(api, gpu_index, api.set_compute_mode(device, static_cast<nvmlComputeMode_t>(mode)),
                   "nvmlDeviceSetComputeMode");
}

}  // namespace gpuctk::discover
