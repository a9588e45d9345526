#include "discover/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>

#include "discover/nvml_abi.h"
#include "discover/nvml_library.hpp"
#include "discover/pci_bus_id.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {

namespace nvml_detail {

void DlClose::operator()(void* handle) const {
  ::dlclose(handle);
}

Result<void> check(const Api& api, nvmlReturn_t rc, const char* call) {
  if (rc == NVML_SUCCESS) {
    return {};
  }
  return fail(std::string("nvml: ") + call + ": " + api.error_string(rc));
}

}  // namespace nvml_detail

namespace {

using nvml_detail::Api;

// Required: the library cannot serve without it. Report: optional, the report lacks a field without it
// (one warning). Plugin: optional, only the device plugin's events or topology need it; that caller
// says what is missing when it asks (Nvml::events, Nvml::topology), the report never does. Sample:
// optional, one of gpuctk-exporter's readings (Nvml::sample) is nullopt without it, silently: a warning
// per sample would repeat every scrape, and the exporter's output already shows the reading absent.
enum class Need { required, report, plugin, sample };

struct EntryPoint {
  const char* symbol;
  Need need;
  const char* unknown_without;  // Need::report: what the report lacks without it
  void (*store)(Api& api, void* address);
};

template <auto Member>
constexpr EntryPoint entry(const char* symbol, Need need = Need::required,
                           const char* unknown_without = nullptr) {
  return {symbol, need, unknown_without, [](Api& api, void* address) {
            api.*Member = reinterpret_cast<std::remove_reference_t<decltype(api.*Member)>>(address);
          }};
}

constexpr const char* k_graphics_unknown = "graphics-capable MIG devices";

// NVML's graphics-capable GPU instance profiles (go-nvlib's "+gfx" profiles): their DRM nodes are the
// MIG device's too.
constexpr unsigned k_graphics_profiles[] = {
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX,
    NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX,
    NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX,
};

// Every entry point we resolve. Required: without it the devices cannot be named, enumerated or
// placed, so the library cannot serve. Optional: it only enriches the report; older drivers may lack it.
// MIG enumeration is required: MIG devices are devices, and every driver since R450 (the first with
// MIG) has it; an older library that lacks it is better replaced by /proc discovery than guessed around.
constexpr EntryPoint k_entry_points[] = {
    // Required: NVML itself.
    entry<&Api::init>("nvmlInit_v2"),
    entry<&Api::shutdown>("nvmlShutdown"),
    entry<&Api::error_string>("nvmlErrorString"),
    // Required: the driver version names the driver's files.
    entry<&Api::driver_version>("nvmlSystemGetDriverVersion"),
    // Required: each GPU, its UUID and model (device names), minor (/dev/nvidia<minor>), bus id (DRM nodes).
    entry<&Api::count>("nvmlDeviceGetCount_v2"),
    entry<&Api::handle>("nvmlDeviceGetHandleByIndex_v2"),
    entry<&Api::uuid>("nvmlDeviceGetUUID"),
    entry<&Api::name>("nvmlDeviceGetName"),
    entry<&Api::minor>("nvmlDeviceGetMinorNumber"),
    entry<&Api::pci>("nvmlDeviceGetPciInfo_v3"),
    // Required: MIG mode, and each MIG device with its instance ids (capability nodes).
    entry<&Api::mig_mode>("nvmlDeviceGetMigMode"),
    entry<&Api::max_mig>("nvmlDeviceGetMaxMigDeviceCount"),
    entry<&Api::mig_handle>("nvmlDeviceGetMigDeviceHandleByIndex"),
    entry<&Api::gi>("nvmlDeviceGetGpuInstanceId"),
    entry<&Api::ci>("nvmlDeviceGetComputeInstanceId"),
    // Optional, informational (gpuctk info); the last column is what is unknown without it.
    entry<&Api::cuda_version>("nvmlSystemGetCudaDriverVersion", Need::report, "the CUDA version"),
    entry<&Api::memory>("nvmlDeviceGetMemoryInfo", Need::report, "GPU memory"),
    entry<&Api::compute_capability>("nvmlDeviceGetCudaComputeCapability", Need::report, "compute capability"),
    entry<&Api::brand>("nvmlDeviceGetBrand", Need::report, "the GPU brand"),
    entry<&Api::architecture>("nvmlDeviceGetArchitecture", Need::report, "the GPU architecture"),
    entry<&Api::attributes>("nvmlDeviceGetAttributes_v2", Need::report, "MIG profiles and MIG memory"),
    entry<&Api::gi_profile_info>("nvmlDeviceGetGpuInstanceProfileInfo", Need::report, k_graphics_unknown),
    entry<&Api::gi_by_id>("nvmlDeviceGetGpuInstanceById", Need::report, k_graphics_unknown),
    entry<&Api::gi_info>("nvmlGpuInstanceGetInfo", Need::report, k_graphics_unknown),
    // Optional, the device plugin's health check: Xid events of each GPU (found by UUID).
    entry<&Api::handle_by_uuid>("nvmlDeviceGetHandleByUUID", Need::plugin),
    entry<&Api::event_set_create>("nvmlEventSetCreate", Need::plugin),
    entry<&Api::supported_events>("nvmlDeviceGetSupportedEventTypes", Need::plugin),
    entry<&Api::register_events>("nvmlDeviceRegisterEvents", Need::plugin),
    entry<&Api::event_wait>("nvmlEventSetWait_v2", Need::plugin),
    entry<&Api::event_set_free>("nvmlEventSetFree", Need::plugin),
    // Optional, the device plugin's preferred allocation: how GPUs are linked.
    entry<&Api::common_ancestor>("nvmlDeviceGetTopologyCommonAncestor", Need::plugin),
    entry<&Api::nvlink_state>("nvmlDeviceGetNvLinkState", Need::plugin),
    entry<&Api::nvlink_remote_pci>("nvmlDeviceGetNvLinkRemotePciInfo_v2", Need::plugin),
    // Optional, gpuctk-mps-control-daemon's: the compute mode of the GPUs it shares (Nvml::compute_mode).
    entry<&Api::compute_mode>("nvmlDeviceGetComputeMode", Need::plugin),
    entry<&Api::set_compute_mode>("nvmlDeviceSetComputeMode", Need::plugin),
    // Optional, gpuctk-exporter's readings (NvmlSample names the call of each field).
    entry<&Api::clock_info>("nvmlDeviceGetClockInfo", Need::sample),
    entry<&Api::temperature>("nvmlDeviceGetTemperature", Need::sample),
    entry<&Api::field_values>("nvmlDeviceGetFieldValues", Need::sample),
    entry<&Api::power_usage>("nvmlDeviceGetPowerUsage", Need::sample),
    entry<&Api::total_energy>("nvmlDeviceGetTotalEnergyConsumption", Need::sample),
    entry<&Api::pcie_throughput>("nvmlDeviceGetPcieThroughput", Need::sample),
    entry<&Api::pcie_replays>("nvmlDeviceGetPcieReplayCounter", Need::sample),
    entry<&Api::utilization>("nvmlDeviceGetUtilizationRates", Need::sample),
    entry<&Api::encoder_utilization>("nvmlDeviceGetEncoderUtilization", Need::sample),
    entry<&Api::decoder_utilization>("nvmlDeviceGetDecoderUtilization", Need::sample),
    entry<&Api::memory_v2>("nvmlDeviceGetMemoryInfo_v2", Need::sample),
    entry<&Api::remapped_rows>("nvmlDeviceGetRemappedRows", Need::sample),
    entry<&Api::total_ecc>("nvmlDeviceGetTotalEccErrors", Need::sample),
    entry<&Api::retired_pages>("nvmlDeviceGetRetiredPages", Need::sample),
    entry<&Api::retired_pending>("nvmlDeviceGetRetiredPagesPendingStatus", Need::sample),
};

// NVML's brands and architectures as go-nvlib names them (pkg/nvlib/device: GetBrandAsString,
// GetArchitectureAsString), the text NVIDIA's DRA driver publishes. A value not listed (newer than this
// table) has no name: the field stays unknown, as NVIDIA's driver fails on it rather than guessing.
struct NvmlName {
  unsigned value;
  const char* name;
};
constexpr NvmlName k_brands[] = {
    {NVML_BRAND_UNKNOWN, "Unknown"},
    {NVML_BRAND_QUADRO, "Quadro"},
    {NVML_BRAND_TESLA, "Tesla"},
    {NVML_BRAND_NVS, "NVS"},
    {NVML_BRAND_GRID, "Grid"},
    {NVML_BRAND_GEFORCE, "GeForce"},
    {NVML_BRAND_TITAN, "Titan"},
    {NVML_BRAND_NVIDIA_VAPPS, "NvidiaVApps"},
    {NVML_BRAND_NVIDIA_VPC, "NvidiaVPC"},
    {NVML_BRAND_NVIDIA_VCS, "NvidiaVCS"},
    {NVML_BRAND_NVIDIA_VWS, "NvidiaVWS"},
    {NVML_BRAND_NVIDIA_CLOUD_GAMING, "NvidiaCloudGaming"},
    {NVML_BRAND_QUADRO_RTX, "QuadroRTX"},
    {NVML_BRAND_NVIDIA_RTX, "NvidiaRTX"},
    {NVML_BRAND_NVIDIA, "Nvidia"},
    {NVML_BRAND_GEFORCE_RTX, "GeForceRTX"},
    {NVML_BRAND_TITAN_RTX, "TitanRTX"},
};
constexpr NvmlName k_architectures[] = {
    {NVML_DEVICE_ARCH_KEPLER, "Kepler"},       {NVML_DEVICE_ARCH_MAXWELL, "Maxwell"},
    {NVML_DEVICE_ARCH_PASCAL, "Pascal"},       {NVML_DEVICE_ARCH_VOLTA, "Volta"},
    {NVML_DEVICE_ARCH_TURING, "Turing"},       {NVML_DEVICE_ARCH_AMPERE, "Ampere"},
    {NVML_DEVICE_ARCH_ADA, "Ada Lovelace"},    {NVML_DEVICE_ARCH_HOPPER, "Hopper"},
    {NVML_DEVICE_ARCH_BLACKWELL, "Blackwell"}, {NVML_DEVICE_ARCH_RUBIN, "Rubin"},
    {NVML_DEVICE_ARCH_UNKNOWN, "Unknown"},
};

template <size_t N>
std::optional<std::string> nvml_name(const NvmlName (&table)[N], unsigned value) {
  const auto* found = std::ranges::find(table, value, &NvmlName::value);
  return found == std::end(table) ? std::nullopt : std::optional<std::string>(found->name);
}

class Query {
 public:
  explicit Query(const Api& api) : m_api(api) {}

  Result<void> check(nvmlReturn_t rc, const char* call) const { return nvml_detail::check(m_api, rc, call); }

  Result<NvmlReport> report() const {
    NvmlReport out;
    char buffer[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    GPUCTK_TRY(check(m_api.driver_version(buffer, sizeof buffer), "nvmlSystemGetDriverVersion"));
    out.driver_version = buffer;
    if (m_api.cuda_version != nullptr) {
      int cuda = 0;
      GPUCTK_TRY(check(m_api.cuda_version(&cuda), "nvmlSystemGetCudaDriverVersion"));
      out.cuda_version = std::to_string(NVML_CUDA_DRIVER_VERSION_MAJOR(cuda)) + "." +
                         std::to_string(NVML_CUDA_DRIVER_VERSION_MINOR(cuda));
    }
    unsigned count = 0;
    GPUCTK_TRY(check(m_api.count(&count), "nvmlDeviceGetCount_v2"));
    for (unsigned i = 0; i < count; ++i) {
      GPUCTK_TRY_ASSIGN(auto gpu, query_gpu(i, out.warnings));
      out.gpus.push_back(std::move(gpu));
    }
    return out;
  }

 private:
  Result<NvmlGpu> query_gpu(unsigned index, std::vector<std::string>& warnings) const {
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
    GPUCTK_TRY(step(m_api.handle(index, &device), "nvmlDeviceGetHandleByIndex_v2"));
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    GPUCTK_TRY(step(m_api.uuid(device, text, sizeof text), "nvmlDeviceGetUUID"));
    gpu.uuid = text;
    GPUCTK_TRY(step(m_api.name(device, text, sizeof text), "nvmlDeviceGetName"));
    gpu.name = text;
    unsigned minor = 0;
    GPUCTK_TRY(step(m_api.minor(device, &minor), "nvmlDeviceGetMinorNumber"));
    gpu.minor = minor;
    nvmlPciInfo_t pci{};
    GPUCTK_TRY(step(m_api.pci(device, &pci), "nvmlDeviceGetPciInfo_v3"));
    auto bus = parse_pci_bus_id(pci.busId);
    if (!bus) {
      return fail(where + "nvml: " + bus.error().message);
    }
    gpu.bus_id = *bus;
    if (m_api.memory != nullptr) {
      nvmlMemory_t memory{};
      GPUCTK_TRY(step(m_api.memory(device, &memory), "nvmlDeviceGetMemoryInfo"));
      gpu.memory_bytes = memory.total;
    }
    if (m_api.compute_capability != nullptr) {
      int cc_major = 0;
      int cc_minor = 0;
      GPUCTK_TRY(
          step(m_api.compute_capability(device, &cc_major, &cc_minor), "nvmlDeviceGetCudaComputeCapability"));
      if (cc_major > 0 && cc_minor >= 0) {
        gpu.compute_capability =
            ComputeCapability{static_cast<uint32_t>(cc_major), static_cast<uint32_t>(cc_minor)};
      }
    }

    read_brand_and_architecture(device, gpu);

    unsigned current = 0;
    unsigned pending = 0;
    const nvmlReturn_t mig_rc = m_api.mig_mode(device, &current, &pending);
    if (mig_rc == NVML_ERROR_NOT_SUPPORTED) {
      return gpu;  // a GPU without MIG support
    }
    GPUCTK_TRY(step(mig_rc, "nvmlDeviceGetMigMode"));
    gpu.mig_capable = true;
    gpu.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    if (!gpu.mig_enabled) {
      return gpu;
    }
    unsigned max = 0;
    GPUCTK_TRY(step(m_api.max_mig(device, &max), "nvmlDeviceGetMaxMigDeviceCount"));
    for (unsigned slot = 0; slot < max; ++slot) {
      nvmlDevice_t mig_device = nullptr;
      const nvmlReturn_t rc = m_api.mig_handle(device, slot, &mig_device);
      if (rc == NVML_ERROR_NOT_FOUND) {
        continue;  // a free slot
      }
      GPUCTK_TRY(step(rc, "nvmlDeviceGetMigDeviceHandleByIndex"));
      NvmlMig mig;
      mig.index = slot;
      unsigned id = 0;
      GPUCTK_TRY(step(m_api.gi(mig_device, &id), "nvmlDeviceGetGpuInstanceId"));
      mig.gi = id;
      GPUCTK_TRY(step(m_api.ci(mig_device, &id), "nvmlDeviceGetComputeInstanceId"));
      mig.ci = id;
      GPUCTK_TRY(step(m_api.uuid(mig_device, text, sizeof text), "nvmlDeviceGetUUID (MIG)"));
      mig.uuid = text;
      if (m_api.attributes != nullptr) {
        nvmlDeviceAttributes_t attributes{};
        GPUCTK_TRY(step(m_api.attributes(mig_device, &attributes), "nvmlDeviceGetAttributes_v2"));
        mig.memory_bytes = attributes.memorySizeMB * 1024ull * 1024ull;
        mig.profile = profile_name(attributes);
        mig.attributes = MigAttributes{
            .gi_slices = attributes.gpuInstanceSliceCount,
            .ci_slices = attributes.computeInstanceSliceCount,
            .multiprocessors = attributes.multiprocessorCount,
            .copy_engines = attributes.sharedCopyEngineCount,
            .decoders = attributes.sharedDecoderCount,
            .encoders = attributes.sharedEncoderCount,
            .jpeg_engines = attributes.sharedJpegCount,
            .ofa_engines = attributes.sharedOfaCount,
        };
      }
      gpu.migs.push_back(std::move(mig));
    }
    mark_graphics(device, gpu, warnings);
    return gpu;
  }

  // Descriptive only: a failing call leaves the field unknown rather than losing the GPU.
  void read_brand_and_architecture(nvmlDevice_t device, NvmlGpu& gpu) const {
    nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
    if (m_api.brand != nullptr && m_api.brand(device, &brand) == NVML_SUCCESS) {
      gpu.brand = nvml_name(k_brands, static_cast<unsigned>(brand));
    }
    nvmlDeviceArchitecture_t architecture = NVML_DEVICE_ARCH_UNKNOWN;
    if (m_api.architecture != nullptr && m_api.architecture(device, &architecture) == NVML_SUCCESS) {
      gpu.architecture = nvml_name(k_architectures, architecture);
    }
  }

  // Marks the MIG devices whose GPU instance has a graphics-capable profile: the instance's profile id
  // (nvmlGpuInstanceGetInfo) is the id the GPU gives one of k_graphics_profiles. A GPU without such
  // profiles (NVML: NOT_SUPPORTED or INVALID_ARGUMENT for each) costs no call per MIG device. Without the
  // calls (the library's one warning says so) no MIG device is graphics capable, nor is one NVML refuses
  // to place; a refusal is one warning per report, whatever the number of GPUs and MIG devices.
  void mark_graphics(nvmlDevice_t device, NvmlGpu& gpu, std::vector<std::string>& warnings) const {
    if (gpu.migs.empty() || m_api.gi_profile_info == nullptr || m_api.gi_by_id == nullptr ||
        m_api.gi_info == nullptr) {
      return;
    }
    const auto refused = [&](nvmlReturn_t rc, const char* call) {
      std::string warning =
          check(rc, call).error().message + ": " + k_graphics_unknown + " are taken as not graphics capable";
      if (std::ranges::find(warnings, warning) == warnings.end()) {
        warnings.push_back(std::move(warning));
      }
    };
    std::vector<unsigned> ids;
    for (const unsigned profile : k_graphics_profiles) {
      nvmlGpuInstanceProfileInfo_t info{};
      const nvmlReturn_t rc = m_api.gi_profile_info(device, profile, &info);
      if (rc == NVML_SUCCESS) {
        ids.push_back(info.id);
      } else if (rc != NVML_ERROR_NOT_SUPPORTED && rc != NVML_ERROR_INVALID_ARGUMENT) {
        return refused(rc, "nvmlDeviceGetGpuInstanceProfileInfo");
      }
    }
    if (ids.empty()) {
      return;
    }
    for (auto& mig : gpu.migs) {
      nvmlGpuInstance_t instance = nullptr;
      nvmlGpuInstanceInfo_t info{};
      if (const nvmlReturn_t rc = m_api.gi_by_id(device, mig.gi, &instance); rc != NVML_SUCCESS) {
        refused(rc, "nvmlDeviceGetGpuInstanceById");
        continue;
      }
      if (const nvmlReturn_t rc = m_api.gi_info(instance, &info); rc != NVML_SUCCESS) {
        refused(rc, "nvmlGpuInstanceGetInfo");
        continue;
      }
      mig.graphics = std::ranges::find(ids, info.profileId) != ids.end();
      if (mig.graphics && !mig.profile.empty()) {
        mig.profile += "+gfx";  // go-nvlib's name of the profile
      }
    }
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

Nvml::Nvml(std::unique_ptr<Library> library) : m_library(std::move(library)) {}
Nvml::Nvml(Nvml&&) noexcept = default;
Nvml& Nvml::operator=(Nvml&&) noexcept = default;
Nvml::~Nvml() = default;

Result<Nvml> Nvml::open(const std::string& library_path) {
  auto library = std::make_unique<Library>();
  library->path = library_path;
  library->handle.reset(::dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library->handle) {
    const char* why = ::dlerror();
    return fail("nvml: load " + library_path + ": " + (why != nullptr ? why : "unknown error"));
  }
  std::vector<std::string> missing_required;
  std::vector<std::string> missing_optional;
  std::vector<std::string> unknown;
  for (const auto& entry : k_entry_points) {
    void* address = ::dlsym(library->handle.get(), entry.symbol);
    if (address != nullptr) {
      entry.store(library->api, address);
    } else if (entry.need == Need::required) {
      missing_required.emplace_back(entry.symbol);
    } else if (entry.need == Need::report) {
      missing_optional.emplace_back(entry.symbol);
      if (std::ranges::find(unknown, entry.unknown_without) == unknown.end()) {
        unknown.emplace_back(entry.unknown_without);  // several calls may serve one field
      }
    }
  }
  if (!missing_required.empty()) {
    return fail("nvml: " + library_path + ": missing " + join(missing_required, ", ") +
                (missing_required.size() == 1 ? " (a required entry point)" : " (required entry points)"));
  }
  if (!missing_optional.empty()) {
    library->warning = "nvml: " + library_path + " lacks " + join(missing_optional, ", ") +
                       " (an older driver?); unknown: " + join(unknown, ", ");
  }
  const nvmlReturn_t rc = library->api.init();
  if (rc != NVML_SUCCESS) {
    return fail(std::string("nvml: nvmlInit_v2: ") + library->api.error_string(rc));
  }
  library->initialised = true;
  return Nvml(std::move(library));
}

Result<NvmlReport> Nvml::report() const {
  GPUCTK_TRY_ASSIGN(NvmlReport report, Query(m_library->api).report());
  if (!m_library->warning.empty()) {
    report.warnings.push_back(m_library->warning);
  }
  return report;
}

}  // namespace gpuctk::discover
