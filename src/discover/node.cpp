// The node: discovery of every vendor's GPUs and the hardware facts their inventories do not carry.
#include "discover/node.hpp"

#include <algorithm>
#include <limits>

#include "discover/host_fs.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

// Where GFD takes the machine type from (its --machine-type-file default), below the dev root.
constexpr std::string_view k_machine_file = "/sys/class/dmi/id/product_name";
// A DMI product name is a few dozen bytes; a file larger than this is not one.
constexpr size_t k_max_machine_size = 4096;
// A PCI sysfs attribute is one "0x%0Nx\n" line.
constexpr size_t k_max_pci_attribute_size = 64;

// A sysfs attribute of a PCI device written as "0x%0Nx\n" ("0x030200", "0x10de"); nullopt when unreadable.
std::optional<uint32_t> read_pci_hex(const std::string& dev_root, const std::string& bus_id,
                                     std::string_view attribute) {
  auto text = read_file(under_root(dev_root, "/sys/bus/pci/devices/" + bus_id + "/" + std::string(attribute)),
                        k_max_pci_attribute_size);
  if (!text) {
    return std::nullopt;
  }
  const auto value = trim(*text);
  const auto parsed = value.starts_with("0x") ? parse_hex(value) : std::nullopt;
  if (!parsed || *parsed > std::numeric_limits<uint32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(*parsed);
}

std::optional<uint32_t> read_pci_class(const std::string& dev_root, const std::string& bus_id) {
  return read_pci_hex(dev_root, bus_id, "class");
}

// What the GPU Operator's nvidia.com/gpu.present stands for: it sets the label on a node that NFD gives
// feature.node.kubernetes.io/pci-10de.present (or pci-0300_10de / pci-0302_10de), i.e. that has an NVIDIA
// PCI display controller, whether or not a driver is loaded (the label is what schedules the driver).
constexpr uint32_t k_nvidia_pci_vendor = 0x10de;
// PCI base class and subclass (class >> 8) of the controllers NFD's labels above name.
constexpr uint32_t k_nvidia_gpu_classes[] = {
    0x0300,  // VGA compatible controller (GPUs with a display engine: T4, A10, L4, RTX)
    0x0302,  // 3D controller (data-centre GPUs without one: A100, H100)
};

// Bounded: a node has a few hundred PCI functions; a sysfs with more is not read further.
constexpr size_t k_max_pci_devices = 65536;

bool has_nvidia_pci_gpu(const std::string& dev_root) {
  const auto entries = list_dir(under_root(dev_root, "/sys/bus/pci/devices"));
  if (!entries) {
    return false;
  }
  for (size_t i = 0; i < entries->size() && i < k_max_pci_devices; ++i) {
    const std::string& bus = (*entries)[i].name;
    if (read_pci_hex(dev_root, bus, "vendor") != k_nvidia_pci_vendor) {
      continue;
    }
    if (const auto klass = read_pci_class(dev_root, bus);
        klass && std::ranges::find(k_nvidia_gpu_classes, *klass >> 8) != std::end(k_nvidia_gpu_classes)) {
      return true;
    }
  }
  return false;
}

}  // namespace

HardwareFacts read_hardware_facts(const std::string& dev_root, const Inventory& nvidia,
                                  const DrmInventory& drm) {
  HardwareFacts facts;
  if (auto text = read_file(under_root(dev_root, std::string(k_machine_file)), k_max_machine_size)) {
    if (const auto machine = trim(*text); !machine.empty()) {
      facts.machine = std::string(machine);
    }
  }
  std::vector<std::string> buses;
  for (const auto& gpu : nvidia.gpus) {
    buses.push_back(gpu.bus_id);
  }
  for (const auto& gpu : drm.gpus) {
    buses.push_back(gpu.bus_id);
  }
  for (const auto& bus : buses) {
    if (facts.pci_classes.contains(bus)) {
      continue;
    }
    if (const auto klass = read_pci_class(dev_root, bus)) {
      facts.pci_classes.emplace(bus, *klass);
    }
  }
  facts.nvidia_pci_gpu = has_nvidia_pci_gpu(dev_root);
  return facts;
}

Result<Node> discover_node(const DiscoverOptions& options, const NodeVendors& vendors) {
  Node node;
  if (vendors.nvidia) {
    const std::string proc = under_root(options.dev_root, "/proc/driver/nvidia");
    GPUCTK_TRY_ASSIGN(const auto loaded, lstat_path(proc));
    if (loaded) {
      GPUCTK_TRY_ASSIGN(node.nvidia, discover(options));
      node.warnings = node.nvidia.warnings;
    } else {
      node.no_nvidia_driver = "no NVIDIA driver (" + proc + " missing)";
    }
  }
  if (!vendors.drm.empty()) {
    GPUCTK_TRY_ASSIGN(node.drm, discover_drm_gpus(options.dev_root, vendors.drm));
    node.warnings.insert(node.warnings.end(), node.drm.warnings.begin(), node.drm.warnings.end());
  }
  node.facts = read_hardware_facts(options.dev_root, node.nvidia, node.drm);
  return node;
}

}  // namespace gpuctk::discover
