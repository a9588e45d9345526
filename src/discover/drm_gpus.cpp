#include "discover/drm_gpus.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "discover/device_nodes.hpp"
#include "discover/host_fs.hpp"
#include "discover/pci_bus_id.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

// A sysfs attribute is one page at most; a KFD properties file is about 1 KiB. Anything larger is not
// what the kernel writes.
constexpr size_t k_sysfs_max_bytes = 64 * 1024;

// The PCI vendor and bound driver of every DRM device that is a GPU here.
struct GpuDriverRow {
  uint16_t pci_vendor;
  DrmVendor vendor;
  std::string_view driver;
};
constexpr GpuDriverRow k_gpu_drivers[] = {
    {0x1002, DrmVendor::amd,
     "amdgpu"},  // AMD GCN and later (Radeon, Instinct); radeon-driven boards have no KFD
    {0x8086, DrmVendor::intel, "i915"},  // Intel Gen9 to Xe-HPG: integrated, Flex 140/170, Arc A-series
    {0x8086, DrmVendor::intel, "xe"},    // Intel Xe2 and later; Flex and Arc on kernels that bind them to xe
};

constexpr std::string_view k_drm_class = "/sys/class/drm";
constexpr std::string_view k_kfd_nodes = "/sys/class/kfd/kfd/topology/nodes";
constexpr std::string_view k_kfd_node = "/dev/kfd";

// "<prefix><decimal digits>", e.g. "card1", "renderD128"; the number.
std::optional<uint32_t> numbered(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) {
    return std::nullopt;
  }
  return parse_u32(name.substr(prefix.size()));
}

std::string base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// The text of a sysfs attribute, trimmed; nothing when it does not exist.
Result<std::optional<std::string>> read_attribute(const std::string& path) {
  GPUCTK_TRY_ASSIGN(const auto st, lstat_path(path));
  if (!st) {
    return std::optional<std::string>{};
  }
  GPUCTK_TRY_ASSIGN(const auto text, read_file(path, k_sysfs_max_bytes));
  return std::optional<std::string>(std::string(trim(text)));
}

// A hex attribute of a PCI device: nothing when absent, an error naming the file when malformed.
Result<std::optional<uint64_t>> read_hex_attribute(const std::string& path) {
  GPUCTK_TRY_ASSIGN(const auto text, read_attribute(path));
  if (!text) {
    return std::optional<uint64_t>{};
  }
  const auto value = parse_hex(*text);
  if (!value) {
    return fail(path + ": expected a hex number, got " + quote(*text));
  }
  return std::optional<uint64_t>(*value);
}

// One "<name> <decimal value>" line of a KFD topology file (kfd_topology.c prints every property so).
struct KfdValue {
  std::string_view name;
  uint64_t value = 0;
  std::string_view text;  // the value as written, for messages
  size_t line = 0;

  // The value into a 32-bit field (the kernel prints those with %u): out of range is an error.
  Result<void> narrow(uint32_t& field) const {
    if (value > UINT32_MAX) {
      return fail("line " + std::to_string(line) + ": " + std::string(name) + " " + std::string(text) +
                  " is out of range");
    }
    field = static_cast<uint32_t>(value);
    return {};
  }
};

// Calls `take(value)` for every line of `text`, blank lines skipped; a line that is not a name and
// a decimal number is an error "line <n>: ...", as is what `take` refuses.
template <typename Take>
Result<void> for_each_kfd_value(std::string_view text, Take take) {
  size_t number = 0;
  for (const auto raw : split(text, '\n')) {
    ++number;
    const auto line = trim(raw);
    if (line.empty()) {
      continue;
    }
    const auto space = line.find(' ');
    const auto name = line.substr(0, space);
    const auto value_text = space == std::string_view::npos ? std::string_view{} : trim(line.substr(space));
    const auto value = parse_unsigned(value_text);
    if (name.empty() || !value) {
      return fail("line " + std::to_string(number) + ": expected \"<name> <decimal value>\", got " +
                  quote(line));
    }
    GPUCTK_TRY(take(KfdValue{name, *value, value_text, number}));
  }
  return {};
}

// A PCI device bound to a GPU driver, as the walk of /sys/class/drm found it.
struct PciGpu {
  const GpuDriverRow* row = nullptr;
  std::string dir;  // host path of its sysfs directory, resolved inside the dev root
  uint16_t device_id = 0;
  uint64_t unique_id = 0;      // amdgpu's unique_id attribute (hex); 0 when absent
  std::string product_name{};  // amdgpu's product_name attribute; empty when absent
};

// A KFD topology node that is a GPU.
struct KfdGpu {
  uint32_t gpu_id = 0;
  KfdProperties properties;
  uint64_t vram_bytes = 0;  // its first memory bank's size; 0 when unknown
};

// What a GPU's KFD node says of it, into the GPU; 0 is unknown.
void take_kfd_facts(const KfdGpu& node, DrmGpu& gpu) {
  gpu.kfd_gpu_id = node.gpu_id;
  const auto known = [](auto value) { return value != 0 ? std::optional(value) : std::nullopt; };
  gpu.vram_bytes = known(node.vram_bytes);
  gpu.simd_count = known(node.properties.simd_count);
  if (node.properties.simd_per_cu != 0) {
    gpu.cu_count = known(node.properties.simd_count / node.properties.simd_per_cu);
  }
}

class Walker {
 public:
  Walker(std::string_view dev_root, DrmInventory& inventory)
      : m_dev_root(dev_root), m_resolver(dev_root), m_inv(inventory) {}

  // Every PCI device behind a card<N> of /sys/class/drm bound to a driver of `vendors`, by bus id.
  Result<std::map<std::string, PciGpu>> pci_gpus(const std::vector<DrmVendor>& vendors) {
    std::map<std::string, PciGpu> found;
    GPUCTK_TRY_ASSIGN(const auto entries, list_dir(m_inv.searched));
    for (const auto& entry : entries) {
      // card<N> only: connectors (card1-DP-1) and render nodes belong to a card's device.
      if (!numbered(entry.name, "card")) {
        continue;
      }
      const auto dir = m_resolver.resolve(std::string(k_drm_class) + "/" + entry.name + "/device");
      if (!dir) {
        continue;  // a DRM device with no parent device (vkms)
      }
      const std::string bus = base_name(*dir);
      if (found.contains(bus)) {
        continue;
      }
      GPUCTK_TRY_ASSIGN(const auto vendor, read_hex_attribute(*dir + "/vendor"));
      if (!vendor) {
        continue;  // not a PCI device: simpledrm, amdgpu_xcp_<n> partitions (reached through KFD)
      }
      const auto link = read_link(*dir + "/driver");
      if (!link) {
        continue;  // no driver bound
      }
      const std::string driver = base_name(*link);
      const auto* row = std::ranges::find_if(k_gpu_drivers, [&](const GpuDriverRow& r) {
        return r.pci_vendor == *vendor && r.driver == driver &&
               std::ranges::find(vendors, r.vendor) != vendors.end();
      });
      if (row == std::end(k_gpu_drivers)) {
        continue;
      }
      if (auto canonical = parse_pci_bus_id(bus); !canonical || *canonical != bus) {
        m_inv.warnings.push_back(*dir + ": not a PCI device directory name; " + entry.name + " skipped");
        continue;
      }
      PciGpu gpu{row, *dir};
      GPUCTK_TRY_ASSIGN(const auto device_id, read_hex_attribute(*dir + "/device"));
      gpu.device_id = static_cast<uint16_t>(device_id.value_or(0));
      if (row->vendor == DrmVendor::amd) {
        GPUCTK_TRY_ASSIGN(const auto unique_id, read_hex_attribute(*dir + "/unique_id"));
        gpu.unique_id = unique_id.value_or(0);
        // The board's name from its FRU EEPROM: only some server boards have the file.
        GPUCTK_TRY_ASSIGN(const auto product_name, read_attribute(*dir + "/product_name"));
        gpu.product_name = product_name.value_or("");
      }
      found.emplace(bus, std::move(gpu));
    }
    return found;
  }

  // KFD's GPU nodes by the PCI bus id they name; nothing when KFD is not loaded.
  Result<std::map<std::string, std::vector<KfdGpu>>> kfd_gpus() {
    std::map<std::string, std::vector<KfdGpu>> by_bus;
    const auto dir = m_resolver.resolve(k_kfd_nodes);
    if (!dir) {
      return by_bus;
    }
    GPUCTK_TRY_ASSIGN(const auto entries, list_dir(*dir));
    for (const auto& entry : entries) {
      if (!parse_u32(entry.name)) {
        continue;
      }
      const std::string node_dir = *dir + "/" + entry.name;
      GPUCTK_TRY_ASSIGN(const auto gpu_id_text, read_attribute(node_dir + "/gpu_id"));
      const auto gpu_id = gpu_id_text ? parse_u32(*gpu_id_text) : std::nullopt;
      if (!gpu_id) {
        m_inv.warnings.push_back(node_dir + "/gpu_id: missing or not a number; KFD node skipped");
        continue;
      }
      if (*gpu_id == 0) {
        continue;  // a CPU node
      }
      const std::string path = node_dir + "/properties";
      GPUCTK_TRY_ASSIGN(const auto text, read_file(path, k_sysfs_max_bytes));
      auto properties = parse_kfd_properties(text);
      if (!properties) {
        return fail_with(path, properties.error());
      }
      // AMD's node labeller takes a GPU's VRAM from its first memory bank, as here.
      const std::string bank_path = node_dir + "/mem_banks/0/properties";
      GPUCTK_TRY_ASSIGN(const auto bank_text, read_attribute(bank_path));
      uint64_t vram_bytes = 0;
      if (bank_text) {
        auto bank = parse_kfd_mem_bank(*bank_text);
        if (!bank) {
          return fail_with(bank_path, bank.error());
        }
        vram_bytes = bank->size_in_bytes;
      }
      by_bus[kfd_bus_id(*properties)].push_back({*gpu_id, *properties, vram_bytes});
    }
    for (auto& [bus, nodes] : by_bus) {
      std::ranges::sort(nodes, {}, [](const KfdGpu& n) { return n.properties.drm_render_minor; });
    }
    return by_bus;
  }

  // The card and render nodes of the DRM device whose sysfs directory is `device_dir` (all of them, or
  // only render node `only_render` and the cards), and the by-path links udev made for them (named
  // `<by_path_id>-card` / `-render`, kept only when they point at this device's node).
  Result<void> add_nodes(const std::string& device_dir, const std::string& by_path_id,
                         std::optional<uint32_t> only_render, DrmGpu& gpu) {
    const std::string drm_dir = device_dir + "/drm";
    GPUCTK_TRY_ASSIGN(const auto entries, list_dir(drm_dir));
    for (const auto& entry : entries) {
      const bool card = numbered(entry.name, "card").has_value();
      const auto render = numbered(entry.name, "renderD");
      if (!card && (!render || (only_render && *render != *only_render))) {
        continue;
      }
      const std::string path = "/dev/dri/" + entry.name;
      GPUCTK_TRY_ASSIGN(auto node, stat_device_node(m_dev_root, path));
      if (!node) {
        m_inv.warnings.push_back(under_root(m_dev_root, path) + ": listed in " + drm_dir +
                                 " but missing; not injected");
        continue;
      }
      const std::string link = "/dev/dri/by-path/" + by_path_id + (card ? "-card" : "-render");
      if (read_link(under_root(m_dev_root, link)) == "../" + entry.name) {
        gpu.by_path_links.push_back({"../" + entry.name, link});
      }
      gpu.nodes.push_back(std::move(*node));
    }
    std::ranges::sort(gpu.nodes, {}, &DeviceNode::path);
    std::ranges::sort(gpu.by_path_links);
    return {};
  }

  // One DrmGpu per partition of an AMD GPU that KFD lists more than once: each partition's render node
  // (drm_render_minor) and the cards of the DRM device holding it: the PCI device for the first, an
  // amdgpu_xcp_<n> platform device for the others.
  Result<void> add_partitions(const std::string& bus, const DrmGpu& base, const std::vector<KfdGpu>& nodes) {
    std::vector<DrmGpu> parts;
    for (const auto& node : nodes) {
      const uint32_t minor = node.properties.drm_render_minor;
      const std::string render = "renderD" + std::to_string(minor);
      const auto dir = m_resolver.resolve(std::string(k_drm_class) + "/" + render + "/device");
      if (!dir) {
        m_inv.warnings.push_back("KFD GPU " + std::to_string(node.gpu_id) + " of " + bus + ": " +
                                 under_root(m_dev_root, std::string(k_drm_class) + "/" + render) +
                                 " missing; partition skipped");
        continue;
      }
      DrmGpu part = base;
      take_kfd_facts(node, part);
      // udev's ID_PATH: pci-<bus> for the PCI device, platform-<name> for a platform device.
      const std::string by_path_id = base_name(*dir) == bus ? "pci-" + bus : "platform-" + base_name(*dir);
      GPUCTK_TRY(add_nodes(*dir, by_path_id, minor, part));
      parts.push_back(std::move(part));
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      parts[i].partition = static_cast<uint32_t>(i);
      parts[i].partitions = static_cast<uint32_t>(parts.size());
      m_inv.gpus.push_back(std::move(parts[i]));
    }
    return {};
  }

  Result<void> run(const std::vector<DrmVendor>& vendors) {
    GPUCTK_TRY_ASSIGN(const auto pci, pci_gpus(vendors));
    const bool want_amd = std::ranges::find(vendors, DrmVendor::amd) != vendors.end();
    std::map<std::string, std::vector<KfdGpu>> kfd;
    if (want_amd) {
      GPUCTK_TRY_ASSIGN(kfd, kfd_gpus());
    }
    for (const auto& [bus, nodes] : kfd) {
      const auto it = pci.find(bus);
      if (it == pci.end() || it->second.row->vendor != DrmVendor::amd) {
        m_inv.warnings.push_back("KFD GPU " + std::to_string(nodes.front().gpu_id) + " names " + bus +
                                 ", which has no amdgpu DRM device in " + m_inv.searched + "; skipped");
      }
    }
    for (const auto vendor : {DrmVendor::amd, DrmVendor::intel}) {
      for (const auto& [bus, found] : pci) {
        if (found.row->vendor != vendor) {
          continue;
        }
        DrmGpu gpu;
        gpu.vendor = vendor;
        gpu.bus_id = bus;
        gpu.driver = std::string(found.row->driver);
        gpu.device_id = found.device_id;
        const auto nodes = kfd.find(bus);
        if (vendor == DrmVendor::amd) {
          gpu.product_name = found.product_name;
          const uint64_t kfd_unique_id = nodes == kfd.end() ? 0 : nodes->second.front().properties.unique_id;
          gpu.uuid = amd_uuid(kfd_unique_id != 0 ? kfd_unique_id : found.unique_id);
        }
        if (nodes != kfd.end() && nodes->second.size() > 1) {
          GPUCTK_TRY(add_partitions(bus, gpu, nodes->second));
          continue;
        }
        if (nodes != kfd.end()) {
          take_kfd_facts(nodes->second.front(), gpu);
        }
        GPUCTK_TRY(add_nodes(found.dir, "pci-" + bus, std::nullopt, gpu));
        m_inv.gpus.push_back(std::move(gpu));
      }
    }
    const bool any_amd =
        std::ranges::any_of(m_inv.gpus, [](const DrmGpu& g) { return g.vendor == DrmVendor::amd; });
    if (any_amd) {
      GPUCTK_TRY_ASSIGN(m_inv.kfd, stat_device_node(m_dev_root, k_kfd_node));
      if (!m_inv.kfd) {
        m_inv.warnings.push_back(under_root(m_dev_root, k_kfd_node) +
                                 ": missing (amdgpu loaded without KFD?); AMD devices get no compute node");
      }
    }
    return {};
  }

 private:
  std::string m_dev_root;
  RootResolver m_resolver;
  DrmInventory& m_inv;
};

}  // namespace

std::string_view drm_vendor_name(DrmVendor vendor) {
  return vendor == DrmVendor::amd ? "amd" : "intel";
}

Result<DrmInventory> discover_drm_gpus(std::string_view dev_root, const std::vector<DrmVendor>& vendors) {
  DrmInventory inventory;
  inventory.searched = under_root(dev_root, k_drm_class);
  GPUCTK_TRY(Walker(dev_root, inventory).run(vendors));
  return inventory;
}

Result<KfdProperties> parse_kfd_properties(std::string_view text) {
  KfdProperties out;
  GPUCTK_TRY(for_each_kfd_value(text, [&](const KfdValue& value) -> Result<void> {
    const auto name = value.name;
    if (name == "drm_render_minor") {
      return value.narrow(out.drm_render_minor);
    }
    if (name == "domain") {
      return value.narrow(out.domain);
    }
    if (name == "location_id") {
      return value.narrow(out.location_id);
    }
    if (name == "simd_count") {
      return value.narrow(out.simd_count);
    }
    if (name == "simd_per_cu") {
      return value.narrow(out.simd_per_cu);
    }
    if (name == "unique_id") {
      out.unique_id = value.value;
    }
    return {};
  }));
  return out;
}

Result<KfdMemBank> parse_kfd_mem_bank(std::string_view text) {
  KfdMemBank out;
  GPUCTK_TRY(for_each_kfd_value(text, [&](const KfdValue& value) -> Result<void> {
    const auto name = value.name;
    if (name == "size_in_bytes") {
      out.size_in_bytes = value.value;
    }
    return {};
  }));
  return out;
}

std::string kfd_bus_id(const KfdProperties& properties) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", properties.domain,
                (properties.location_id >> 8) & 0xff, (properties.location_id >> 3) & 0x1f);
  return text;
}

std::string amd_uuid(uint64_t unique_id) {
  if (unique_id == 0) {
    return {};
  }
  char text[24];
  std::snprintf(text, sizeof text, "0x%llX", static_cast<unsigned long long>(unique_id));
  return text;
}

}  // namespace gpuctk::discover
