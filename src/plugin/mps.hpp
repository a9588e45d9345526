#pragma once
// The MPS root's layout, shared by gpuctk-mps-control-daemon (which makes it and starts the MPS control
// daemons) and gpuctk-device-plugin (which advertises an MPS-shared resource only once its daemon is
// ready, and mounts its folders into the containers). NVIDIA's layout (cmd/mps-control-daemon/mps/root.go):
//   <root>/<resource>/pipe    CUDA_MPS_PIPE_DIRECTORY of the resource's control daemon
//   <root>/<resource>/log     CUDA_MPS_LOG_DIRECTORY
//   <root>/<resource>/.ready  written by gpuctk-mps-control-daemon once the daemon answers and its limits
//                             are set; removed when it stops (NVIDIA writes .started and checks health by
//                             asking the daemon)
//   <root>/shm                a tmpfs shared by every resource, mounted on the containers' /dev/shm
// <resource> is the full resource name ("nvidia.com/gpu"), so the folders are two levels deep.

#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::plugin {

std::string mps_resource_dir(std::string_view root, std::string_view resource);
std::string mps_pipe_dir(std::string_view root, std::string_view resource);
std::string mps_log_dir(std::string_view root, std::string_view resource);
std::string mps_ready_file(std::string_view root, std::string_view resource);
std::string mps_shm_dir(std::string_view root);

// Whether the resource's MPS daemon is ready: its .ready file is a regular file (never a link) and its
// pipe folder holds the control socket. The error says what is missing, for the log.
Result<void> mps_ready(std::string_view root, std::string_view resource);

}  // namespace gpuctk::plugin
