#pragma once
// GPU discovery through NVML. The library is dlopen'ed from an absolute path inside the driver root
// (never the process's own search path), queried once, shut down and unloaded. Only `gpuctk cdi generate`,
// `gpuctk info` and `gpuctk labels` use it, and two long-running services that keep a session open: the
// device plugin, for Xid events (health) and how the GPUs are linked (preferred allocation), and
// gpuctk-exporter, which samples each device's readings (Nvml::sample) at every collection. The hook
// never initialises NVML.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

struct NvmlMig {
  uint32_t index = 0;  // MIG device index under the parent
  uint32_t gi = 0;
  uint32_t ci = 0;
  std::string uuid;
  std::string profile;  // "3g.20gb", "1g.24gb+gfx": slice counts, memory size, graphics; "" when unknown
  uint64_t memory_bytes = 0;                // 0 when unknown
  std::optional<MigAttributes> attributes;  // unknown without nvmlDeviceGetAttributes_v2
  // Its GPU instance has a graphics-capable profile (NVML's *_SLICE_GFX); false when NVML cannot say.
  bool graphics = false;
};

struct NvmlGpu {
  uint32_t index = 0;
  uint32_t minor = 0;
  std::string uuid;
  std::string name;
  std::string bus_id;         // canonical "0000:07:00.0"
  uint64_t memory_bytes = 0;  // 0 when unknown
  bool mig_enabled = false;
  bool mig_capable = false;                             // nvmlDeviceGetMigMode is supported
  std::optional<ComputeCapability> compute_capability;  // unknown without nvmlDeviceGetCudaComputeCapability
  // NVML's brand and architecture as go-nvlib names them ("Tesla", "Ada Lovelace"); unknown without
  // nvmlDeviceGetBrand / nvmlDeviceGetArchitecture, when the call fails or for a value it has no name for.
  std::optional<std::string> brand;
  std::optional<std::string> architecture;
  std::vector<NvmlMig> migs;
};

struct NvmlReport {
  std::string driver_version;  // "550.54.15"
  std::string cuda_version;    // "12.4"; "" when unknown
  std::vector<NvmlGpu> gpus;   // by index
  // One line when the library lacks entry points that only enrich the report (an older driver): which
  // ones, and which fields are therefore unknown.
  std::vector<std::string> warnings;
};

// The PCIe path between two GPUs, from NVML's nearest common ancestor (nvmlGpuTopologyLevel_t), weakest
// first; the names are NVIDIA's allocator's (go-gpuallocator's P2PLinkType).
enum class PciePath {
  unknown,        // NVML cannot say (no topology support): the pair scores nothing
  cross_cpu,      // NVML_TOPOLOGY_SYSTEM: across NUMA nodes
  same_cpu,       // NVML_TOPOLOGY_NODE: one NUMA node, several host bridges
  host_bridge,    // NVML_TOPOLOGY_HOSTBRIDGE
  multi_switch,   // NVML_TOPOLOGY_MULTIPLE: several PCIe switches
  single_switch,  // NVML_TOPOLOGY_SINGLE: one PCIe switch
  same_board,     // NVML_TOPOLOGY_INTERNAL: two GPUs of one board
};

// How two GPUs are linked: the PCIe path and the active NVLinks between them.
struct GpuLink {
  PciePath pcie = PciePath::unknown;
  uint32_t nvlinks = 0;
  bool operator==(const GpuLink&) const = default;
};

// links[i][j]: GPU i to GPU j by NVML index (links[i][i] is {}); symmetric as NVML reports it.
struct NvmlTopology {
  std::vector<std::vector<GpuLink>> links;
  // What could not be read, one line each (a library without the topology calls: every link unknown).
  std::vector<std::string> warnings;
};

// One event of an NvmlEvents set.
struct NvmlEvent {
  std::string uuid;            // the GPU's ("GPU-...")
  uint64_t type = 0;           // one nvmlEventType* bit (nvml_abi.h)
  uint64_t data = 0;           // the Xid of an Xid event
  std::optional<uint32_t> gi;  // the MIG GPU instance it concerns; nullopt: the whole GPU
  std::optional<uint32_t> ci;  // the MIG compute instance it concerns; nullopt: the whole GPU
  bool operator==(const NvmlEvent&) const = default;
};

// One device's readings at one moment, in NVML's own units: what gpuctk-exporter collects. nullopt: NVML
// cannot give it on this device (NOT_SUPPORTED, NO_PERMISSION, NOT_FOUND, or the library lacks the entry
// point), never a made-up 0. A MIG device answers little through NVML: its memory at least.
struct NvmlSample {
  std::optional<uint32_t> sm_clock_mhz;          // nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  std::optional<uint32_t> memory_clock_mhz;      // nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)
  std::optional<uint32_t> gpu_temperature_c;     // nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)
  std::optional<uint32_t> memory_temperature_c;  // nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)
  std::optional<uint32_t> power_mw;              // nvmlDeviceGetPowerUsage
  std::optional<uint64_t> energy_mj;         // nvmlDeviceGetTotalEnergyConsumption (since the driver loaded)
  std::optional<uint32_t> pcie_tx_kb_per_s;  // nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_TX_BYTES)
  std::optional<uint32_t> pcie_rx_kb_per_s;  // nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_RX_BYTES)
  std::optional<uint32_t> pcie_replays;      // nvmlDeviceGetPcieReplayCounter
  std::optional<uint32_t> gpu_utilization;   // nvmlDeviceGetUtilizationRates .gpu, %
  std::optional<uint32_t> memory_utilization;   // nvmlDeviceGetUtilizationRates .memory, %
  std::optional<uint32_t> encoder_utilization;  // nvmlDeviceGetEncoderUtilization, %
  std::optional<uint32_t> decoder_utilization;  // nvmlDeviceGetDecoderUtilization, %
  std::optional<uint64_t> fb_total_bytes;       // nvmlDeviceGetMemoryInfo_v2 (else nvmlDeviceGetMemoryInfo)
  std::optional<uint64_t> fb_used_bytes;
  std::optional<uint64_t> fb_free_bytes;
  std::optional<uint64_t> fb_reserved_bytes;          // _v2 only
  std::optional<uint32_t> remapped_rows_correctable;  // nvmlDeviceGetRemappedRows
  std::optional<uint32_t> remapped_rows_uncorrectable;
  std::optional<bool> row_remap_pending;
  std::optional<bool> row_remap_failure;
  std::optional<uint64_t> nvlink_tx_kib;      // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: all links, since load
  std::optional<uint64_t> nvlink_rx_kib;      // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
  std::optional<uint64_t> ecc_sbe_volatile;   // nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE_ECC)
  std::optional<uint64_t> ecc_dbe_volatile;   // (UNCORRECTED, VOLATILE_ECC)
  std::optional<uint64_t> ecc_sbe_aggregate;  // (CORRECTED, AGGREGATE_ECC)
  std::optional<uint64_t> ecc_dbe_aggregate;  // (UNCORRECTED, AGGREGATE_ECC)
  std::optional<uint32_t>
      retired_pages_sbe;  // nvmlDeviceGetRetiredPages(MULTIPLE_SINGLE_BIT_ECC_ERRORS) count
  std::optional<uint32_t> retired_pages_dbe;  // (DOUBLE_BIT_ECC_ERROR) count
  std::optional<bool> retired_pages_pending;  // nvmlDeviceGetRetiredPagesPendingStatus
  bool operator==(const NvmlSample&) const = default;
};

class Nvml;

// An NVML event set: GPUs registered for event types, and a blocking wait for the next event (NVML
// sleeps in the kernel; nothing polls). Made by Nvml::events; the Nvml it came from must outlive it.
// Move-only; freed when it goes away.
class NvmlEvents {
 public:
  // Registers the event `types` the GPU `uuid` supports (nvmlDeviceGetSupportedEventTypes masks them).
  // false when the GPU supports none of them or NVML says NOT_SUPPORTED (a GPU too old for events).
  // Errors name the GPU and the call: "nvml: GPU-…: nvmlDeviceGetHandleByUUID: Not Found".
  Result<bool> add(const std::string& uuid, uint64_t types);

  // The next event, waiting at most `timeout`; nullopt when none came in time. An error is NVML's
  // failure to wait ("nvml: nvmlEventSetWait_v2: GPU is lost"): the GPUs can no longer be watched.
  Result<std::optional<NvmlEvent>> wait(std::chrono::milliseconds timeout);

  NvmlEvents(NvmlEvents&&) noexcept;
  NvmlEvents& operator=(NvmlEvents&&) noexcept;
  ~NvmlEvents();

 private:
  friend class Nvml;
  struct State;
  explicit NvmlEvents(std::unique_ptr<State> state);
  std::unique_ptr<State> m_state;
};

// An initialised NVML: the library loaded, its entry points resolved, nvmlInit_v2 done. Shut down and
// unloaded when it goes away. Move-only.
//
// Entry points are of two kinds. Required ones name, enumerate and place the devices (driver version,
// GPU count, handle, UUID, name, minor, PCI bus id, MIG mode and MIG devices): a library lacking one
// cannot serve. Optional ones only enrich the report (CUDA version, GPU memory, compute capability, MIG
// attributes, i.e. profile, memory, slices and engines, and whether a MIG device is graphics capable): a
// library lacking them serves, those fields are unknown and the report carries one warning. The device
// plugin's (events, topology) and the exporter's (every reading of NvmlSample) are optional too, and
// missing ones are said only by the call that needs them (events, topology), or not at all (sample: the
// reading is nullopt).
class Nvml {
 public:
  // The library at `library_path`, ready to query. Errors, each meaning "this library cannot serve":
  //   nvml: load <path>: <dlerror text>
  //   nvml: <path>: missing nvmlSystemGetDriverVersion, nvmlDeviceGetCount_v2 (required entry points)
  //   nvml: nvmlInit_v2: Driver Not Loaded
  static Result<Nvml> open(const std::string& library_path);

  // Every GPU and MIG device. A failing call is an error naming it and NVML's message, e.g.
  // "nvml: GPU 0: nvmlDeviceGetUUID: GPU is lost".
  [[nodiscard]] Result<NvmlReport> report() const;

  // How every pair of GPUs is linked (nvmlDeviceGetTopologyCommonAncestor, and the NVLinks whose remote
  // end is the other GPU's bus id). A library without those calls, or a pair NVML answers
  // NOT_SUPPORTED for, is an unknown link and one warning, never an error; a failing query is.
  [[nodiscard]] Result<NvmlTopology> topology() const;

  // The readings of GPU `gpu_index` (NVML's index), or of its MIG device `mig_index` (the slot under it,
  // NvmlMig::index). Every call of NvmlSample is made, on a MIG handle too (NVML refuses what a MIG device
  // cannot give). A reading NVML cannot give is nullopt (NvmlSample): NOT_SUPPORTED, NO_PERMISSION,
  // NOT_FOUND, FUNCTION_NOT_FOUND, INVALID_ARGUMENT (NVML's answer to a query a MIG handle cannot do), or
  // the library lacks the entry point. An error only when NVML itself can no longer serve (GPU_IS_LOST,
  // UNINITIALIZED, DRIVER_NOT_LOADED, LIB_RM_VERSION_MISMATCH, RESET_REQUIRED, UNKNOWN, any other code,
  // or any failure of the handle lookup), naming the device and the call:
  // "nvml: GPU 0: nvmlDeviceGetPowerUsage: GPU is lost", "nvml: GPU 0 MIG 1: nvmlDeviceGetMemoryInfo_v2:
  // Unknown Error"; the caller then closes this Nvml and opens a new one later (a driver reload).
  [[nodiscard]] Result<NvmlSample> sample(uint32_t gpu_index, std::optional<uint32_t> mig_index = {}) const;

  // The compute mode of GPU `gpu_index` (NVML's index): nvmlComputeMode_t's value (0 DEFAULT, 2
  // PROHIBITED, 3 EXCLUSIVE_PROCESS). Errors name the GPU and the call ("nvml: GPU 0:
  // nvmlDeviceGetComputeMode: Insufficient Permissions"), or "nvml: <path> lacks nvmlDeviceGetComputeMode".
  [[nodiscard]] Result<uint32_t> compute_mode(uint32_t gpu_index) const;

  // Sets it (root only; it lasts until the driver unloads or it is set again). gpuctk-mps-control-daemon
  // sets EXCLUSIVE_PROCESS on the GPUs it shares through MPS and DEFAULT again when it stops, where
  // NVIDIA's runs `nvidia-smi -i <uuid> -c <mode>`. Errors as compute_mode's, for nvmlDeviceSetComputeMode.
  [[nodiscard]] Result<void> set_compute_mode(uint32_t gpu_index, uint32_t mode) const;

  // An empty event set. Errors: "nvml: <path> lacks nvmlEventSetCreate, … (health checks need them)",
  // or NVML's failure to create it.
  [[nodiscard]] Result<NvmlEvents> events() const;

  Nvml(Nvml&&) noexcept;
  Nvml& operator=(Nvml&&) noexcept;
  ~Nvml();

 private:
  struct Library;
  friend class NvmlEvents;
  explicit Nvml(std::unique_ptr<Library> library);
  std::unique_ptr<Library> m_library;
};

}  // namespace gpuctk::discover
