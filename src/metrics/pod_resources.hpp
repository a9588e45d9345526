#pragma once
// gpuctk-exporter's client of the kubelet's pod-resources API v1: one List call, gRPC's protocol over
// HTTP/2 on the kubelet's unix socket (grpc_unary.hpp: nghttp2, no gRPC runtime), its answer's wire format
// walked with protobuf-lite into plain structs for metrics::attribute (attribution.hpp). Built only with
// -DGPUCTK_EXPORTER=ON, into the library gpuctk_pod_resources: the one part of the exporter that links
// nghttp2 and protobuf, so gpuctk_core never does.
//
// The answer comes from the kubelet and its names from pods: it is bounded on the wire (at most
// k_max_pod_resources_message bytes, refused from its length prefix before any of it is kept) and in what
// is copied (at most k_max_pods pods holding devices, k_max_containers containers holding devices in any
// one pod), the bounds checked pod by pod while the answer is read. Names and device IDs are copied as they
// are, however odd: escaping is the renderer's job, bounding attribute's.

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "metrics/attribution.hpp"
#include "util/error.hpp"

namespace gpuctk::metrics {

// The largest List answer received (gRPC's max receive message size): about 100 000 pods with a device each.
inline constexpr std::size_t k_max_pod_resources_message = std::size_t{16} << 20;

// Where the kubelet serves the API (dcgm-exporter's default for --pod-resources-kubelet-socket).
inline constexpr const char* k_pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";

// Calls List on `socket_path` with a deadline `timeout` from now, on a connection made for this call (a
// kubelet that restarted needs nothing from the caller). Returns one entry per container and resource
// that lists device IDs, in the answer's order (pods, their containers, their devices), device IDs as
// listed; pods and containers without devices, and dynamic resources (DRA), are left out.
// Errors, untrusted text escaped (escape_for_log):
//   "pod-resources: <path>: no such socket"             nothing at `socket_path`
//   "pod-resources: <path>: not a socket"               something else there
//   "pod-resources: <path>: <strerror>"                 it cannot be looked up (e.g. Permission denied)
//   "pod-resources: List: <code name>: <message>"       the call failed: DEADLINE_EXCEEDED (the kubelet
//                                                       did not answer in time), UNAVAILABLE (nothing
//                                                       listening), RESOURCE_EXHAUSTED (an answer over
//                                                       16 MiB), UNIMPLEMENTED (a kubelet without v1),
//                                                       INTERNAL (an answer that is not gRPC's or not
//                                                       a ListPodResourcesResponse), … (grpc_unary.hpp)
//   "pod-resources: List: more than 4096 pods hold devices: the answer is refused"
//   "pod-resources: List: pod <namespace>/<name>: more than 64 containers hold devices: the answer is
//    refused"
// The last two stop copying where the bound is passed: no kubelet lists that many, so the answer is
// taken for a broken one rather than cut at an arbitrary pod.
Result<std::vector<ContainerDevices>> list_pod_resources(const std::string& socket_path,
                                                         std::chrono::milliseconds timeout);

}  // namespace gpuctk::metrics
