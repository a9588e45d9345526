#include "labels/labels.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "discover/host_fs.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::labels {

namespace {

constexpr uint64_t k_mib = 1024ull * 1024ull;
constexpr std::string_view k_gpu_resource = "nvidia.com/gpu";

// Where GFD takes the machine type from (its --machine-type-file default), below the dev root.
constexpr std::string_view k_machine_file = "/sys/class/dmi/id/product_name";

// GPU architecture families by compute capability, as GFD names them: the last row whose major matches
// and whose minor is at most the GPU's.
struct FamilyRow {
  uint32_t major;
  uint32_t from_minor;
  std::string_view family;
};
constexpr FamilyRow k_families[] = {
    {1, 0, "tesla"},         // G80, GT200
    {2, 0, "fermi"},         // GF100
    {3, 0, "kepler"},        // GK1xx
    {5, 0, "maxwell"},       // GM1xx, GM2xx
    {6, 0, "pascal"},        // GP100, GP10x
    {7, 0, "volta"},         // GV100 (7.0), Xavier (7.2)
    {7, 5, "turing"},        // TU1xx
    {8, 0, "ampere"},        // GA100 (8.0), GA10x (8.6), Orin (8.7)
    {8, 9, "ada-lovelace"},  // AD10x
    {9, 0, "hopper"},        // GH100
    {10, 0, "blackwell"},    // GB100, GB200
    {12, 0, "blackwell"},    // GB20x
    {13, 0, "rubin"},        // GFD's name for 13.x
};

// PCI base class and subclass (class >> 8) of a GPU, and GFD's nvidia.com/gpu.mode for it.
struct ModeRow {
  uint32_t class_code;
  std::string_view mode;
};
constexpr ModeRow k_modes[] = {
    {0x0300, "graphics"},  // VGA compatible controller: display mode
    {0x0302, "compute"},   // 3D controller: compute mode
};

// The driver version "550.54.15" as GFD splits it: 2 or 3 dot-separated numbers.
std::optional<std::vector<std::string_view>> version_parts(std::string_view version, size_t min_parts,
                                                           size_t max_parts) {
  auto parts = split(version, '.');
  if (parts.size() < min_parts || parts.size() > max_parts) {
    return std::nullopt;
  }
  for (const auto part : parts) {
    if (part.empty() || !std::ranges::all_of(part, [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
  }
  return parts;
}

std::string profile_type(std::string_view profile) {
  // GFD names MIG types by the profile with '+' as '.' ("1g.10gb+me" -> "1g.10gb.me").
  std::string type(profile);
  std::ranges::replace(type, '+', '.');
  return type;
}

// The labels of one advertised resource ("nvidia.com/gpu", "nvidia.com/mig-1g.5gb"): GFD's
// count, product, replicas and sharing-strategy, and the per-device facts.
class ResourceLabels {
 public:
  // `sharing_applies`: false for MIG-enabled GPUs labelled as whole GPUs (GFD labels them without
  // sharing: 0 replicas); `sharing` may be null (no config file: 1 replica).
  ResourceLabels(Labels& out, std::string resource, const SharingConfig* sharing, bool sharing_applies)
      : m_out(out), m_resource(std::move(resource)), m_sharing(sharing), m_sharing_applies(sharing_applies) {}

  void set(std::string_view suffix, std::string value) {
    m_out[m_resource + "." + std::string(suffix)] = std::move(value);
  }

  void base(size_t count, const std::vector<std::string_view>& product_parts) {
    const ReplicatedResource* replicated =
        m_sharing_applies && m_sharing != nullptr ? m_sharing->find(m_resource) : nullptr;
    const uint32_t replicas = !m_sharing_applies ? 0 : replicated != nullptr ? replicated->replicas : 1;
    std::vector<std::string> parts;
    for (const auto part : product_parts) {
      if (auto clean = sanitise(part); !clean.empty()) {
        parts.push_back(std::move(clean));
      }
    }
    // Shared without renaming: the plugin advertises the replicas under the plain resource name, and
    // the product says so.
    if (!parts.empty() && replicated != nullptr && !replicated->renamed) {
      parts.emplace_back("SHARED");
    }
    if (!parts.empty()) {
      set("product", join(parts, "-"));
    }
    set("count", std::to_string(count));
    set("replicas", std::to_string(replicas));
    const SharingStrategy strategy =
        replicated != nullptr && replicas > 1 ? m_sharing->strategy : SharingStrategy::none;
    set("sharing-strategy", std::string(sharing_strategy_name(strategy)));
  }

  void memory(uint64_t bytes) {
    if (bytes / k_mib > 0) {
      set("memory", std::to_string(bytes / k_mib));
    }
  }

  void mig_attributes(const discover::MigDevice& mig) {
    memory(mig.memory_bytes);
    if (!mig.attributes) {
      return;
    }
    const auto& a = *mig.attributes;
    // Every MIG device has streaming multiprocessors: 0 is NVML not saying (the mock NVML), not a count.
    if (a.multiprocessors > 0) {
      set("multiprocessors", std::to_string(a.multiprocessors));
    }
    set("slices.gi", std::to_string(a.gi_slices));
    set("slices.ci", std::to_string(a.ci_slices));
    set("engines.copy", std::to_string(a.copy_engines));
    set("engines.decoder", std::to_string(a.decoders));
    set("engines.encoder", std::to_string(a.encoders));
    set("engines.jpeg", std::to_string(a.jpeg_engines));
    set("engines.ofa", std::to_string(a.ofa_engines));
  }

 private:
  Labels& m_out;
  std::string m_resource;
  const SharingConfig* m_sharing;
  bool m_sharing_applies;
};

void version_labels(const discover::Inventory& inv, Labels& out, std::vector<std::string>& warnings) {
  if (const auto driver = version_parts(inv.driver_version, 2, 3)) {
    const auto& d = *driver;
    const std::string rev = d.size() > 2 ? std::string(d[2]) : std::string();
    out["nvidia.com/cuda.driver.major"] = d[0];
    out["nvidia.com/cuda.driver.minor"] = d[1];
    out["nvidia.com/cuda.driver.rev"] = rev;
    out["nvidia.com/cuda.driver-version.major"] = d[0];
    out["nvidia.com/cuda.driver-version.minor"] = d[1];
    out["nvidia.com/cuda.driver-version.revision"] = rev;
    out["nvidia.com/cuda.driver-version.full"] = inv.driver_version;
  } else {
    warnings.push_back("driver version " + quote(inv.driver_version) +
                       " is not X.Y[.Z]: no nvidia.com/cuda.driver labels");
  }
  // The CUDA version the driver supports (NVML's); unknown without NVML.
  if (const auto cuda = version_parts(inv.cuda_version, 2, 2)) {
    out["nvidia.com/cuda.runtime.major"] = (*cuda)[0];
    out["nvidia.com/cuda.runtime.minor"] = (*cuda)[1];
    out["nvidia.com/cuda.runtime-version.major"] = (*cuda)[0];
    out["nvidia.com/cuda.runtime-version.minor"] = (*cuda)[1];
    out["nvidia.com/cuda.runtime-version.full"] = inv.cuda_version;
  }
}

void mode_label(const HostFacts& facts, const std::vector<discover::Gpu>& gpus, Labels& out) {
  std::optional<std::string_view> mode;
  for (const auto& gpu : gpus) {
    const auto klass = facts.pci_classes.find(gpu.bus_id);
    const auto* row = klass != facts.pci_classes.end()
                          ? std::ranges::find(k_modes, klass->second >> 8, &ModeRow::class_code)
                          : std::end(k_modes);
    if (row == std::end(k_modes) || (mode && *mode != row->mode)) {
      return;  // unknown, or GPUs in different modes: GFD's "unknown", left out
    }
    mode = row->mode;
  }
  if (mode) {
    out["nvidia.com/gpu.mode"] = *mode;
  }
}

// mig.capable: true when any GPU can do MIG. NVML knows for every GPU; without it a GPU with MIG
// devices is known to be capable, and "false" is unknown.
void mig_capable_label(const discover::Inventory& inv, Labels& out) {
  bool any = false;
  bool all_known = true;
  for (const auto& gpu : inv.gpus) {
    any = any || gpu.mig_capable.value_or(false) || gpu.mig_enabled;
    all_known = all_known && gpu.mig_capable.has_value();
  }
  if (any || all_known) {
    out["nvidia.com/mig.capable"] = any ? "true" : "false";
  }
}

// The GPU whose model the nvidia.com/gpu.* labels describe: GFD labels every model and lets whole GPUs
// override MIG-enabled ones, in an order that varies from run to run; here, the first whole GPU, else
// the first GPU.
const discover::Gpu& labelled_gpu(const discover::Inventory& inv, std::vector<std::string>& warnings) {
  const auto whole = std::ranges::find(inv.gpus, false, &discover::Gpu::mig_enabled);
  const discover::Gpu& chosen = whole != inv.gpus.end() ? *whole : inv.gpus.front();
  std::vector<std::string> models;
  for (const auto& gpu : inv.gpus) {
    if (std::ranges::find(models, gpu.model) == models.end()) {
      models.push_back(gpu.model);
    }
  }
  if (models.size() > 1) {
    warnings.push_back("GPUs of several models (" + join(models, ", ") +
                       "): the nvidia.com/gpu labels describe " + chosen.model + " (GPU " +
                       std::to_string(chosen.index) + ")");
  }
  return chosen;
}

void whole_gpu_labels(const discover::Inventory& inv, const NvidiaOptions& options, Labels& out,
                      std::vector<std::string>& warnings) {
  const discover::Gpu& gpu = labelled_gpu(inv, warnings);
  const auto count = std::ranges::count(inv.gpus, gpu.model, &discover::Gpu::model);
  ResourceLabels labels(out, std::string(k_gpu_resource), options.sharing, !gpu.mig_enabled);
  labels.base(static_cast<size_t>(count), {gpu.model});
  labels.memory(gpu.memory_bytes);
  if (gpu.compute_capability && gpu.compute_capability->major > 0) {
    const auto cc = *gpu.compute_capability;
    if (const auto family = architecture_family(cc)) {
      labels.set("family", std::string(*family));
    }
    labels.set("compute.major", std::to_string(cc.major));
    labels.set("compute.minor", std::to_string(cc.minor));
  }
}

// One MIG type (profile) on the node: how many devices, and the first of them with its GPU.
struct MigType {
  std::string profile;
  const discover::Gpu* gpu = nullptr;
  const discover::MigDevice* first = nullptr;
  size_t count = 0;
};

// The MIG types of MIG-enabled GPUs in GPU and device order; false when a device's profile is unknown
// (no NVML, or no nvmlDeviceGetAttributes_v2).
bool mig_types(const discover::Inventory& inv, std::vector<MigType>& types) {
  for (const auto& gpu : inv.gpus) {
    for (const auto& mig : gpu.mig_devices) {
      if (mig.profile.empty()) {
        return false;
      }
      const std::string type = profile_type(mig.profile);
      auto it = std::ranges::find(types, type, &MigType::profile);
      if (it == types.end()) {
        types.push_back({type, &gpu, &mig, 0});
        it = std::prev(types.end());
      }
      ++it->count;
    }
  }
  return true;
}

// The keys the single strategy overrides: left out when they cannot be known.
constexpr std::string_view k_single_keys[] = {"count",    "product",          "memory",
                                              "replicas", "sharing-strategy", "multiprocessors"};

void single_strategy_labels(const discover::Inventory& inv, const NvidiaOptions& options, Labels& out,
                            std::vector<std::string>& warnings) {
  const auto enabled = std::ranges::find(inv.gpus, true, &discover::Gpu::mig_enabled);
  if (enabled == inv.gpus.end()) {
    return;  // no MIG-enabled GPU: as the none strategy
  }
  const auto invalid = [&](const std::string& why) {
    // GFD's labels for a node the single strategy cannot describe.
    warnings.push_back("mig-strategy single: " + why + ": nvidia.com/gpu.product is " +
                       sanitise(enabled->model) + "-MIG-INVALID");
    ResourceLabels labels(out, std::string(k_gpu_resource), nullptr, false);
    labels.set("product", join(std::vector<std::string>{sanitise(enabled->model), "MIG", "INVALID"}, "-"));
    labels.set("count", "0");
    labels.set("replicas", "0");
    labels.set("sharing-strategy", "");
    labels.set("memory", "0");
  };
  if (std::ranges::any_of(inv.gpus, [](const auto& g) { return g.mig_enabled && g.mig_devices.empty(); })) {
    return invalid("a MIG-enabled GPU has no MIG devices");
  }
  if (std::ranges::any_of(inv.gpus, [](const auto& g) { return !g.mig_enabled; })) {
    return invalid("GPUs with MIG enabled and disabled");
  }
  std::vector<MigType> types;
  if (!mig_types(inv, types)) {
    warnings.emplace_back(
        "MIG profiles are unknown (no NVML): the nvidia.com/gpu labels of the single "
        "strategy are left out");
    for (const auto key : k_single_keys) {
      out.erase(std::string(k_gpu_resource) + "." + std::string(key));
    }
    return;
  }
  if (types.size() != 1) {
    return invalid("more than one MIG profile");
  }
  const MigType& type = types.front();
  ResourceLabels labels(out, std::string(k_gpu_resource), options.sharing, true);
  labels.base(type.count, {type.gpu->model, "MIG", type.profile});
  labels.mig_attributes(*type.first);
}

void mixed_strategy_labels(const discover::Inventory& inv, const NvidiaOptions& options, Labels& out,
                           std::vector<std::string>& warnings) {
  std::vector<MigType> types;
  if (!mig_types(inv, types)) {
    warnings.emplace_back("MIG profiles are unknown (no NVML): no nvidia.com/mig-<profile> labels");
    return;
  }
  for (const auto& type : types) {
    ResourceLabels labels(out, "nvidia.com/mig-" + type.profile, options.sharing, true);
    labels.base(type.count, {type.gpu->model, "MIG", type.profile});
    labels.mig_attributes(*type.first);
  }
}

// A sysfs attribute of a PCI device written as "0x%0Nx\n" ("0x030200", "0x10de"); nullopt when unreadable.
std::optional<uint32_t> read_pci_hex(const std::string& dev_root, const std::string& bus_id,
                                     std::string_view attribute) {
  auto text = read_file(
      discover::under_root(dev_root, "/sys/bus/pci/devices/" + bus_id + "/" + std::string(attribute)), 64);
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
  const auto entries = discover::list_dir(discover::under_root(dev_root, "/sys/bus/pci/devices"));
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

// Four lower-case hex digits, as sysfs and NFD spell PCI ids: 0x74a1 -> "74a1".
std::string hex4(uint32_t value) {
  constexpr std::string_view digits = "0123456789abcdef";
  std::string out(4, '0');
  for (int i = 3; i >= 0; --i) {
    out[static_cast<size_t>(i)] = digits[value & 0xf];
    value >>= 4;
  }
  return out;
}

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

bool is_label_name(std::string_view name) {
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  return !name.empty() && name.size() <= 63 && alnum(name.front()) && alnum(name.back()) &&
         std::ranges::all_of(name, [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_label_prefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() > 253) {
    return false;
  }
  for (const auto part : split(prefix, '.')) {
    const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (part.empty() || !alnum(part.front()) || !alnum(part.back()) ||
        !std::ranges::all_of(part, [&](char c) { return alnum(c) || c == '-'; })) {
      return false;
    }
  }
  return true;
}

bool is_label_key(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) {
    return is_label_name(key);
  }
  return is_label_prefix(key.substr(0, slash)) && is_label_name(key.substr(slash + 1));
}

bool is_label_value(std::string_view value) {
  return value.empty() || is_label_name(value);
}

}  // namespace

std::string sanitise(std::string_view text) {
  std::string out;
  bool pending_dash = false;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      pending_dash = !out.empty();
      continue;
    }
    const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (!kept) {
      continue;
    }
    if (pending_dash) {
      out += '-';
      pending_dash = false;
    }
    out += c;
  }
  return out;
}

std::optional<std::string_view> architecture_family(discover::ComputeCapability capability) {
  std::optional<std::string_view> family;
  for (const auto& row : k_families) {
    if (row.major == capability.major && row.from_minor <= capability.minor) {
      family = row.family;
    }
  }
  return family;
}

HostFacts read_host_facts(const std::string& dev_root, const discover::Inventory& nvidia,
                          const discover::DrmInventory& drm) {
  HostFacts facts;
  if (auto text = read_file(discover::under_root(dev_root, std::string(k_machine_file)), 4096)) {
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

Result<NodeGpus> discover_node(const discover::DiscoverOptions& options) {
  NodeGpus node;
  const std::string proc = discover::under_root(options.dev_root, "/proc/driver/nvidia");
  GPUCTK_TRY_ASSIGN(const auto loaded, discover::lstat_path(proc));
  if (loaded) {
    GPUCTK_TRY_ASSIGN(node.nvidia, discover::discover(options));
    node.warnings = node.nvidia.warnings;
  } else {
    node.notes.push_back("no NVIDIA driver (" + proc + " missing): no nvidia.com labels");
  }
  GPUCTK_TRY_ASSIGN(node.drm, discover::discover_drm_gpus(
                                  options.dev_root, {discover::DrmVendor::amd, discover::DrmVendor::intel}));
  node.warnings.insert(node.warnings.end(), node.drm.warnings.begin(), node.drm.warnings.end());
  node.facts = read_host_facts(options.dev_root, node.nvidia, node.drm);
  return node;
}

Result<Labels> nvidia_labels(const discover::Inventory& inventory, const HostFacts& facts,
                             const NvidiaOptions& options, std::vector<std::string>& warnings) {
  Labels out;
  if (inventory.gpus.empty()) {
    return out;  // GFD labels nothing on a node without GPUs
  }
  // MPS shares a whole GPU among processes; the device plugin refuses it when a GPU is in MIG mode.
  if (options.sharing != nullptr && options.sharing->strategy == SharingStrategy::mps) {
    const auto mig = std::ranges::find(inventory.gpus, true, &discover::Gpu::mig_enabled);
    if (mig != inventory.gpus.end()) {
      return fail("MPS sharing is not supported with MIG: GPU " + std::to_string(mig->index) + " (" +
                  mig->bus_id + ") is in MIG mode");
    }
    out["nvidia.com/mps.capable"] = "true";
  } else {
    out["nvidia.com/mps.capable"] = "false";
  }
  if (facts.machine) {
    if (auto machine = sanitise(*facts.machine); !machine.empty()) {
      out["nvidia.com/gpu.machine"] = std::move(machine);
    }
  }
  version_labels(inventory, out, warnings);
  mig_capable_label(inventory, out);
  mode_label(facts, inventory.gpus, out);
  whole_gpu_labels(inventory, options, out, warnings);
  switch (options.mig_strategy) {
    case MigStrategy::none:
      break;  // GFD writes no mig.strategy label for none
    case MigStrategy::single:
      out["nvidia.com/mig.strategy"] = "single";
      single_strategy_labels(inventory, options, out, warnings);
      break;
    case MigStrategy::mixed:
      out["nvidia.com/mig.strategy"] = "mixed";
      mixed_strategy_labels(inventory, options, out, warnings);
      break;
  }
  return out;
}

Result<Labels> node_labels(const discover::Inventory& inventory, const HostFacts& facts,
                           const NvidiaOptions& options, std::vector<std::string>& warnings,
                           const discover::DrmInventory& drm) {
  // Each vendor's set writes only its own prefix (nvidia.com/, amd.com/, gpu.intel.com/): no overrides.
  GPUCTK_TRY_ASSIGN(Labels labels, nvidia_labels(inventory, facts, options, warnings));
  // The GPU Operator's label (not GFD's), which DaemonSets of NVIDIA's stack select nodes by: written
  // for NVIDIA GPUs on the PCI bus, driver or not, or ones discovery found.
  if (facts.nvidia_pci_gpu || !inventory.gpus.empty()) {
    labels.emplace("nvidia.com/gpu.present", "true");
  }
  labels.merge(amd_labels(drm));
  labels.merge(intel_labels(drm, facts));
  drop_invalid(labels, warnings);
  return labels;
}

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

Labels intel_labels(const discover::DrmInventory& drm, const HostFacts& facts) {
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

void drop_invalid(Labels& labels, std::vector<std::string>& warnings) {
  for (auto it = labels.begin(); it != labels.end();) {
    if (!is_label_key(it->first)) {
      warnings.push_back("label " + quote(it->first) + " left out: not a valid label name");
      it = labels.erase(it);
    } else if (!is_label_value(it->second)) {
      warnings.push_back("label " + it->first + " left out: " + quote(it->second) +
                         " is not a valid label value");
      it = labels.erase(it);
    } else {
      ++it;
    }
  }
}

std::string format_nfd(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    out += key;
    out += '=';
    out += value;
    out += '\n';
  }
  return out;
}

std::string format_json(const Labels& labels) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [key, value] : labels) {
    object[key] = value;
  }
  return object.dump(2) + "\n";
}

}  // namespace gpuctk::labels
