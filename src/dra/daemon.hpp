#pragma once
// gpuctk-dra-plugin: a Dynamic Resource Allocation kubelet plugin (resource.k8s.io/v1, Kubernetes 1.34)
// for NVIDIA GPUs under NVIDIA's driver name gpu.nvidia.com, on gpuctk's inventory and spec builder. Built
// only with -DGPUCTK_DEVICE_PLUGIN=ON (it links gRPC); gpuctk never does.
//
// Life of the daemon:
//   1. flags (NVIDIA's gpu-kubelet-plugin names and variables where it has them) are read; an invalid one
//      is one line and exit status 2;
//   2. discovery, the node's CDI spec (cdi::generate_spec, the hooks running --gpuctk-path) and the
//      published devices (devices.hpp); the checkpoint of prepared claims is read (a corrupt one stops
//      the start: prepared claims are never dropped silently); the API client's credentials are read;
//      each failure is one line and exit status 1;
//   3. the DRA service listens on <plugins>/gpu.nvidia.com/dra.sock (v1 and v1beta1), then the
//      registration service on <registry>/gpu.nvidia.com-reg.sock, where the kubelet's plugin watcher
//      finds it; the ResourceSlices are published (publisher.hpp) and kept so; with NVML, Xid events
//      taint the devices (taints.hpp) and the slices are published again;
//   4. SIGHUP: discovery again (a MIG change, a GPU reset by the operator): the devices, the node spec
//      and the taints start anew (a failure is one error line and changes nothing);
//   5. SIGTERM or SIGINT: the servers stop and their sockets go; the slices and the claim specs stay
//      (prepared containers keep running; the kubelet removes a gone driver's slices). Exit 0.
// Log lines go to stderr, "gpuctk-dra-plugin: <line>", escaped.

#include <span>
#include <string_view>

namespace gpuctk::dra {

int run_dra_plugin(std::span<const std::string_view> args);

}  // namespace gpuctk::dra
