#pragma once
// gpuctk-device-plugin: the kubelet's device plugin (API v1beta1) over the decision core of this module.
// Built only with -DGPUCTK_DEVICE_PLUGIN=ON; it is the only code that links gRPC (gpuctk never does).
//
// Life of the daemon, as NVIDIA's device plugin lives:
//   1. flags, variables and the config file are resolved; an invalid value is one line naming its key and
//      exit status 1, before any socket exists or anything registers;
//      With per-node configs (--config-file-srcdir, node_config.hpp) the node's label is read from the
//      Kubernetes API server first (node_label.hpp) and the config it picks is written to --config-file,
//      which is then read as always; an unreachable API server, a missing node or a label naming no config
//      is one line and exit status 1;
//   2. a device set is built (node.hpp): discovery, the resources and (with NVML) the topology, then the
//      Xid health watch. In auto discovery an NVML that is there but does not start on a host whose
//      driver is loaded is a failure, not a silent /proc fallback (lifecycle.hpp, check_nvml_start). A
//      failure exits 1 with one line; with failOnInitError false it is logged once and the daemon serves
//      nothing, building again every --retry-interval (30 s) and at each kubelet restart. No device found:
//      it serves nothing until a reload or a kubelet restart (NVIDIA's "waiting indefinitely");
//   3. per resource a gRPC server on <dir>/nvidia-<name>.sock (dir: the kubelet socket's directory,
//      --kubelet-socket, server.hpp) registered with the kubelet (Register: v1beta1, the socket's name, the
//      resource, GetPreferredAllocation available). While kubelet.sock is missing nothing registers (its
//      creation is awaited); a failed Register is tried again after 1 s, doubling up to 30 s; an MPS-shared
//      resource registers only once mps_ready() says its MPS daemon is ready, looked at every second (the
//      wait and its end are logged once);
//   4. then one poll(2) loop, no sleeps, on a signalfd, an inotify watch of kubelet.sock's directory, one
//      of the config file's directory and a timerfd (the backoff, the MPS wait, the retry), and with
//      per-node configs the label watch's eventfd and an inotify watch of their folder:
//      - kubelet.sock created (a kubelet restart, which removes the plugins' sockets): the device set is
//        built again from a fresh discovery (a MIG change is seen; health marks start over) and the
//        servers restart and register; a failure is a start's failure (2.);
//      - SIGHUP, or the config file's bytes changed (rewritten, renamed over, a ConfigMap's "..data" link
//        swapped): the file is read again, the device set rebuilt, and only when all of it succeeded do the
//        old servers stop and the new ones start and register, the changed resources logged. An invalid
//        file or a failed discovery is one error line ("reload: <why>: keeping the configuration in
//        force") and changes nothing: the old servers keep serving;
//      - the node label changed, or the folder of per-node configs did (a ConfigMap updated): the config is
//        chosen again and written to --config-file when its bytes differ, which reloads as above; a choice
//        that fails (the label names no config) is one error line and changes nothing;
//      A rebuild stops the health watch first and closes its NVML session (NVML is read anew only by a
//      first nvmlInit), and starts it again when the rebuild fails;
//   5. SIGTERM, SIGINT or SIGQUIT: the servers stop, their sockets are removed, the health watch ends,
//      exit 0.
// A ListAndWatch stream ends when its server stops, when the kubelet goes, or within 250 ms of the
// kubelet cancelling it (server.hpp).
// Log lines go to stderr, "gpuctk-device-plugin: <line>", escaped; errors "gpuctk-device-plugin: error:
// <what>: <why>".

#include <span>
#include <string_view>

namespace gpuctk::plugin {

// Runs the daemon for the arguments after argv[0] and returns the exit status: 0 after SIGTERM, --help or
// --version; 1 on an invalid configuration or a failed start; 2 on a command-line error.
int run_daemon(std::span<const std::string_view> args);

}  // namespace gpuctk::plugin
