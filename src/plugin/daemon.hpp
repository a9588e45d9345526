#pragma once
// gpuctk-device-plugin: the kubelet's device plugin (API v1beta1) over the decision core of this module.
// Built only with -DGPUCTK_DEVICE_PLUGIN=ON; it is the only code that links gRPC (gpuctk never does).
//
// Life of the daemon, as NVIDIA's device plugin lives:
//   1. flags, variables and the config file are resolved; an invalid value is one line naming its key and
//      exit status 1, before any socket exists or anything registers;
//   2. discovery, the resources and (with NVML) the topology and the Xid health watch; a failure exits 1,
//      or with failOnInitError false is logged and the daemon waits for SIGTERM serving nothing (NVIDIA's
//      "waiting indefinitely"), as it does when no device is found;
//   3. per resource a gRPC server on <dir>/nvidia-<name>.sock (dir: the kubelet socket's directory,
//      --kubelet-socket) registered with the kubelet (Register: v1beta1, the socket's name, the resource,
//      GetPreferredAllocation available);
//   4. it then sleeps in poll(2) on a signalfd and an inotify watch of the directory: when kubelet.sock is
//      created again (a kubelet restart, which removes the plugins' sockets) every server is restarted and
//      registers again; when the first registration fails (no kubelet yet) the same event retries it;
//   5. SIGTERM or SIGINT: the servers stop, their sockets are removed, the health watch ends, exit 0.
// Log lines go to stderr, "gpuctk-device-plugin: <line>", escaped; errors "gpuctk-device-plugin: error:
// <what>: <why>".

#include <span>
#include <string_view>

namespace gpuctk::plugin {

// Runs the daemon for the arguments after argv[0] and returns the exit status: 0 after SIGTERM, --help or
// --version; 1 on an invalid configuration or a failed start; 2 on a command-line error.
int run_daemon(std::span<const std::string_view> args);

}  // namespace gpuctk::plugin
