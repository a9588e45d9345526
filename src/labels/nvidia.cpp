// NVIDIA's label set: GPU Feature Discovery's names and rules (labels.hpp, nvidia_labels).
#include <algorithm>
#include <optional>

#include "labels/labels.hpp"
#include "labels/vendor_common.hpp"
#include "util/strings.hpp"

namespace gpuctk::labels {

namespace {

constexpr std::string_view k_gpu_resource = "nvidia.com/gpu";

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

void mode_label(const discover::HardwareFacts& facts, const std::vector<discover::Gpu>& gpus, Labels& out) {
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

Result<Labels> nvidia_labels(const discover::Inventory& inventory, const discover::HardwareFacts& facts,
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

}  // namespace gpuctk::labels
