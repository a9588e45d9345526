// AMD's label set: the names and rules of AMD's node labeller (labels.hpp, amd_labels).
#include <algorithm>
#include <map>

#include "labels/labels.hpp"
#include "labels/vendor_common.hpp"

namespace gpuctk::labels {

namespace {

// AMD's node labeller's spelling of a product name: spaces as '_', parentheses dropped
// ("AMD Instinct MI300X OAM" -> "AMD_Instinct_MI300X_OAM"). Anything else a label value cannot hold is
// left to the label check, which leaves the label out.
std::string amd_product(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c != '(' && c != ')') {
      out += c == ' ' ? '_' : c;
    }
  }
  return out;
}

// AMD's node labeller's spelling of a VRAM size: whole MiB, then GiB rounded half away from zero, and
// "G" (206158430208 -> "192G", 536870912 -> "1G", 536870911 -> "0G").
std::string amd_vram(uint64_t bytes) {
  return std::to_string((bytes / k_mib + 512) / 1024) + "G";
}

// AMD's node labeller's form of a fact about several GPUs: `key`=<value> when all GPUs share one value,
// else `key`.<value>=<count> per value.
void counted_label(Labels& out, const std::string& key, const std::map<std::string, size_t>& values) {
  if (values.size() == 1) {
    out[key] = values.begin()->first;
    return;
  }
  for (const auto& [value, count] : values) {
    out[key + "." + value] = std::to_string(count);
  }
}

}  // namespace

Labels amd_labels(const discover::DrmInventory& drm) {
  // Values and how many GPUs have each, GPUs whose value is unknown left out, as the labeller skips
  // them. It reads the device id and product name from sysfs through a card's PCI device, which a
  // partition's card does not have: one per PCI device. The rest it reads from the KFD node of each
  // render node: one per partition.
  std::map<std::string, size_t> ids;
  std::map<std::string, size_t> products;
  std::map<std::string, size_t> vram;
  std::map<std::string, size_t> simds;
  std::map<std::string, size_t> cus;
  std::vector<std::string_view> seen;
  for (const auto& gpu : drm.gpus) {
    if (gpu.vendor != discover::DrmVendor::amd) {
      continue;
    }
    if (gpu.vram_bytes) {
      ++vram[amd_vram(*gpu.vram_bytes)];
    }
    if (gpu.simd_count) {
      ++simds[std::to_string(*gpu.simd_count)];
    }
    if (gpu.cu_count) {
      ++cus[std::to_string(*gpu.cu_count)];
    }
    if (std::ranges::find(seen, gpu.bus_id) != seen.end()) {
      continue;
    }
    seen.push_back(gpu.bus_id);
    ++ids[hex4(gpu.device_id)];
    if (auto product = amd_product(gpu.product_name); !product.empty()) {
      ++products[std::move(product)];
    }
  }
  Labels out;
  counted_label(out, "amd.com/gpu.device-id", ids);
  counted_label(out, "amd.com/gpu.product-name", products);
  counted_label(out, "amd.com/gpu.vram", vram);
  counted_label(out, "amd.com/gpu.simd-count", simds);
  counted_label(out, "amd.com/gpu.cu-count", cus);
  return out;
}

}  // namespace gpuctk::labels
