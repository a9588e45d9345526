#pragma once
// One collection and its Prometheus text exposition (format 0.0.4), as dcgm-exporter writes it: per
// counter a `# HELP` and a `# TYPE` line, then one line per device,
//
//   DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-…",pci_bus_id="00000000:07:00.0",device="nvidia0",
//     modelName="NVIDIA A100-SXM4-40GB",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.54.15",
//     container="main",namespace="ml",pod="train-0"} 34
//
// Labels in dcgm-exporter's order: gpu, UUID, pci_bus_id, device, modelName, then GPU_I_PROFILE and
// GPU_I_ID for a MIG device, Hostname (unless no hostname is wanted), each `label` counter
// (DCGM_FI_DRIVER_VERSION, sorted by name), then container, namespace, pod when a pod holds the device
// (dcgm-exporter ranges over its attribute map, sorted by key; DCGM_FI_DEV_XID_ERRORS also carries
// err_code, the Xid, between container and namespace, as dcgm-exporter's does; its err_msg, a text per
// Xid, is not written). A device several containers hold (time-slicing replicas, MPS) has one line per
// holder, each with the same value: sum by UUID, not by pod, when adding GPUs up. A counter no device has
// a value for is left out whole (no HELP without a sample, which promtool would flag). Each device's line
// carries what its sample holds: a MIG device's sample holds what NVML gives per MIG device (its
// memory), so GPU-wide readings stay on the GPU's line. GPU_I_PROFILE and GPU_I_ID are written whenever
// gpu_instance_id is set (an unknown profile as ""), so a MIG device's series never equals its GPU's.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "discover/nvml.hpp"
#include "metrics/counters.hpp"

namespace gpuctk::metrics {

// A container holding a device, from the kubelet's pod-resources API.
struct Holder {
  std::string pod;
  std::string namespace_name;
  std::string container;
  bool operator==(const Holder&) const = default;
  auto operator<=>(const Holder&) const = default;
};

// One GPU or MIG device in a collection.
struct DeviceReading {
  uint32_t gpu = 0;        // NVML index of the GPU (a MIG device's parent)
  std::string uuid;        // the GPU's UUID, also for a MIG device (dcgm-exporter labels MIG metrics so)
  std::string pci_bus_id;  // NVML's form, "00000000:07:00.0"
  std::string device;      // "nvidia0"
  std::string model_name;  // NVML's name of the GPU
  std::optional<uint32_t> gpu_instance_id;  // MIG devices only (GPU_I_ID)
  std::string gpu_instance_profile;         // MIG devices only (GPU_I_PROFILE), "1g.10gb"
  std::string mig_uuid;                     // MIG devices only: "MIG-…" (pod attribution's key)
  discover::NvmlSample sample;
  std::optional<uint64_t> last_xid;  // DCGM_FI_DEV_XID_ERRORS: none seen since the exporter started: nullopt
  std::vector<Holder> holders;       // sorted, unique; empty when no pod holds it (or not on Kubernetes)
};

struct Collection {
  std::string hostname;                // "" when labels carry none (dcgm-exporter's --no-hostname)
  std::string driver_version;          // DCGM_FI_DRIVER_VERSION's value
  std::vector<DeviceReading> devices;  // GPUs in index order, each followed by its MIG devices
};

// Appends the exposition of `collection` for `counters` to `out` (cleared first; its capacity is
// reused). Label values are escaped as the format wants (\\, \", \n; bytes that are not UTF-8 become
// U+FFFD), HELP texts too (\\, \n); a value that is not finite is left out. Integer fields print without
// a fraction, the others as the shortest text that reads back as the same double.
void render(const std::vector<Counter>& counters, const Collection& collection, std::string& out);

}  // namespace gpuctk::metrics
