#pragma once
// `gpuctk system create-device-nodes`: the NVIDIA device nodes a node's /dev lacks, made as the driver
// makes them (nvidia-modprobe), for hosts where nothing else does: a driver container that loads the
// modules but has no udev rule or nvidia-modprobe on the host (/dev/nvidia-uvm is the usual one missing,
// since nvidia-uvm is loaded late), minimal hosts, a /dev of a pod.
//
//   /dev/nvidiactl          the driver's major ("nvidia", else "nvidia-frontend" in /proc/devices), 255
//   /dev/nvidia-modeset     the same major, 254
//   /dev/nvidia-uvm         "nvidia-uvm"'s major (dynamic: given out when the module loads), 0
//   /dev/nvidia-uvm-tools   the same, 1
//   /dev/nvidia<N>          the driver's major, N: each GPU's "Device Minor:" in
//                           /proc/driver/nvidia/gpus/<bus>/information
//
// Everything is read and made below one dev root, as every gpuctk command reads a host (/proc/devices,
// /proc/driver/nvidia/gpus and /dev below --dev-root). Nodes are character devices of mode 0666, the
// driver's default (NVreg_DeviceFileMode), owned by root. Idempotent: a node that is already the right
// character device stays as it is (its mode and owner included: an administrator may have restricted
// them); one with other numbers (a dynamic major that changed when the module was reloaded) is replaced,
// atomically (made under a temporary name, then renamed over it); anything else at that path (a file, a
// directory, a block device) is an error naming it, never removed.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "discover/proc_devices.hpp"
#include "util/error.hpp"

namespace gpuctk::install {

// Which nodes to make (nvidia-ctk's --control-devices is `control`).
enum class NodeSet : uint8_t { all, control, gpus };

struct NodeToMake {
  std::string name;  // below /dev: "nvidiactl", "nvidia0"
  uint32_t major = 0;
  uint32_t minor = 0;
  bool operator==(const NodeToMake&) const = default;
};

struct NodePlan {
  std::vector<NodeToMake> nodes;   // control nodes first (nvidiactl, nvidia-modeset, nvidia-uvm,
                                   // nvidia-uvm-tools), then GPUs by minor
  std::vector<std::string> notes;  // what is left out, and why ("nvidia-uvm is not loaded ...")
};

// Pure: the nodes of `set` from the character majors of /proc/devices and the GPUs' minors. Errors: the
// NVIDIA driver is not loaded (neither "nvidia" nor "nvidia-frontend" in /proc/devices): "/proc/devices:
// no nvidia or nvidia-frontend entry: the NVIDIA driver is not loaded". A missing "nvidia-uvm" is a note.
Result<NodePlan> plan_device_nodes(const discover::CharDevices& devices,
                                   const std::vector<uint32_t>& gpu_minors, NodeSet set);

// What happened to one node.
enum class NodeChange : uint8_t { made, replaced, unchanged };

struct NodeResult {
  std::string path;  // <dev root>/dev/<name>
  NodeToMake node;
  NodeChange change = NodeChange::unchanged;
  uint32_t old_major = 0;  // replaced: the numbers it had
  uint32_t old_minor = 0;
};

struct CreateResult {
  std::vector<NodeResult> nodes;
  std::vector<std::string> notes;
};

// Reads <dev_root>/proc/devices and, for `set` all or gpus, <dev_root>/proc/driver/nvidia/gpus/*/information
// (bounded, as discovery reads them), plans, and makes the nodes in <dev_root>/dev (which must exist).
// dry_run: the same answer, nothing made. Errors name the file or the node: "mknod /host/dev/nvidia-uvm:
// Operation not permitted", "/host/dev/nvidiactl: exists and is not a character device".
Result<CreateResult> create_device_nodes(const std::string& dev_root, NodeSet set, bool dry_run);

// One line per node: "made /dev/nvidiactl (195:255, mode 0666)", "unchanged /dev/nvidia0 (195:0)",
// "replaced /dev/nvidia-uvm (510:0, was 508:0)"; dry_run: "would make …", "would replace …".
std::string describe(const NodeResult& result, bool dry_run);

}  // namespace gpuctk::install
