// Intel's label set: the labels Intel's NFD rules give Intel GPUs (labels.hpp, intel_labels).
#include <algorithm>
#include <map>

#include "labels/labels.hpp"
#include "labels/vendor_common.hpp"

namespace gpuctk::labels {

namespace {

// Intel GPUs that Intel's NFD rules (intel-device-plugins-for-kubernetes, platform-labeling-rules)
// name, by PCI device id.
struct IntelRow {
  uint16_t device;
  std::string_view family;
  std::string_view product;  // empty: the rules name only the family
};
constexpr IntelRow k_intel_gpus[] = {
    {0x0bd0, "Max_Series", ""},           // Data Center GPU Max (Ponte Vecchio)
    {0x0bd5, "Max_Series", "Max_1550"},   //
    {0x0bd6, "Max_Series", ""},           //
    {0x0bd7, "Max_Series", ""},           //
    {0x0bd9, "Max_Series", ""},           //
    {0x0bda, "Max_Series", "Max_1100"},   //
    {0x0bdb, "Max_Series", ""},           //
    {0x56c0, "Flex_Series", "Flex_170"},  // Data Center GPU Flex (Arctic Sound-M)
    {0x56c1, "Flex_Series", "Flex_140"},  //
    {0x5690, "A_Series", ""},             // Arc A-series (Alchemist), desktop and mobile
    {0x5691, "A_Series", ""},
    {0x5692, "A_Series", ""},
    {0x5693, "A_Series", ""},
    {0x5694, "A_Series", ""},
    {0x5695, "A_Series", ""},
    {0x5696, "A_Series", ""},
    {0x5697, "A_Series", ""},
    {0x56a0, "A_Series", ""},
    {0x56a1, "A_Series", ""},
    {0x56a2, "A_Series", ""},
    {0x56a3, "A_Series", ""},
    {0x56a4, "A_Series", ""},
    {0x56a5, "A_Series", ""},
    {0x56a6, "A_Series", ""},
    {0x56b0, "A_Series", ""},
    {0x56b1, "A_Series", ""},
    {0x56b2, "A_Series", ""},
    {0x56b3, "A_Series", ""},
    {0x56ba, "A_Series", ""},
    {0x56bb, "A_Series", ""},
    {0x56bc, "A_Series", ""},
    {0x56bd, "A_Series", ""},
};

}  // namespace

Labels intel_labels(const discover::DrmInventory& drm, const discover::HardwareFacts& facts) {
  Labels out;
  std::map<std::string, size_t> device_ids;  // "<class>-<device>" -> count
  std::map<std::string_view, size_t> products;
  std::vector<std::string_view> families;
  std::vector<std::string_view> seen;
  for (const auto& gpu : drm.gpus) {
    if (gpu.vendor != discover::DrmVendor::intel || std::ranges::find(seen, gpu.bus_id) != seen.end()) {
      continue;
    }
    seen.push_back(gpu.bus_id);
    if (const auto klass = facts.pci_classes.find(gpu.bus_id); klass != facts.pci_classes.end()) {
      const uint32_t code = klass->second >> 8;
      if (code == 0x0300 || code == 0x0380) {
        ++device_ids[hex4(code) + "-" + hex4(gpu.device_id)];
      }
    }
    const auto* row = std::ranges::find(k_intel_gpus, gpu.device_id, &IntelRow::device);
    if (row != std::end(k_intel_gpus)) {
      if (std::ranges::find(families, row->family) == families.end()) {
        families.push_back(row->family);
      }
      if (!row->product.empty()) {
        ++products[row->product];
      }
    }
  }
  for (const auto& [id, count] : device_ids) {
    out["gpu.intel.com/device-id." + id + ".present"] = "true";
    out["gpu.intel.com/device-id." + id + ".count"] = std::to_string(count);
  }
  // NFD's rules give one product and family per node: with GPUs of several, none is right.
  if (families.size() == 1) {
    out["gpu.intel.com/family"] = families.front();
  }
  if (products.size() == 1) {
    out["gpu.intel.com/product"] = products.begin()->first;
    out["gpu.intel.com/device.count"] = std::to_string(products.begin()->second);
  }
  return out;
}

}  // namespace gpuctk::labels
