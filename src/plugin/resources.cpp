#include "plugin/resources.hpp"

#include <algorithm>
#include <charconv>

#include "discover/host_fs.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

constexpr std::string_view k_gpu_resource = "nvidia.com/gpu";

std::optional<int64_t> numa_of(const NumaNodes& numa, const std::string& bus_id) {
  const auto it = numa.find(bus_id);
  return it == numa.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

Device gpu_device(const discover::Gpu& gpu, const NumaNodes& numa) {
  Device d;
  d.id = gpu.uuid;
  d.uuid = gpu.uuid;
  d.index = std::to_string(gpu.index);
  d.gpu = gpu.index;
  d.gpu_uuid = gpu.uuid;
  d.paths = {gpu.node.path};
  d.numa_node = numa_of(numa, gpu.bus_id);
  d.memory_bytes = gpu.memory_bytes;
  return d;
}

Result<Device> mig_device(const discover::Gpu& gpu, const discover::MigDevice& mig, const NumaNodes& numa) {
  Device d;
  d.index = std::to_string(gpu.index) + ":" + std::to_string(mig.index);
  if (mig.uuid.empty()) {
    return fail("MIG device " + d.index + " has no UUID (MIG UUIDs come from NVML)");
  }
  d.id = mig.uuid;
  d.uuid = mig.uuid;
  d.gpu = gpu.index;
  d.gpu_uuid = gpu.uuid;
  d.gi = mig.gi;
  d.ci = mig.ci;
  // The parent's node, then the GPU instance's and the compute instance's access capability.
  d.paths = {gpu.node.path, mig.gi_access.path, mig.ci_access.path};
  d.numa_node = numa_of(numa, gpu.bus_id);  // a MIG device's NUMA node is its parent's
  d.memory_bytes = mig.memory_bytes;
  return d;
}

void add(std::map<std::string, Resource>& out, const std::string& name, Device device) {
  auto& resource = out[name];
  resource.name = name;
  resource.devices.push_back(std::move(device));
}

// MIG devices of the single strategy must all be of one type: the same profile and, when NVML reported
// them, the same attributes (NVIDIA compares nvmlDeviceAttributes_t whole).
bool same_type(const discover::MigDevice& a, const discover::MigDevice& b) {
  return a.profile == b.profile && a.attributes == b.attributes && a.memory_bytes == b.memory_bytes;
}

Result<void> single_strategy(const discover::Inventory& inv, const NumaNodes& numa,
                             std::map<std::string, Resource>& out) {
  const discover::Gpu* with_mig = nullptr;
  const discover::Gpu* without_mig = nullptr;
  const discover::MigDevice* first = nullptr;
  const discover::Gpu* first_gpu = nullptr;
  for (const auto& gpu : inv.gpus) {
    (gpu.mig_enabled ? with_mig : without_mig) = &gpu;
    if (!gpu.mig_enabled) {
      add(out, std::string(k_gpu_resource), gpu_device(gpu, numa));
      continue;
    }
    if (gpu.mig_devices.empty()) {
      return fail("migStrategy single: GPU " + std::to_string(gpu.index) +
                  " is in MIG mode without MIG devices");
    }
    for (const auto& mig : gpu.mig_devices) {
      if (first == nullptr) {
        first = &mig;
        first_gpu = &gpu;
      } else if (!same_type(*first, mig)) {
        return fail("migStrategy single: more than one MIG device type (" + first->profile + " on GPU " +
                    std::to_string(first_gpu->index) + ", " + mig.profile + " on GPU " +
                    std::to_string(gpu.index) + ")");
      }
      GPUCTK_TRY_ASSIGN(auto device, mig_device(gpu, mig, numa));
      add(out, std::string(k_gpu_resource), std::move(device));
    }
  }
  if (with_mig != nullptr && without_mig != nullptr) {
    return fail("migStrategy single: all GPUs must be in MIG mode or none (GPU " +
                std::to_string(without_mig->index) + " is not, GPU " + std::to_string(with_mig->index) +
                " is)");
  }
  return {};
}

// "[C c.]G g.M gb[+ext]": whether C (compute slices) is given and differs from G. The plugin makes
// resources only of profiles whose compute and GPU slices are equal.
bool fewer_compute_slices(std::string_view profile) {
  const auto c = profile.find("c.");
  const auto g = profile.find("g.");
  return c != std::string_view::npos && g != std::string_view::npos && c < g;
}

Result<void> mixed_strategy(const discover::Inventory& inv, const NumaNodes& numa,
                            std::map<std::string, Resource>& out, std::vector<std::string>& warnings) {
  for (const auto& gpu : inv.gpus) {
    if (!gpu.mig_enabled) {
      add(out, std::string(k_gpu_resource), gpu_device(gpu, numa));
      continue;
    }
    if (gpu.mig_devices.empty()) {
      warnings.push_back("migStrategy mixed: GPU " + std::to_string(gpu.index) +
                         " is in MIG mode without MIG devices: it offers nothing");
    }
    for (const auto& mig : gpu.mig_devices) {
      const std::string where =
          "(GPU " + std::to_string(gpu.index) + ", MIG " + std::to_string(mig.index) + ")";
      if (mig.profile.empty()) {
        return fail("migStrategy mixed: the profile of MIG device " + std::to_string(gpu.index) + ":" +
                    std::to_string(mig.index) + " is unknown (MIG profiles come from NVML)");
      }
      if (fewer_compute_slices(mig.profile)) {
        return fail("migStrategy mixed: MIG profile " + mig.profile + " " + where +
                    " matches no resource (fewer compute than GPU slices)");
      }
      GPUCTK_TRY_ASSIGN(auto device, mig_device(gpu, mig, numa));
      add(out, "nvidia.com/" + mig_resource_name(mig.profile), std::move(device));
    }
  }
  return {};
}

// Replaces each replicated resource's devices with their replicas (and renames it).
void replicate(const Config& config, std::map<std::string, Resource>& resources) {
  for (const auto& replicated : config.replicated) {
    const auto it = resources.find(replicated.name);
    if (it == resources.end()) {
      continue;  // a resource this node does not have
    }
    Resource shared;
    shared.name = replicated.renamed ? replicated.name + ".shared" : replicated.name;
    for (const auto& device : it->second.devices) {
      for (uint32_t n = 0; n < replicated.replicas; ++n) {
        Device replica = device;
        replica.id = device.uuid + "::" + std::to_string(n);
        replica.replicas = replicated.replicas;
        shared.devices.push_back(std::move(replica));
      }
    }
    resources.erase(it);
    resources[shared.name] = std::move(shared);
  }
}

}  // namespace

std::string mig_resource_name(std::string_view profile) {
  std::string name = "mig-" + std::string(profile);
  std::ranges::replace(name, '+', '.');
  return name;
}

Result<std::vector<Resource>> build_resources(const discover::Inventory& inventory, const Config& config,
                                              const NumaNodes& numa, std::vector<std::string>& warnings) {
  std::map<std::string, Resource> resources;
  switch (config.mig_strategy) {
    case labels::MigStrategy::none:
      for (const auto& gpu : inventory.gpus) {
        add(resources, std::string(k_gpu_resource), gpu_device(gpu, numa));
      }
      break;
    case labels::MigStrategy::single:
      GPUCTK_TRY(single_strategy(inventory, numa, resources));
      break;
    case labels::MigStrategy::mixed:
      GPUCTK_TRY(mixed_strategy(inventory, numa, resources, warnings));
      break;
  }
  if (config.sharing == labels::SharingStrategy::mps) {
    for (const auto& [name, resource] : resources) {
      const auto mig = std::ranges::find_if(resource.devices, &Device::is_mig);
      if (mig != resource.devices.end()) {
        return fail("sharing.mps: not supported for MIG devices (" + name + " has MIG device " + mig->index +
                    ")");
      }
    }
  }
  replicate(config, resources);
  std::vector<Resource> out;
  for (auto& [name, resource] : resources) {
    out.push_back(std::move(resource));
  }
  return out;
}

NumaNodes read_numa_nodes(const std::string& dev_root, const discover::Inventory& inventory) {
  NumaNodes out;
  for (const auto& gpu : inventory.gpus) {
    const auto text =
        read_file(discover::under_root(dev_root, "/sys/bus/pci/devices/" + gpu.bus_id + "/numa_node"), 64);
    if (!text) {
      continue;
    }
    const std::string_view value = trim(*text);
    int64_t node = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), node);
    if (ec == std::errc() && end == value.data() + value.size() && node >= 0) {
      out[gpu.bus_id] = node;
    }
  }
  return out;
}

}  // namespace gpuctk::plugin
