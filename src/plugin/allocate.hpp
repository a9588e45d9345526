#pragma once
// The Allocate answer for one container: what the kubelet passes on to the runtime, exactly as NVIDIA's
// device plugin answers (internal/plugin/server.go, getAllocateResponse), for the consumer on the other
// side, gpuctk's hook (inject/request.hpp):
//
//   cdi-annotations   annotation <prefix>nvidia-device-plugin_<response id> = the CDI names, comma-joined
//   cdi-cri           the CRI's CDI devices, one per CDI name
//   (CDI names are <cdi kind>=<id> per device, in request order, duplicates of replicas dropped, then
//   <vendor of the cdi kind>/imex-channel=<channel> per IMEX channel: the name NVIDIA's plugin gives
//   (nvidia.com/imex-channel=0 by default), which `gpuctk cdi generate --mode imex --class imex-channel`
//   writes)
//   MPS               CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe, mounts of <mps root>/<resource>/pipe
//                     there and of <mps root>/shm on /dev/shm (plugin/mps.hpp's layout); the thread and
//                     pinned-memory limits are the server defaults gpuctk-mps-control-daemon sets
//                     (mps_control.hpp), not client variables, as NVIDIA's answer has them
//   gdrcopy/gds/mofed NVIDIA_GDRCOPY / NVIDIA_GDS / NVIDIA_MOFED = enabled
//   and only when a non-CDI strategy is on:
//   envvar            NVIDIA_VISIBLE_DEVICES=<ids>, comma-joined; NVIDIA_IMEX_CHANNELS=<channels>,
//                     comma-joined, when there are IMEX channels
//   volume-mounts     NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices and a mount of /dev/null on
//                     /var/run/nvidia-container-devices/<id> per id, then on
//                     /var/run/nvidia-container-devices/imex/<channel> per IMEX channel
//   passDeviceSpecs   device specs (rw): the control nodes discovery found (nvidiactl, nvidia-uvm,
//                     nvidia-uvm-tools, nvidia-modeset), then each device's nodes, then each IMEX channel's
//                     /dev/nvidia-caps-imex-channels/channel<channel>, host paths below the dev root
// The IMEX channels are Config::imex_channel_ids, in every answer (NVIDIA's plugin: every container with
// devices), as check_imex_channels (config.hpp) left them at the start.
// <ids> are UUIDs or indexes (deviceIDStrategy), replica suffixes dropped and duplicates removed, in
// request order. A request naming a device the resource does not have, or (failRequestsGreaterThanOne)
// more than one replica, is refused.

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "discover/inventory.hpp"
#include "plugin/config.hpp"
#include "plugin/resources.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

struct Mount {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

struct DeviceSpec {
  std::string container_path;
  std::string host_path;
  std::string permissions;  // "rw"
  bool operator==(const DeviceSpec&) const = default;
};

// One ContainerAllocateResponse of the kubelet's API, as plain data.
struct ContainerAnswer {
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
  std::vector<DeviceSpec> devices;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;
  bool operator==(const ContainerAnswer&) const = default;
};

// The answer as text, one line per item in a fixed order ("env K=V", "mount HOST -> CONTAINER [ro]",
// "device HOST -> CONTAINER PERMS", "annotation K=V", "cdi NAME"): for logs and exact test assertions.
std::string describe(const ContainerAnswer& answer);

// Answers Allocate for one resource. Holds what every answer needs, computed once.
class Allocator {
 public:
  // `control_nodes`: the inventory's (their container paths are what passDeviceSpecs offers).
  Allocator(const Resource& resource, const Config& config,
            const std::vector<discover::DeviceNode>& control_nodes);

  // The answer for the devices `ids` (as the kubelet sends them). `response_id` names the CDI annotation
  // (NVIDIA's plugin takes a random UUID per answer; the caller does). Errors:
  //   invalid allocation request for "nvidia.com/gpu": unknown device: "GPU-…"
  //   invalid allocation request for "nvidia.com/gpu": maximum request size for shared resources is 1; found
  //   2 invalid allocation request for "nvidia.com/gpu": no devices
  [[nodiscard]] Result<ContainerAnswer> answer(std::span<const std::string> ids,
                                               std::string_view response_id) const;

  [[nodiscard]] const Resource& resource() const { return m_resource; }

 private:
  [[nodiscard]] Result<std::vector<const Device*>> validate(std::span<const std::string> ids) const;
  void mps(ContainerAnswer& out) const;
  void cdi(const std::vector<std::string>& names, std::string_view response_id, ContainerAnswer& out) const;
  void device_specs(const std::vector<const Device*>& devices, ContainerAnswer& out) const;

  const Resource& m_resource;
  const Config& m_config;
  std::unordered_map<std::string, const Device*> m_by_id;
  std::vector<std::string> m_control_paths;  // of nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset
};

}  // namespace gpuctk::plugin
