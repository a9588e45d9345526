#include "cdi/vendor_spec.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cdi/hook_args.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "discover/node.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

using discover::DrmGpu;
using discover::DrmVendor;

// The vendors of a set, in the order they are reported and written.
struct VendorRow {
  GpuVendor vendor;
  std::string_view name;
};
constexpr VendorRow k_vendors[] = {
    {GpuVendor::nvidia, "nvidia"},  // nvidia.com/gpu (or --vendor/--class): driver files, hooks, MIG
    {GpuVendor::amd, "amd"},        // amd.com/gpu: DRM nodes, by-path links, /dev/kfd
    {GpuVendor::intel, "intel"},    // intel.com/gpu: DRM nodes, by-path links
};

std::string_view vendor_label(DrmVendor vendor) {
  return vendor == DrmVendor::amd ? "AMD" : "Intel";
}

class DrmBuilder {
 public:
  DrmBuilder(const discover::DrmInventory& inventory, DrmVendor vendor, const BuildOptions& options)
      : m_inv(inventory), m_vendor(vendor), m_opt(options) {}

  Result<Spec> build(std::vector<std::string>& warnings) {
    if (!m_opt.device_ids.empty()) {
      return fail("--device-ids selects NVIDIA devices only; it cannot select " +
                  std::string(vendor_label(m_vendor)) + " GPUs");
    }
    std::vector<const DrmGpu*> gpus;
    for (const auto& gpu : m_inv.gpus) {
      if (gpu.vendor == m_vendor) {
        gpus.push_back(&gpu);
      }
    }
    if (gpus.empty()) {
      return fail("no devices to generate: no " + std::string(vendor_label(m_vendor)) + " GPUs in " +
                  m_inv.searched);
    }
    Spec spec;
    spec.kind = std::string(m_vendor == DrmVendor::amd ? k_amd_kind : k_intel_kind);
    const auto uuids = usable_uuids(gpus, warnings);
    for (size_t index = 0; index < gpus.size(); ++index) {
      const DrmGpu& gpu = *gpus[index];
      const ContainerEdits edits = edits_of({&gpu});
      for (const auto strategy : m_opt.name_strategies) {
        switch (strategy) {
          case NameStrategy::index:
            spec.devices.push_back({std::to_string(index), {}, edits});
            break;
          case NameStrategy::type_index:
            spec.devices.push_back({"gpu" + std::to_string(index), {}, edits});
            break;
          case NameStrategy::uuid:
            break;  // below: one device per UUID, whole GPUs
        }
      }
    }
    if (std::ranges::find(m_opt.name_strategies, NameStrategy::uuid) != m_opt.name_strategies.end()) {
      for (const auto& [uuid, members] : uuids) {
        spec.devices.push_back({uuid, {}, edits_of(members)});
      }
    }
    if (m_opt.all_device) {
      spec.devices.push_back({"all", {}, edits_of(gpus)});
    }
    set_device_node_gids(spec, m_opt.additional_gids);
    std::ranges::sort(spec.devices, {}, &Device::name);
    spec.cdi_version = minimum_version(spec).version.str();
    return spec;
  }

 private:
  // The GPUs each UUID names (every partition of one GPU shares it), leaving out a UUID that two GPUs
  // (two bus ids) report: a name must mean one thing.
  std::map<std::string, std::vector<const DrmGpu*>> usable_uuids(const std::vector<const DrmGpu*>& gpus,
                                                                 std::vector<std::string>& warnings) const {
    std::map<std::string, std::vector<const DrmGpu*>> by_uuid;
    for (const DrmGpu* gpu : gpus) {
      if (!gpu->uuid.empty()) {
        by_uuid[gpu->uuid].push_back(gpu);
      }
    }
    std::erase_if(by_uuid, [&](const auto& entry) {
      const auto& [uuid, members] = entry;
      const auto other = std::ranges::find_if(
          members, [&](const DrmGpu* g) { return g->bus_id != members.front()->bus_id; });
      if (other == members.end()) {
        return false;
      }
      warnings.push_back(std::string(vendor_label(m_vendor)) + " GPUs " + members.front()->bus_id + " and " +
                         (*other)->bus_id + " report the same unique_id " + uuid + "; it names no device");
      return true;
    });
    return by_uuid;
  }

  [[nodiscard]] bool hook_enabled(std::string_view name) const { return cdi::hook_enabled(m_opt, name); }

  // The nodes of `gpus` (and /dev/kfd for AMD), sorted, and one create-symlinks hook for their links.
  [[nodiscard]] ContainerEdits edits_of(const std::vector<const DrmGpu*>& gpus) const {
    ContainerEdits edits;
    std::set<discover::Symlink> links;
    for (const DrmGpu* gpu : gpus) {
      for (const auto& node : gpu->nodes) {
        edits.device_nodes.push_back(spec_device_node(node));
      }
      links.insert(gpu->by_path_links.begin(), gpu->by_path_links.end());
    }
    if (m_vendor == DrmVendor::amd && m_inv.kfd) {
      edits.device_nodes.push_back(spec_device_node(*m_inv.kfd));
    }
    std::ranges::sort(edits.device_nodes, {}, &DeviceNode::path);
    edits.device_nodes.erase(std::ranges::unique(edits.device_nodes, {}, &DeviceNode::path).begin(),
                             edits.device_nodes.end());
    if (!links.empty() && hook_enabled(k_hook_create_symlinks)) {
      CreateSymlinksArgs args;
      for (const auto& link : links) {
        args.links.push_back({link.target, link.link});
      }
      edits.hooks.push_back({"createContainer", m_opt.hook_path, args.to_args(), k_hook_env, std::nullopt});
    }
    return edits;
  }

  const discover::DrmInventory& m_inv;
  DrmVendor m_vendor;
  const BuildOptions& m_opt;
};

}  // namespace

std::string_view gpu_vendor_name(GpuVendor vendor) {
  for (const auto& row : k_vendors) {
    if (row.vendor == vendor) {
      return row.name;
    }
  }
  return "unknown";
}

Result<std::vector<GpuVendor>> parse_vendor_set(std::string_view text) {
  if (trim(text).empty()) {
    return fail("empty vendor set (want a comma list of nvidia, amd and intel)");
  }
  std::set<GpuVendor> set;
  for (const auto piece : split(text, ',')) {
    const auto* row = std::ranges::find(k_vendors, piece, &VendorRow::name);
    if (row == std::end(k_vendors)) {
      return fail("unknown GPU vendor " + quote(piece) + " (want nvidia, amd or intel)");
    }
    if (!set.insert(row->vendor).second) {
      return fail(quote(piece) + " is listed twice");
    }
  }
  std::vector<GpuVendor> out;
  for (const auto& row : k_vendors) {
    if (set.contains(row.vendor)) {
      out.push_back(row.vendor);
    }
  }
  return out;
}

Result<Spec> build_drm_spec(const discover::DrmInventory& inventory, discover::DrmVendor vendor,
                            const BuildOptions& options, std::vector<std::string>& warnings) {
  return DrmBuilder(inventory, vendor, options).build(warnings);
}

std::string spec_file_name(std::string_view kind, Format format) {
  std::string name(kind);
  std::ranges::replace(name, '/', '-');
  return name + (format == Format::json ? ".json" : ".yaml");
}

Result<VendorSpecs> build_vendor_specs(const std::vector<GpuVendor>& vendors,
                                       const discover::DiscoverOptions& discover,
                                       const BuildOptions& nvidia) {
  VendorSpecs out;
  std::vector<DrmVendor> drm_vendors;
  for (const auto vendor : vendors) {
    if (vendor != GpuVendor::nvidia) {
      drm_vendors.push_back(vendor == GpuVendor::amd ? DrmVendor::amd : DrmVendor::intel);
    }
  }
  if (!drm_vendors.empty() && !nvidia.device_ids.empty()) {
    return fail(
        "--device-ids selects NVIDIA devices only; it cannot be combined with amd or intel in "
        "--vendor-set");
  }
  discover::NodeVendors wanted{.nvidia = std::ranges::find(vendors, GpuVendor::nvidia) != vendors.end(),
                               .drm = drm_vendors};
  GPUCTK_TRY_ASSIGN(const auto node, discover::discover_node(discover, wanted));
  out.warnings = node.warnings;
  if (wanted.nvidia) {
    const std::string kind = nvidia.vendor + "/" + nvidia.klass;
    if (!node.no_nvidia_driver.empty()) {
      out.absent.push_back(node.no_nvidia_driver + ": no " + kind + " spec");
    } else if (node.nvidia.gpus.empty()) {
      out.absent.push_back("no NVIDIA GPU in " + node.nvidia.gpus_from + ": no " + kind + " spec");
    } else {
      GPUCTK_TRY_ASSIGN(auto spec, generate_spec(node.nvidia, nvidia));
      out.specs.push_back({GpuVendor::nvidia, std::move(spec)});
    }
  }
  const auto& inventory = node.drm;
  for (const auto vendor : drm_vendors) {
    const bool present = std::ranges::any_of(
        inventory.gpus, [&](const discover::DrmGpu& gpu) { return gpu.vendor == vendor; });
    if (!present) {
      out.absent.push_back("no " + std::string(vendor_label(vendor)) + " GPU in " + inventory.searched +
                           ": no " + std::string(vendor == DrmVendor::amd ? k_amd_kind : k_intel_kind) +
                           " spec");
      continue;
    }
    GPUCTK_TRY_ASSIGN(auto spec, build_drm_spec(inventory, vendor, nvidia, out.warnings));
    GPUCTK_TRY(check_generated(spec));
    out.specs.push_back({vendor == DrmVendor::amd ? GpuVendor::amd : GpuVendor::intel, std::move(spec)});
  }
  return out;
}

}  // namespace gpuctk::cdi
