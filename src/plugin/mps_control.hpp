#pragma once
// gpuctk-mps-control-daemon's decisions, as NVIDIA's mps-control-daemon makes them
// (cmd/mps-control-daemon/mps/daemon.go, manager.go, mount/mount-shm.go): which MPS control daemons run,
// with which environment and limits, and how big the shm tmpfs is. Plain functions; the process part
// (folders, the mount, NVML, the programs it runs) is mps_daemon.cpp's.
//
// One control daemon per MPS-shared resource (a resource whose devices are replicas), started as
//   CUDA_MPS_PIPE_DIRECTORY=<root>/<resource>/pipe CUDA_MPS_LOG_DIRECTORY=<root>/<resource>/log
//   CUDA_VISIBLE_DEVICES=<its GPUs' UUIDs, comma-joined> nvidia-cuda-mps-control -d
// (no other variable, as NVIDIA's; NVIDIA leaves CUDA_VISIBLE_DEVICES as a TODO, so every daemon would
// see every GPU), then given, through `nvidia-cuda-mps-control` with the command on its stdin:
//   set_default_device_pinned_mem_limit <GPU index> <GPU memory / replicas, in MiB>M   per GPU, by index;
//                                                                  left out for a GPU of unknown memory
//   set_default_active_thread_percentage <100 / replicas per GPU>
// and checked with get_default_active_thread_percentage, which must answer that percentage.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/config.hpp"
#include "plugin/resources.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

// The control program's name, found on PATH unless --mps-control-binary names it.
inline constexpr std::string_view k_mps_control_program = "nvidia-cuda-mps-control";
// How long `nvidia-cuda-mps-control -d` may take to return and its control socket to appear (the real
// one forks at once and listens within milliseconds).
inline constexpr std::chrono::seconds k_mps_start_timeout{10};
// How long one command through the control program may take (it answers at once; a stuck daemon must
// not hold the start or the stop for ever).
inline constexpr std::chrono::seconds k_mps_command_timeout{10};
// How long a control daemon may take to go after `quit` (its socket stops accepting).
inline constexpr std::chrono::seconds k_mps_quit_timeout{10};
// The most bytes of a command's answer kept (the answers are a number or a line).
inline constexpr size_t k_mps_max_answer = 4096;
// The most bytes of /proc/meminfo read.
inline constexpr size_t k_max_meminfo = 64 * 1024;
// What getDefaultShmSize falls back to when MemTotal cannot be read.
inline constexpr std::string_view k_mps_fallback_shm_size = "65536k";

// One MPS control daemon: a resource and what it is started and configured with.
struct MpsDaemonPlan {
  std::string resource;                  // "nvidia.com/gpu"
  std::string pipe_dir;                  // mps_pipe_dir(root, resource)
  std::string log_dir;                   // mps_log_dir(root, resource)
  std::vector<uint32_t> gpus;            // its GPUs' NVML indexes, ascending
  std::vector<std::string> uuids;        // their UUIDs, in the same order
  uint32_t thread_percentage = 100;      // 100 / replicas per GPU
  std::vector<std::string> environment;  // "NAME=value", the control daemon's whole environment
  std::vector<std::string> commands;     // the limits, in the order they are sent
};

// The daemons of the resources, in resource order; none when the sharing strategy is not MPS. A resource
// whose devices are not replicas is left out (NVIDIA: "Resource is not shared"). Errors:
//   "nvidia.com/gpu: MPS does not share MIG devices (MIG device 0:1)"   (resources.cpp refuses it first)
//   "nvidia.com/gpu: GPU 1 has 2 replicas, GPU 0 has 4 (MPS sets one thread percentage per daemon)"
Result<std::vector<MpsDaemonPlan>> plan_mps_daemons(const Config& config,
                                                    const std::vector<Resource>& resources);

// The shm tmpfs's size= option from /proc/meminfo's text, as getDefaultShmSize computes it: half of
// MemTotal with the first letter of its unit ("MemTotal: 32780132 kB" -> "16390066k"); "65536k" when
// there is no MemTotal line or its number does not parse.
std::string mps_shm_size(std::string_view meminfo);

// The mount data of the shm tmpfs: "size=<size>" (the flags are nosuid, nodev, noexec, relatime).
std::string mps_shm_mount_data(std::string_view size);

// Whether the answer to get_default_active_thread_percentage ("25.0\n") is `want`. Errors, the answer
// quoted and escaped: "get_default_active_thread_percentage answered \"x\", not 25".
Result<void> check_thread_percentage(std::string_view answer, uint32_t want);

// The components below the MPS root of a resource's folder ("nvidia.com/gpu" -> {"nvidia.com", "gpu"}).
// Errors: "resource \"..\": not a name for a folder below the MPS root" (an empty, "." or ".." part).
Result<std::vector<std::string>> mps_resource_components(std::string_view resource);

}  // namespace gpuctk::plugin
