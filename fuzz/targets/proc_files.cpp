// The parsers of the driver's /proc and /sys files (src/discover): /proc/devices, params, the generic
// "Key: value" lines, gpus/<bus>/information, nvidia-caps/mig-minors, capability files, PCI bus ids,
// the driver version and driver library file names. The first byte picks the parser (ProcFile in
// fuzz/support/fuzz_support.hpp), the rest is the file. Each must give a value or an error for any
// bytes, and its result must keep the promises of its header (checked below). Seeds: the files of
// every fixture host, materialised.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "discover/driver_params.hpp"
#include "discover/driver_version.hpp"
#include "discover/gpu_information.hpp"
#include "discover/key_value_lines.hpp"
#include "discover/nvidia_caps.hpp"
#include "discover/pci_bus_id.hpp"
#include "discover/proc_devices.hpp"
#include "support/fuzz_support.hpp"

namespace {

namespace discover = gpuctk::discover;
using gpuctk::fuzz::ProcFile;

// "550.54.15" or "390.157": 2 or 3 dot-separated decimal numbers.
bool is_driver_version(std::string_view version) {
  size_t numbers = 0;
  while (true) {
    const auto dot = version.find('.');
    const auto number = version.substr(0, dot);
    if (number.empty() || number.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
    ++numbers;
    if (dot == std::string_view::npos) {
      return numbers == 2 || numbers == 3;
    }
    version.remove_prefix(dot + 1);
  }
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

void check_proc_devices(std::string_view text) {
  const auto devices = discover::parse_proc_devices(text);
  if (!devices) {
    return;
  }
  for (const auto& [name, major] : devices->majors) {
    GPUCTK_FUZZ_CHECK(devices->major(name) == major, name);
  }
  (void)devices->nvidia_gpu_major();
}

void check_driver_params(std::string_view text) {
  const auto params = discover::parse_driver_params(text);
  if (!params) {
    return;
  }
  (void)params->modify_device_files();
  (void)params->device_file_uid();
  (void)params->device_file_gid();
  GPUCTK_FUZZ_CHECK(params->device_file_mode() <= 07777, std::string(text));
  for (const auto& [name, value] : params->values) {
    (void)params->number(name);
  }
}

void check_key_value_lines(std::string_view text) {
  const auto lines = discover::parse_key_value_lines(text);
  if (!lines) {
    return;
  }
  size_t previous = 0;
  for (const auto& line : *lines) {
    GPUCTK_FUZZ_CHECK(!line.key.empty() && line.key.find(':') == std::string_view::npos,
                      std::string(line.key));
    GPUCTK_FUZZ_CHECK(!is_blank(line.key.front()) && !is_blank(line.key.back()), std::string(line.key));
    GPUCTK_FUZZ_CHECK(line.value.empty() || (!is_blank(line.value.front()) && !is_blank(line.value.back())),
                      std::string(line.value));
    GPUCTK_FUZZ_CHECK(line.line > previous, std::string(text));
    previous = line.line;
  }
}

void check_gpu_information(std::string_view text) {
  const auto gpu = discover::parse_gpu_information(text);
  if (!gpu) {
    return;
  }
  GPUCTK_FUZZ_CHECK(!gpu->model.empty(), std::string(text));
  // The bus location is stored in its canonical spelling.
  const auto bus = discover::parse_pci_bus_id(gpu->bus_location);
  GPUCTK_FUZZ_CHECK(bus && *bus == gpu->bus_location, gpu->bus_location);
  if (gpu->uuid) {
    GPUCTK_FUZZ_CHECK(gpu->uuid->starts_with("GPU-") && gpu->uuid->size() == 40, *gpu->uuid);
  }
}

void check_mig_minors(std::string_view text) {
  const auto minors = discover::parse_mig_minors(text);
  if (!minors) {
    return;
  }
  for (const auto& [name, minor] : minors->named) {
    GPUCTK_FUZZ_CHECK(minors->minor(name) == minor, name);
  }
  for (size_t i = 1; i < minors->access.size(); ++i) {
    GPUCTK_FUZZ_CHECK(minors->access[i - 1].first < minors->access[i].first, "access table not sorted");
  }
  (void)minors->config();
  (void)minors->monitor();
  for (uint32_t gpu = 0; gpu < 2; ++gpu) {
    for (uint32_t gi = 0; gi < 3; ++gi) {
      (void)minors->gi_access(gpu, gi);
      (void)minors->ci_access(gpu, gi, gi);
    }
  }
}

void check_capability_file(std::string_view text) {
  const auto file = discover::parse_capability_file(text);
  if (!file) {
    return;
  }
  GPUCTK_FUZZ_CHECK(file->mode <= 07777, std::string(text));
  (void)discover::capability_device_path(file->minor);
}

void check_pci_bus_id(std::string_view text) {
  const auto bus = discover::parse_pci_bus_id(text);
  if (!bus) {
    return;
  }
  // Canonical: parsing it again changes nothing.
  const auto again = discover::parse_pci_bus_id(*bus);
  GPUCTK_FUZZ_CHECK(again && *again == *bus, *bus);
}

void check_driver_version(std::string_view text) {
  const auto version = discover::parse_driver_version(text);
  if (!version) {
    return;
  }
  GPUCTK_FUZZ_CHECK(is_driver_version(version->version), version->version);
  GPUCTK_FUZZ_CHECK(version->kernel_module == discover::KernelModule::proprietary ||
                        version->kernel_module == discover::KernelModule::open,
                    std::string(text));
}

void check_library_file_name(std::string_view text) {
  for (const std::string_view stem : {"libcuda.so.", "libnvidia-ml.so.", ""}) {
    if (const auto version = discover::library_driver_version(text, stem)) {
      GPUCTK_FUZZ_CHECK(is_driver_version(*version), *version);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (static_cast<ProcFile>(data[0] % gpuctk::fuzz::k_proc_file_kinds)) {
    case ProcFile::proc_devices:
      check_proc_devices(text);
      break;
    case ProcFile::driver_params:
      check_driver_params(text);
      break;
    case ProcFile::key_value_lines:
      check_key_value_lines(text);
      break;
    case ProcFile::gpu_information:
      check_gpu_information(text);
      break;
    case ProcFile::mig_minors:
      check_mig_minors(text);
      break;
    case ProcFile::capability_file:
      check_capability_file(text);
      break;
    case ProcFile::pci_bus_id:
      check_pci_bus_id(text);
      break;
    case ProcFile::driver_version:
      check_driver_version(text);
      break;
    case ProcFile::library_file_name:
      check_library_file_name(text);
      break;
  }
  return 0;
}
