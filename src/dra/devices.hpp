#pragma once
// The devices gpuctk-dra-plugin publishes in its node's ResourceSlices: each GPU and each MIG device of the
// inventory, named and described as NVIDIA's DRA driver for GPUs (driver gpu.nvidia.com) describes them, so
// that DeviceClasses and CEL selectors written for NVIDIA's driver select the same devices.

#include <cstdint>
#include <map>
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
  // Keys without a domain are in the driver's (gpu.nvidia.com); "resource.kubernetes.io/pciBusID" has
  // Kubernetes' standard domain.
  std::map<std::string, Attribute> attributes;
  std::map<std::string, std::string> capacity;  // name -> a resource.Quantity's text: "24Gi", "14"
  bool operator==(const Device&) const = default;
};

// Every GPU, then its MIG devices, in the inventory's order. A GPU in MIG mode is published through its
// MIG devices only (as NVIDIA's driver publishes static MIG).
std::vector<Device> devices_of(const discover::Inventory& inventory);

}  // namespace gpuctk::dra
