// The devices of the node's ResourceSlices, as NVIDIA's DRA driver (cmd/gpu-kubelet-plugin: deviceinfo.go,
// mig.go) publishes them; tests/dra/nvidia_attributes.txt lists its names, with the release each was read
// from, and tests/dra/devices_test.cpp compares gpuctk's devices with it.
//
// Where gpuctk differs:
// - MIG device names: NVIDIA's are "gpu-<minor>-mig-<profile>-<GI profile id>-<placement start>"; the
//   inventory has neither the GI profile id nor the placement, so gpuctk's end in "-<gi>-<ci>" (the GPU
//   and compute instance ids), which are as unique on the GPU.
// - Both PCI bus id attributes: "resource.kubernetes.io/pciBusID" (NVIDIA's HEAD, Kubernetes' standard
//   name) and "pcieBusID" (v25.8.1 and before), so selectors written for either release match.
// - "index" and "minor" on a GPU, "index" (of the MIG device under its GPU) and "parentIndex" on a MIG
//   device, as NVIDIA's v25.3.x published them.
// - Left out: "pcieRoot" (no sysfs topology is read), "addressingMode" (that NVML query is not made) and
//   the MIG "memorySlice<N>" capacities (the inventory has no placement).
// - An unknown value leaves its attribute out, where NVIDIA's driver fails or publishes "".
#include "dra/devices.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "util/strings.hpp"

namespace gpuctk::dra {

namespace {

using discover::Gpu;
using discover::Inventory;
using discover::MigDevice;

constexpr std::string_view k_pci_bus_id = "resource.kubernetes.io/pciBusID";  // NVIDIA's HEAD
constexpr std::string_view k_pcie_bus_id = "pcieBusID";                       // NVIDIA's v25.8.1 and before

// Fills one device's attributes and capacity within the API's limits; what it refuses goes to `notes`,
// prefixed with the device's name.
class Describer {
 public:
  Describer(Device& device, std::vector<std::string>& notes) : m_device(device), m_notes(notes) {}

  void string(std::string_view name, std::string_view value) {
    if (value.empty()) {
      return;  // unknown
    }
    if (value.size() > k_max_attribute_value) {
      note(name, quote(value) + " is longer than " + std::to_string(k_max_attribute_value) + " characters");
      return;
    }
    add(name, Attribute{Attribute::Type::string, std::string(value)});
  }

  void version(std::string_view name, std::string_view text) {
    if (text.empty()) {
      return;  // unknown
    }
    auto version = semantic_version(text);
    if (!version || version->size() > k_max_attribute_value) {
      note(name, quote(text) + " is not a semantic version");
      return;
    }
    add(name, Attribute{Attribute::Type::version, std::move(*version)});
  }

  void integer(std::string_view name, uint64_t value) {
    add(name, Attribute{Attribute::Type::integer, std::to_string(value)});
  }

  void capacity(std::string_view name, uint64_t value) {
    if (room(name)) {
      m_device.capacity.emplace(name, binary_quantity(value));
    }
  }

 private:
  void add(std::string_view name, Attribute attribute) {
    if (room(name)) {
      m_device.attributes.emplace(name, std::move(attribute));
    }
  }
  // Whether one more name fits; names are gpuctk's constants, checked all the same.
  bool room(std::string_view name) {
    if (!valid_qualified_name(name)) {
      note(name, "not a valid attribute or capacity name");
      return false;
    }
    if (m_device.attributes.size() + m_device.capacity.size() >= k_max_attributes_and_capacities) {
      note(name,
           "more than " + std::to_string(k_max_attributes_and_capacities) + " attributes and capacities");
      return false;
    }
    return true;
  }
  void note(std::string_view name, const std::string& why) {
    m_notes.push_back(m_device.name + ": " + std::string(name) + " left out: " + why);
  }

  Device& m_device;
  std::vector<std::string>& m_notes;
};

std::string compute_capability(const Gpu& gpu) {
  if (!gpu.compute_capability) {
    return {};
  }
  return std::to_string(gpu.compute_capability->major) + "." + std::to_string(gpu.compute_capability->minor);
}

// What a MIG device shares with its GPU, as NVIDIA's CommonAttributesMig and a GPU's own attributes.
void describe_gpu_model(Describer& d, const Inventory& inventory, const Gpu& gpu) {
  d.string("productName", gpu.model);
  d.string("brand", gpu.brand.value_or(""));
  d.string("architecture", gpu.architecture.value_or(""));
  d.version("cudaComputeCapability", compute_capability(gpu));
  d.version("driverVersion", inventory.driver_version);
  d.version("cudaDriverVersion", inventory.cuda_version);
  d.string(k_pci_bus_id, gpu.bus_id);
  d.string(k_pcie_bus_id, gpu.bus_id);
}

Device gpu_device(const Inventory& inventory, const Gpu& gpu, std::vector<std::string>& notes) {
  Device device;
  device.name = "gpu-" + std::to_string(gpu.minor);
  device.uuid = gpu.uuid;
  device.cdi_name = std::to_string(gpu.index);
  device.gpu_index = gpu.index;
  Describer d(device, notes);
  d.string("type", "gpu");
  d.string("uuid", gpu.uuid);
  d.integer("index", gpu.index);
  d.integer("minor", gpu.minor);
  describe_gpu_model(d, inventory, gpu);
  if (gpu.memory_bytes > 0) {
    d.capacity("memory", gpu.memory_bytes);
  }
  return device;
}

// NVIDIA's profile part of a MIG device name: the profile without dots, lower case, every other character
// outside [a-z0-9-] a '-', no '-' at either end ("1g.24gb+gfx" -> "1g24gb-gfx").
std::string profile_label(std::string_view profile) {
  std::string out;
  for (const char c : profile) {
    if (c == '.') {
      continue;
    }
    const auto lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') || lower == '-';
    out += keep ? lower : '-';
  }
  const auto first = out.find_first_not_of('-');
  return first == std::string::npos ? std::string()
                                    : out.substr(first, out.find_last_not_of('-') - first + 1);
}

std::string mig_name(const Gpu& gpu, const MigDevice& mig) {
  const std::string label = profile_label(mig.profile);
  return "gpu-" + std::to_string(gpu.minor) + "-mig-" + (label.empty() ? "" : label + "-") +
         std::to_string(mig.gi) + "-" + std::to_string(mig.ci);
}

void describe_mig_capacity(Describer& d, const MigDevice& mig) {
  if (mig.attributes) {
    d.capacity("multiprocessors", mig.attributes->multiprocessors);
    d.capacity("copyEngines", mig.attributes->copy_engines);
    d.capacity("decoders", mig.attributes->decoders);
    d.capacity("encoders", mig.attributes->encoders);
    d.capacity("jpegEngines", mig.attributes->jpeg_engines);
    d.capacity("ofaEngines", mig.attributes->ofa_engines);
  }
  if (mig.memory_bytes > 0) {
    d.capacity("memory", mig.memory_bytes);
  }
}

Device mig_device(const Inventory& inventory, const Gpu& gpu, const MigDevice& mig,
                  std::vector<std::string>& notes) {
  Device device;
  device.name = mig_name(gpu, mig);
  device.uuid = mig.uuid;
  device.parent_uuid = gpu.uuid;
  device.cdi_name = std::to_string(gpu.index) + ":" + std::to_string(mig.index);
  device.gpu_index = gpu.index;
  device.mig = true;
  device.gi = mig.gi;
  device.ci = mig.ci;
  Describer d(device, notes);
  d.string("type", "mig");
  d.string("uuid", mig.uuid);
  d.string("parentUUID", gpu.uuid);
  d.string("profile", mig.profile);
  d.integer("index", mig.index);
  d.integer("parentIndex", gpu.index);
  describe_gpu_model(d, inventory, gpu);
  describe_mig_capacity(d, mig);
  return device;
}

bool dns_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

bool c_identifier(std::string_view name) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  return !name.empty() && name.size() <= 32 && std::isdigit(static_cast<unsigned char>(name[0])) == 0 &&
         std::ranges::all_of(name, word);
}

bool dns_subdomain(std::string_view name, size_t max) {
  if (name.empty() || name.size() > max) {
    return false;
  }
  return std::ranges::all_of(split(name, '.'),
                             [](std::string_view label) { return valid_device_name(label); });
}

}  // namespace

std::vector<Device> devices_of(const Inventory& inventory, std::vector<std::string>& notes) {
  std::vector<Device> out;
  for (const auto& gpu : inventory.gpus) {
    if (!gpu.mig_enabled) {
      out.push_back(gpu_device(inventory, gpu, notes));
    }
    for (const auto& mig : gpu.mig_devices) {
      auto device = mig_device(inventory, gpu, mig, notes);
      if (!valid_device_name(device.name)) {
        notes.push_back("MIG device " + device.cdi_name + " left out: its name " + quote(device.name) +
                        " is not a DNS label");
        continue;
      }
      out.push_back(std::move(device));
    }
  }
  return out;
}

std::vector<Device> devices_of(const Inventory& inventory) {
  std::vector<std::string> notes;
  return devices_of(inventory, notes);
}

std::string binary_quantity(uint64_t value) {
  constexpr std::array<std::string_view, 6> suffixes{"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
  for (size_t i = 0; i < suffixes.size() && value != 0; ++i) {
    const auto shift = static_cast<unsigned>(10 * (suffixes.size() - i));
    if (value % (uint64_t{1} << shift) == 0) {
      return std::to_string(value >> shift) + std::string(suffixes[i]);
    }
  }
  return std::to_string(value);
}

std::optional<std::string> semantic_version(std::string_view text) {
  const auto parts = split(text, '.');
  if (text.empty() || parts.size() > 3) {
    return std::nullopt;
  }
  std::string out;
  for (size_t i = 0; i < 3; ++i) {
    uint64_t number = 0;
    if (i < parts.size()) {
      const auto parsed = parse_unsigned(parts[i]);
      if (!parsed) {
        return std::nullopt;
      }
      number = *parsed;
    }
    out += (i == 0 ? "" : ".") + std::to_string(number);
  }
  return out;
}

bool valid_device_name(std::string_view name) {
  return !name.empty() && name.size() <= 63 && std::ranges::all_of(name, dns_label_char) &&
         name.front() != '-' && name.back() != '-';
}

bool valid_qualified_name(std::string_view name) {
  const auto slash = name.find('/');
  if (slash == std::string_view::npos) {
    return c_identifier(name);
  }
  return dns_subdomain(name.substr(0, slash), 63) && c_identifier(name.substr(slash + 1));
}

}  // namespace gpuctk::dra
