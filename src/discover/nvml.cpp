#include "discover/nvml.hpp"

#include <dlfcn.h>

#include <memory>

#include "discover/nvml_abi.h"
#include "discover/pci_bus_id.hpp"

namespace gpuctk::discover {

namespace {

struct DlClose {
  void operator()(void* handle) const { ::dlclose(handle); }
};

// The NVML entry points we call, resolved once.
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
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_handle = nullptr;
  nvmlDeviceGetGpuInstanceId_fn gi = nullptr;
  nvmlDeviceGetComputeInstanceId_fn ci = nullptr;
  nvmlDeviceGetAttributes_v2_fn attributes = nullptr;
};

template <class Fn>
Result<void> resolve(void* lib, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(lib, symbol));
  if (out == nullptr) {
    return fail(std::string("nvml: missing symbol ") + symbol);
  }
  return {};
}

class Session {
 public:
  explicit Session(const Api& api) : m_api(api) {}

  Result<void> check(nvmlReturn_t rc, const char* call) const {
    if (rc == NVML_SUCCESS) {
      return {};
    }
    return fail(std::string("nvml: ") + call + ": " + m_api.error_string(rc));
  }

  Result<NvmlReport> report() {
    NvmlReport out;
    char buffer[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (auto r = check(m_api.driver_version(buffer, sizeof buffer), "nvmlSystemGetDriverVersion"); !r) {
      return std::unexpected(r.error());
    }
    out.driver_version = buffer;
    int cuda = 0;
    if (auto r = check(m_api.cuda_version(&cuda), "nvmlSystemGetCudaDriverVersion"); !r) {
      return std::unexpected(r.error());
    }
    out.cuda_version = std::to_string(NVML_CUDA_DRIVER_VERSION_MAJOR(cuda)) + "." +
                       std::to_string(NVML_CUDA_DRIVER_VERSION_MINOR(cuda));
    unsigned count = 0;
    if (auto r = check(m_api.count(&count), "nvmlDeviceGetCount_v2"); !r) {
      return std::unexpected(r.error());
    }
    for (unsigned i = 0; i < count; ++i) {
      auto gpu = query_gpu(i);
      if (!gpu) {
        return std::unexpected(gpu.error());
      }
      out.gpus.push_back(std::move(*gpu));
    }
    return out;
  }

 private:
  Result<NvmlGpu> query_gpu(unsigned index) {
    NvmlGpu gpu;
    gpu.index = index;
    nvmlDevice_t device = nullptr;
    const std::string where = "GPU " + std::to_string(index) + ": ";
    const auto step = [&](nvmlReturn_t rc, const char* call) -> Result<void> {
      if (auto r = check(rc, call); !r) {
        return fail(where + r.error().message);
      }
      return {};
    };
    if (auto r = step(m_api.handle(index, &device), "nvmlDeviceGetHandleByIndex_v2"); !r) {
      return std::unexpected(r.error());
    }
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (auto r = step(m_api.uuid(device, text, sizeof text), "nvmlDeviceGetUUID"); !r) {
      return std::unexpected(r.error());
    }
    gpu.uuid = text;
    if (auto r = step(m_api.name(device, text, sizeof text), "nvmlDeviceGetName"); !r) {
      return std::unexpected(r.error());
    }
    gpu.name = text;
    unsigned minor = 0;
    if (auto r = step(m_api.minor(device, &minor), "nvmlDeviceGetMinorNumber"); !r) {
      return std::unexpected(r.error());
    }
    gpu.minor = minor;
    nvmlPciInfo_t pci{};
    if (auto r = step(m_api.pci(device, &pci), "nvmlDeviceGetPciInfo_v3"); !r) {
      return std::unexpected(r.error());
    }
    auto bus = parse_pci_bus_id(pci.busId);
    if (!bus) {
      return fail(where + "nvml: " + bus.error().message);
    }
    gpu.bus_id = *bus;
    nvmlMemory_t memory{};
    if (auto r = step(m_api.memory(device, &memory), "nvmlDeviceGetMemoryInfo"); !r) {
      return std::unexpected(r.error());
    }
    gpu.memory_bytes = memory.total;

    unsigned current = 0;
    unsigned pending = 0;
    const nvmlReturn_t mig_rc = m_api.mig_mode(device, &current, &pending);
    if (mig_rc == NVML_ERROR_NOT_SUPPORTED) {
      return gpu;  // a GPU without MIG support
    }
    if (auto r = step(mig_rc, "nvmlDeviceGetMigMode"); !r) {
      return std::unexpected(r.error());
    }
    gpu.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    if (!gpu.mig_enabled) {
      return gpu;
    }
    unsigned max = 0;
    if (auto r = step(m_api.max_mig(device, &max), "nvmlDeviceGetMaxMigDeviceCount"); !r) {
      return std::unexpected(r.error());
    }
    for (unsigned slot = 0; slot < max; ++slot) {
      nvmlDevice_t mig_device = nullptr;
      const nvmlReturn_t rc = m_api.mig_handle(device, slot, &mig_device);
      if (rc == NVML_ERROR_NOT_FOUND) {
        continue;  // a free slot
      }
      if (auto r = step(rc, "nvmlDeviceGetMigDeviceHandleByIndex"); !r) {
        return std::unexpected(r.error());
      }
      NvmlMig mig;
      mig.index = slot;
      unsigned id = 0;
      if (auto r = step(m_api.gi(mig_device, &id), "nvmlDeviceGetGpuInstanceId"); !r) {
        return std::unexpected(r.error());
      }
      mig.gi = id;
      if (auto r = step(m_api.ci(mig_device, &id), "nvmlDeviceGetComputeInstanceId"); !r) {
        return std::unexpected(r.error());
      }
      mig.ci = id;
      if (auto r = step(m_api.uuid(mig_device, text, sizeof text), "nvmlDeviceGetUUID (MIG)"); !r) {
        return std::unexpected(r.error());
      }
      mig.uuid = text;
      nvmlDeviceAttributes_t attributes{};
      if (auto r = step(m_api.attributes(mig_device, &attributes), "nvmlDeviceGetAttributes_v2"); !r) {
        return std::unexpected(r.error());
      }
      mig.memory_bytes = attributes.memorySizeMB * 1024ull * 1024ull;
      mig.profile = profile_name(attributes);
      gpu.migs.push_back(std::move(mig));
    }
    return gpu;
  }

  // "<C>c.<G>g.<M>gb" as nvidia-smi names profiles ("3g.20gb" when compute and GPU slices are equal);
  // memory is rounded up to whole GiB.
  static std::string profile_name(const nvmlDeviceAttributes_t& a) {
    const auto gib = (a.memorySizeMB + 1023) / 1024;
    std::string name;
    if (a.computeInstanceSliceCount != a.gpuInstanceSliceCount) {
      name = std::to_string(a.computeInstanceSliceCount) + "c.";
    }
    return name + std::to_string(a.gpuInstanceSliceCount) + "g." + std::to_string(gib) + "gb";
  }

  const Api& m_api;
};

}  // namespace

Result<NvmlReport> query_nvml(const std::string& library_path) {
  const std::unique_ptr<void, DlClose> lib(::dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib) {
    const char* why = ::dlerror();
    return fail("nvml: load " + library_path + ": " + (why != nullptr ? why : "unknown error"));
  }
  Api api;
  for (const auto& r : {
           resolve(lib.get(), "nvmlInit_v2", api.init),
           resolve(lib.get(), "nvmlShutdown", api.shutdown),
           resolve(lib.get(), "nvmlErrorString", api.error_string),
           resolve(lib.get(), "nvmlSystemGetDriverVersion", api.driver_version),
           resolve(lib.get(), "nvmlSystemGetCudaDriverVersion", api.cuda_version),
           resolve(lib.get(), "nvmlDeviceGetCount_v2", api.count),
           resolve(lib.get(), "nvmlDeviceGetHandleByIndex_v2", api.handle),
           resolve(lib.get(), "nvmlDeviceGetUUID", api.uuid),
           resolve(lib.get(), "nvmlDeviceGetName", api.name),
           resolve(lib.get(), "nvmlDeviceGetMinorNumber", api.minor),
           resolve(lib.get(), "nvmlDeviceGetPciInfo_v3", api.pci),
           resolve(lib.get(), "nvmlDeviceGetMemoryInfo", api.memory),
           resolve(lib.get(), "nvmlDeviceGetMigMode", api.mig_mode),
           resolve(lib.get(), "nvmlDeviceGetMaxMigDeviceCount", api.max_mig),
           resolve(lib.get(), "nvmlDeviceGetMigDeviceHandleByIndex", api.mig_handle),
           resolve(lib.get(), "nvmlDeviceGetGpuInstanceId", api.gi),
           resolve(lib.get(), "nvmlDeviceGetComputeInstanceId", api.ci),
           resolve(lib.get(), "nvmlDeviceGetAttributes_v2", api.attributes),
       }) {
    if (!r) {
      return fail(r.error().message + " in " + library_path);
    }
  }
  const nvmlReturn_t rc = api.init();
  if (rc != NVML_SUCCESS) {
    return fail(std::string("nvml: nvmlInit_v2: ") + api.error_string(rc));
  }
  auto report = Session(api).report();
  api.shutdown();
  return report;
}

}  // namespace gpuctk::discover
