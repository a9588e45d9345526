#include "metrics/pod_resources.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <malloc.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <string_view>
#include <utility>

#include "metrics/grpc_unary.hpp"
#include "util/strings.hpp"

namespace gpuctk::metrics {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// The API's one method used, and the request: ListPodResourcesRequest has no fields (empty on the wire).
constexpr std::string_view k_list_method = "/v1.PodResourcesLister/List";

// The fields read, by number, from the kubelet's podresources/v1/api.proto; every other field (cpu_ids,
// memory, topology, dynamic_resources, …) is skipped unread.
constexpr int k_response_pod_resources = 1;  // ListPodResourcesResponse.pod_resources
constexpr int k_pod_name = 1;                // PodResources.name
constexpr int k_pod_namespace = 2;           // PodResources.namespace
constexpr int k_pod_containers = 3;          // PodResources.containers
constexpr int k_container_name = 1;          // ContainerResources.name
constexpr int k_container_devices = 2;       // ContainerResources.devices
constexpr int k_devices_resource_name = 1;   // ContainerDevices.resource_name
constexpr int k_devices_device_ids = 2;      // ContainerDevices.device_ids

// The socket is looked up first so that a node without a kubelet (or with the path wrong) gets one plain
// line instead of gRPC's connection error.
Result<void> check_socket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    const std::string where = "pod-resources: " + escape_for_log(path);
    if (err == ENOENT) {
      return fail(where + ": no such socket");
    }
    return fail_errno(where, err);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return fail("pod-resources: " + escape_for_log(path) + ": not a socket");
  }
  return {};
}

// What is kept of one pod while its fields are read: only containers that hold devices, at most
// k_max_containers of them (`over` says there were more), and of those only the resources listing IDs.
struct DevicesRead {
  std::string resource_name;
  std::vector<std::string> device_ids;  // at most k_max_device_ids: attribute would cut the rest anyway
  std::size_t not_copied = 0;           // the IDs past them, skipped on the wire
};
struct ContainerRead {
  std::string name;
  std::vector<DevicesRead> devices;
};
struct PodRead {
  std::string name;
  std::string namespace_name;
  std::vector<ContainerRead> holding;
  bool over = false;
};

// The field `tag` names, when it is length-delimited (a string or a message); 0 otherwise, so that a
// known number with another wire type is skipped as protobuf's own parser does.
int delimited_field(std::uint32_t tag) {
  if (WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
    return 0;
  }
  return WireFormatLite::GetTagFieldNumber(tag);
}

bool read_string(CodedInputStream& in, std::string& out) {
  std::uint32_t size = 0;
  return in.ReadVarint32(&size) && size <= INT_MAX && in.ReadString(&out, static_cast<int>(size));
}

bool skip_string(CodedInputStream& in) {
  std::uint32_t size = 0;
  return in.ReadVarint32(&size) && size <= INT_MAX && in.Skip(static_cast<int>(size));
}

// Reads one length-delimited message with `read_field(tag)` for each of its fields, within its length:
// false if the wire format is broken (a length past the enclosing one, a truncated field).
template <typename ReadField>
bool read_message(CodedInputStream& in, ReadField&& read_field) {
  std::uint32_t size = 0;
  if (!in.ReadVarint32(&size) || size > static_cast<std::uint32_t>(in.BytesUntilLimit())) {
    return false;
  }
  const auto limit = in.PushLimit(static_cast<int>(size));
  bool ok = true;
  while (ok) {
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) {
      break;
    }
    ok = read_field(tag);
  }
  ok = ok && in.ConsumedEntireMessage();
  in.PopLimit(limit);
  return ok;
}

bool read_devices(CodedInputStream& in, DevicesRead& devices) {
  return read_message(in, [&](std::uint32_t tag) {
    switch (delimited_field(tag)) {
      case k_devices_resource_name:
        return read_string(in, devices.resource_name);
      case k_devices_device_ids:
        if (devices.device_ids.size() == k_max_device_ids) {
          ++devices.not_copied;
          return skip_string(in);
        }
        return read_string(in, devices.device_ids.emplace_back());
      default:
        return WireFormatLite::SkipField(&in, tag);
    }
  });
}

bool read_container(CodedInputStream& in, ContainerRead& container) {
  return read_message(in, [&](std::uint32_t tag) {
    switch (delimited_field(tag)) {
      case k_container_name:
        return read_string(in, container.name);
      case k_container_devices: {
        DevicesRead devices;
        if (!read_devices(in, devices)) {
          return false;
        }
        if (!devices.device_ids.empty()) {
          container.devices.push_back(std::move(devices));
        }
        return true;
      }
      default:
        return WireFormatLite::SkipField(&in, tag);
    }
  });
}

// A container holding devices is kept while the pod has room for it; past k_max_containers the pod is
// marked and read on (its name may come after its containers on the wire) without keeping more.
bool read_pod_container(CodedInputStream& in, PodRead& pod) {
  ContainerRead container;
  if (!read_container(in, container)) {
    return false;
  }
  if (container.devices.empty()) {
    return true;
  }
  if (pod.holding.size() == k_max_containers) {
    pod.over = true;
    return true;
  }
  pod.holding.push_back(std::move(container));
  return true;
}

bool read_pod(CodedInputStream& in, PodRead& pod) {
  return read_message(in, [&](std::uint32_t tag) {
    switch (delimited_field(tag)) {
      case k_pod_name:
        return read_string(in, pod.name);
      case k_pod_namespace:
        return read_string(in, pod.namespace_name);
      case k_pod_containers:
        return read_pod_container(in, pod);
      default:
        return WireFormatLite::SkipField(&in, tag);
    }
  });
}

// Appends one entry per container and resource of `pod` (all of them hold IDs).
void copy_pod(PodRead& pod, std::vector<ContainerDevices>& out) {
  for (auto& container : pod.holding) {
    for (auto& devices : container.devices) {
      out.push_back(ContainerDevices{
          .pod = pod.name,
          .namespace_name = pod.namespace_name,
          .container = container.name,
          .resource_name = std::move(devices.resource_name),
          .device_ids = std::move(devices.device_ids),
          .device_ids_not_copied = devices.not_copied,
      });
    }
  }
}

std::unexpected<Error> not_a_response() {
  return fail("pod-resources: List: INTERNAL: the answer is not a ListPodResourcesResponse");
}

// Walks ListPodResourcesResponse's wire format one pod at a time, checking the bounds as each pod is
// read: a huge answer is refused at the pod that passes them and never becomes a tree of its own.
Result<std::vector<ContainerDevices>> decode_answer(std::string_view message) {
  CodedInputStream in(reinterpret_cast<const std::uint8_t*>(message.data()),
                      static_cast<int>(message.size()));
  std::vector<ContainerDevices> out;
  std::size_t holding = 0;
  while (const std::uint32_t tag = in.ReadTag()) {
    if (delimited_field(tag) != k_response_pod_resources) {
      if (!WireFormatLite::SkipField(&in, tag)) {
        return not_a_response();
      }
      continue;
    }
    PodRead pod;
    if (!read_pod(in, pod)) {
      return not_a_response();
    }
    if (pod.holding.empty()) {
      continue;
    }
    if (++holding > k_max_pods) {
      return fail("pod-resources: List: more than " + std::to_string(k_max_pods) +
                  " pods hold devices: the answer is refused");
    }
    if (pod.over) {
      return fail("pod-resources: List: pod " + escape_for_log(pod.namespace_name) + "/" +
                  escape_for_log(pod.name) + ": more than " + std::to_string(k_max_containers) +
                  " containers hold devices: the answer is refused");
    }
    copy_pod(pod, out);
  }
  if (!in.ConsumedEntireMessage()) {
    return not_a_response();
  }
  return out;
}

// The call and the walk; the answer's bytes are gone when it returns.
Result<std::vector<ContainerDevices>> list_and_decode(const std::string& socket_path,
                                                      std::chrono::milliseconds timeout) {
  auto message = grpc_unary(GrpcUnaryCall{.socket_path = socket_path,
                                          .method = k_list_method,
                                          .request = {},
                                          .max_message = k_max_pod_resources_message,
                                          .timeout = timeout});
  if (!message) {
    return fail("pod-resources: List: " + message.error().message);
  }
  return decode_answer(*message);
}

}  // namespace

Result<std::vector<ContainerDevices>> list_pod_resources(const std::string& socket_path,
                                                         std::chrono::milliseconds timeout) {
  GPUCTK_TRY(check_socket(socket_path));
  auto listed = list_and_decode(socket_path, timeout);
  // The answer's bytes (up to 16 MiB in one allocation) and what was copied of a refused answer are freed
  // by now; once glibc has raised its mmap threshold past such a size they stay in the heap unless handed
  // back, and one broken answer would hold the exporter's resident set up.
  ::malloc_trim(0);
  return listed;
}

}  // namespace gpuctk::metrics
