#include "plugin/allocate.hpp"

#include <algorithm>

#include "cdi/names.hpp"
#include "discover/host_fs.hpp"
#include "discover/imex_channels.hpp"
#include "plugin/mps.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

// The names and paths of the hand-off, as NVIDIA's plugin and gpuctk's hook (inject/request.hpp) spell them.
constexpr std::string_view k_visible_devices = "NVIDIA_VISIBLE_DEVICES";
constexpr std::string_view k_volume_root = "/var/run/nvidia-container-devices";  // volume-mounts' markers
constexpr std::string_view k_volume_source = "/dev/null";
constexpr std::string_view k_annotation_plugin = "nvidia-device-plugin";  // <prefix><plugin>_<response id>
constexpr std::string_view k_mps_container_root = "/mps";                 // the MPS root in a container
constexpr std::string_view k_imex_channels = "NVIDIA_IMEX_CHANNELS";      // NVIDIA's ImexChannelEnvVar
constexpr std::string_view k_imex_cdi_class = "imex-channel";  // the CDI class of NVIDIA's plugin's channels

// The control nodes passDeviceSpecs offers, in NVIDIA's order, when discovery found them (NVIDIA's
// plugin offers each that exists in its own container).
constexpr std::string_view k_control_nodes[] = {
    "/dev/nvidiactl",         // the driver's control node
    "/dev/nvidia-uvm",        // unified memory
    "/dev/nvidia-uvm-tools",  // unified memory tools
    "/dev/nvidia-modeset",    // mode setting
};

std::string fail_prefix(const Resource& resource) {
  return "invalid allocation request for " + quote(resource.name) + ": ";
}

// Each device's ID as the answer names it, replicas and duplicates folded, in request order.
std::vector<std::string> answer_ids(const std::vector<const Device*>& devices, IdStrategy strategy) {
  std::vector<std::string> out;
  for (const Device* d : devices) {
    std::string id = strategy == IdStrategy::uuid ? d->uuid : d->index;
    if (std::ranges::find(out, id) == out.end()) {
      out.push_back(std::move(id));
    }
  }
  return out;
}

// The IMEX channels' numbers as text, in config order.
std::vector<std::string> imex_ids(const Config& config) {
  std::vector<std::string> out;
  for (const uint32_t id : config.imex_channel_ids) {
    out.push_back(std::to_string(id));
  }
  return out;
}

}  // namespace

std::string describe(const ContainerAnswer& answer) {
  std::string out;
  for (const auto& [key, value] : answer.envs) {
    out += "env " + key + "=" + value + "\n";
  }
  for (const auto& m : answer.mounts) {
    out += "mount " + m.host_path + " -> " + m.container_path + (m.read_only ? " ro" : "") + "\n";
  }
  for (const auto& d : answer.devices) {
    out += "device " + d.host_path + " -> " + d.container_path + " " + d.permissions + "\n";
  }
  for (const auto& [key, value] : answer.annotations) {
    out += "annotation " + key + "=" + value + "\n";
  }
  for (const auto& name : answer.cdi_devices) {
    out += "cdi " + name + "\n";
  }
  return out;
}

Allocator::Allocator(const Resource& resource, const Config& config,
                     const std::vector<discover::DeviceNode>& control_nodes)
    : m_resource(resource), m_config(config) {
  for (const auto& device : m_resource.devices) {
    m_by_id.emplace(device.id, &device);
  }
  for (const auto path : k_control_nodes) {
    if (std::ranges::find(control_nodes, path, &discover::DeviceNode::path) != control_nodes.end()) {
      m_control_paths.emplace_back(path);
    }
  }
}

Result<std::vector<const Device*>> Allocator::validate(std::span<const std::string> ids) const {
  if (ids.empty()) {
    return fail(fail_prefix(m_resource) + "no devices");
  }
  std::vector<const Device*> devices;
  bool replicas = false;
  for (const auto& id : ids) {
    const auto it = m_by_id.find(id);
    if (it == m_by_id.end()) {
      return fail(fail_prefix(m_resource) + "unknown device: " + quote(id));
    }
    replicas = replicas || it->second->replicas > 0;
    devices.push_back(it->second);
  }
  if (replicas && ids.size() > 1 && m_config.fail_requests_greater_than_one) {
    return fail(fail_prefix(m_resource) + "maximum request size for shared resources is 1; found " +
                std::to_string(ids.size()));
  }
  return devices;
}

void Allocator::mps(ContainerAnswer& out) const {
  // NVIDIA's answer (updateResponseForMPS): the pipe folder and the shm tmpfs of the resource's daemon;
  // the limits are the daemon's (gpuctk-mps-control-daemon sets them as server defaults), never client
  // variables a workload could override.
  const std::string pipe = mps_pipe_dir(k_mps_container_root, m_resource.name);
  out.envs["CUDA_MPS_PIPE_DIRECTORY"] = pipe;
  out.mounts.push_back({pipe, mps_pipe_dir(m_config.mps_root, m_resource.name), false});
  out.mounts.push_back({"/dev/shm", mps_shm_dir(m_config.mps_root), false});
}

void Allocator::cdi(const std::vector<std::string>& names, std::string_view response_id,
                    ContainerAnswer& out) const {
  std::vector<std::string> qualified;
  for (const auto& id : names) {
    qualified.push_back(m_config.cdi_kind + "=" + id);
  }
  const std::string imex_kind =
      std::string(cdi::split_kind(m_config.cdi_kind).first) + "/" + std::string(k_imex_cdi_class);
  for (const auto& channel : imex_ids(m_config)) {
    qualified.push_back(imex_kind + "=" + channel);
  }
  if (m_config.list.cdi_annotations) {
    out.annotations[m_config.cdi_annotation_prefix + std::string(k_annotation_plugin) + "_" +
                    std::string(response_id)] = join(qualified, ",");
  }
  if (m_config.list.cdi_cri) {
    out.cdi_devices = std::move(qualified);
  }
}

Result<ContainerAnswer> Allocator::answer(std::span<const std::string> ids,
                                          std::string_view response_id) const {
  GPUCTK_TRY_ASSIGN(const auto devices, validate(ids));
  const std::vector<std::string> names = answer_ids(devices, m_config.id);
  ContainerAnswer out;
  if (m_config.list.any_cdi()) {
    cdi(names, response_id, out);
  }
  if (m_config.sharing == labels::SharingStrategy::mps) {
    mps(out);
  }
  // One row per extra capability flag: its variable.
  const std::pair<bool, const char*> extras[] = {
      {m_config.gdrcopy, "NVIDIA_GDRCOPY"}, {m_config.gds, "NVIDIA_GDS"}, {m_config.mofed, "NVIDIA_MOFED"}};
  for (const auto& [enabled, variable] : extras) {
    if (enabled) {
      out.envs[variable] = "enabled";
    }
  }
  if (m_config.list.only_cdi()) {
    return out;
  }
  const std::vector<std::string> channels = imex_ids(m_config);
  if (m_config.list.envvar) {
    out.envs[std::string(k_visible_devices)] = join(names, ",");
    if (!channels.empty()) {
      out.envs[std::string(k_imex_channels)] = join(channels, ",");
    }
  }
  if (m_config.list.volume_mounts) {
    out.envs[std::string(k_visible_devices)] = std::string(k_volume_root);
    for (const auto& id : names) {
      out.mounts.push_back({std::string(k_volume_root) + "/" + id, std::string(k_volume_source), false});
    }
    for (const auto& channel : channels) {
      out.mounts.push_back(
          {std::string(k_volume_root) + "/imex/" + channel, std::string(k_volume_source), false});
    }
  }
  if (m_config.pass_device_specs) {
    device_specs(devices, out);
  }
  return out;
}

void Allocator::device_specs(const std::vector<const Device*>& devices, ContainerAnswer& out) const {
  std::vector<std::string> paths = m_control_paths;
  for (const Device* d : devices) {
    for (const auto& path : d->paths) {
      if (std::ranges::find(paths, path) == paths.end()) {
        paths.push_back(path);
      }
    }
  }
  for (const uint32_t channel : m_config.imex_channel_ids) {
    paths.push_back(discover::imex_channel_path(channel));
  }
  for (const auto& path : paths) {
    out.devices.push_back({path, discover::under_root(m_config.dev_root, path), "rw"});
  }
}

}  // namespace gpuctk::plugin
