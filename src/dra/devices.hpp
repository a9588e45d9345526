#pragma once
// The devices gpuctk-dra-plugin publishes in its node's ResourceSlices: each GPU and each MIG device of the
// inventory, named and described as NVIDIA's DRA driver for GPUs (driver gpu.nvidia.com) describes them, so
// that DeviceClasses and CEL selectors written for NVIDIA's driver select the same devices.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/inventory.hpp"

namespace gpuctk::dra {

// NVIDIA's DRA driver name, and the ResourceSlices' driver field.
inline constexpr std::string_view k_driver_name = "gpu.nvidia.com";

// One device attribute as resource.k8s.io/v1's DeviceAttribute holds it: exactly one of string, int,
// bool or version; `value` is its text ("42" for an int, "true" for a bool, "12.4.0" for a version).
struct Attribute {
  enum class Type : uint8_t { string, integer, boolean, version };
  Type type = Type::string;
  std::string value;
  bool operator==(const Attribute&) const = default;
};

struct Device {
  std::string name;         // the DRA device name: "gpu-0" (GPU minor 0), "gpu-1-mig-2g12gb-1-0"
  std::string uuid;         // "GPU-..." or "MIG-..."
  std::string parent_uuid;  // MIG devices: their GPU's UUID; "" for a GPU
  std::string cdi_name;     // the device's name in gpuctk's node spec (cdi::build_spec): "0", "1:0"
  uint32_t gpu_index = 0;   // the GPU (index in the inventory) the device is, or is on
  bool mig = false;
  uint32_t gi = 0;  // MIG devices: the GPU instance and compute instance ids (NVML events name them)
  uint32_t ci = 0;
  // Keys without a domain are in the driver's (gpu.nvidia.com); "resource.kubernetes.io/pciBusID" has
  // Kubernetes' standard domain.
  std::map<std::string, Attribute> attributes;
  std::map<std::string, std::string> capacity;  // name -> a resource.Quantity's text: "24Gi", "14"
  bool operator==(const Device&) const = default;
};

// resource.k8s.io/v1's limits on a published device (ResourceSlice validation).
inline constexpr size_t k_max_attributes_and_capacities =
    32;                                              // ResourceSliceMaxAttributesAndCapacitiesPerDevice
inline constexpr size_t k_max_attribute_value = 64;  // DeviceAttributeMaxValueLength

// Every GPU, then its MIG devices, in the inventory's order. A GPU in MIG mode is published through its
// MIG devices only (as NVIDIA's driver publishes static MIG). Devices are named and described as NVIDIA's
// driver names and describes them (devices.cpp says where gpuctk differs and why). An attribute whose
// value is unknown (proc mode: no brand, compute capability or CUDA version) is left out, as is one the
// API would refuse (a string over 64 characters, a version that is no semantic version); `notes` says
// which were refused. A MIG device whose name cannot be a DNS label is left out with a note.
std::vector<Device> devices_of(const discover::Inventory& inventory, std::vector<std::string>& notes);
std::vector<Device> devices_of(const discover::Inventory& inventory);

// A byte count as resource.Quantity's canonical BinarySI text: the largest of Ki, Mi, Gi, Ti, Pi, Ei that
// divides it exactly ("24Gi", "1536Mi"), else the plain integer ("14", "1000").
std::string binary_quantity(uint64_t value);

// A version as NVIDIA's driver publishes it (Masterminds semver's NewVersion, then String()): one to three
// dot-separated decimal numbers, missing parts 0 and leading zeros dropped: "8.0" -> "8.0.0",
// "535.104.05" -> "535.104.5". Nothing for anything else (empty, a suffix, a fourth part, overflow).
std::optional<std::string> semantic_version(std::string_view text);

// The API's name rules: a device name is a DNS label (1-63 of [a-z0-9-], alphanumeric at both ends); an
// attribute or capacity name is a C identifier of at most 32 characters, optionally after a DNS subdomain
// of at most 63 characters and a '/'.
bool valid_device_name(std::string_view name);
bool valid_qualified_name(std::string_view name);

}  // namespace gpuctk::dra
