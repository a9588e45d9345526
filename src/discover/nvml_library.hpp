#pragma once
// Internals of discover/nvml.hpp shared by its source files (nvml.cpp: loading and the report;
// nvml_events.cpp; nvml_topology.cpp; nvml_sample.cpp). Not for other modules.

#include <memory>
#include <string>

#include "discover/nvml.hpp"
#include "discover/nvml_abi.h"
#include "util/error.hpp"

namespace gpuctk::discover::nvml_detail {

// The NVML entry points gpuctk calls. Which are required and which optional is k_entry_points'
// business (nvml.cpp); optional ones are null when the library lacks them.
struct Api {
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlSystemGetCudaDriverVersion_fn cuda_version = nullptr;
  nvmlDeviceGetCount_v2_fn count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn handle = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetMinorNumber_fn minor = nullptr;
  nvmlDeviceGetPciInfo_v3_fn pci = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetCudaComputeCapability_fn compute_capability = nullptr;
  nvmlDeviceGetBrand_fn brand = nullptr;
  nvmlDeviceGetArchitecture_fn architecture = nullptr;
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_handle = nullptr;
  nvmlDeviceGetGpuInstanceId_fn gi = nullptr;
  nvmlDeviceGetComputeInstanceId_fn ci = nullptr;
  nvmlDeviceGetAttributes_v2_fn attributes = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfo_fn gi_profile_info = nullptr;
  nvmlDeviceGetGpuInstanceById_fn gi_by_id = nullptr;
  nvmlGpuInstanceGetInfo_fn gi_info = nullptr;
  // The device plugin's: events (health) and topology (preferred allocation).
  nvmlDeviceGetHandleByUUID_fn handle_by_uuid = nullptr;
  nvmlEventSetCreate_fn event_set_create = nullptr;
  nvmlDeviceGetSupportedEventTypes_fn supported_events = nullptr;
  nvmlDeviceRegisterEvents_fn register_events = nullptr;
  nvmlEventSetWait_v2_fn event_wait = nullptr;
  nvmlEventSetFree_fn event_set_free = nullptr;
  nvmlDeviceGetTopologyCommonAncestor_fn common_ancestor = nullptr;
  nvmlDeviceGetNvLinkState_fn nvlink_state = nullptr;
  nvmlDeviceGetNvLinkRemotePciInfo_v2_fn nvlink_remote_pci = nullptr;
  // gpuctk-mps-control-daemon's: each MPS-shared GPU's compute mode.
  nvmlDeviceGetComputeMode_fn compute_mode = nullptr;
  nvmlDeviceSetComputeMode_fn set_compute_mode = nullptr;
  // gpuctk-exporter's readings (Nvml::sample): each one a reading is nullopt without.
  nvmlDeviceGetClockInfo_fn clock_info = nullptr;
  nvmlDeviceGetTemperature_fn temperature = nullptr;
  nvmlDeviceGetFieldValues_fn field_values = nullptr;
  nvmlDeviceGetPowerUsage_fn power_usage = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_fn total_energy = nullptr;
  nvmlDeviceGetPcieThroughput_fn pcie_throughput = nullptr;
  nvmlDeviceGetPcieReplayCounter_fn pcie_replays = nullptr;
  nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
  nvmlDeviceGetEncoderUtilization_fn encoder_utilization = nullptr;
  nvmlDeviceGetDecoderUtilization_fn decoder_utilization = nullptr;
  nvmlDeviceGetMemoryInfo_v2_fn memory_v2 = nullptr;
  nvmlDeviceGetRemappedRows_fn remapped_rows = nullptr;
  nvmlDeviceGetTotalEccErrors_fn total_ecc = nullptr;
  nvmlDeviceGetRetiredPages_fn retired_pages = nullptr;
  nvmlDeviceGetRetiredPagesPendingStatus_fn retired_pending = nullptr;
};

struct DlClose {
  void operator()(void* handle) const;
};

// "nvml: <call>: <NVML's text of rc>" when rc is not NVML_SUCCESS.
Result<void> check(const Api& api, nvmlReturn_t rc, const char* call);

}  // namespace gpuctk::discover::nvml_detail

namespace gpuctk::discover {

struct Nvml::Library {
  std::unique_ptr<void, nvml_detail::DlClose> handle;  // destroyed last: after the shutdown below
  std::string path;
  nvml_detail::Api api;
  std::string warning;  // the optional entry points the report lacks; empty when none
  bool initialised = false;

  Library() = default;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (initialised) {
      api.shutdown();
    }
  }
};

}  // namespace gpuctk::discover
