#pragma once
// GPU discovery through NVML. The library is dlopen'ed from an absolute path inside the driver root
// (never the process's own search path), queried once, shut down and unloaded. Only `gpuctk cdi generate`
// and `gpuctk info` use it; the hook never initialises NVML.

#include <cstdint>
#include <memory>
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
  std::string profile;        // "3g.20gb", from the slice counts and memory size; "" when unknown
  uint64_t memory_bytes = 0;  // 0 when unknown
  std::optional<MigAttributes> attributes;  // unknown without nvmlDeviceGetAttributes_v2
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

// An initialised NVML: the library loaded, its entry points resolved, nvmlInit_v2 done. Shut down and
// unloaded when it goes away. Move-only.
//
// Entry points are of two kinds. Required ones name, enumerate and place the devices (driver version,
// GPU count, handle, UUID, name, minor, PCI bus id, MIG mode and MIG devices): a library lacking one
// cannot serve. Optional ones only enrich the report (CUDA version, GPU memory, compute capability, MIG
// attributes, i.e. profile, memory, slices and engines): a library lacking them serves, those fields are
// unknown and the report carries one warning.
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

  Nvml(Nvml&&) noexcept;
  Nvml& operator=(Nvml&&) noexcept;
  ~Nvml();

 private:
  struct Library;
  explicit Nvml(std::unique_ptr<Library> library);
  std::unique_ptr<Library> m_library;
};

}  // namespace gpuctk::discover
