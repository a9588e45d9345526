#pragma once
// GPU discovery through NVML. The library is dlopen'ed from an absolute path inside the driver root
// (never the process's own search path), queried once, shut down and unloaded. Only `gpuctk cdi generate`
// and `gpuctk info` use it; the hook never initialises NVML.

#include <cstdint>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::discover {

struct NvmlMig {
  uint32_t index = 0;  // MIG device index under the parent
  uint32_t gi = 0;
  uint32_t ci = 0;
  std::string uuid;
  std::string profile;  // "3g.20gb", from the slice counts and memory size
  uint64_t memory_bytes = 0;
};

struct NvmlGpu {
  uint32_t index = 0;
  uint32_t minor = 0;
  std::string uuid;
  std::string name;
  std::string bus_id;  // canonical "0000:07:00.0"
  uint64_t memory_bytes = 0;
  bool mig_enabled = false;
  std::vector<NvmlMig> migs;
};

struct NvmlReport {
  std::string driver_version;  // "550.54.15"
  std::string cuda_version;    // "12.4"
  std::vector<NvmlGpu> gpus;   // by index
};

// Loads the NVML library at `library_path` and reads every GPU and MIG device. A library that cannot be
// loaded, lacks a needed symbol, or fails a call is an error naming the call and NVML's message, e.g.
// "nvml: nvmlInit_v2: Driver Not Loaded".
Result<NvmlReport> query_nvml(const std::string& library_path);

}  // namespace gpuctk::discover
