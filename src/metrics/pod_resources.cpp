#include "metrics/pod_resources.hpp"

#include <grpcpp/grpcpp.h>
#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string_view>
#include <utility>

#include "podresources_api.grpc.pb.h"
#include "util/strings.hpp"

namespace gpuctk::metrics {
namespace {

// grpc::StatusCode's names, by value, as gRPC's documentation and other clients spell them.
constexpr std::array<std::string_view, 17> k_status_names = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

std::string status_name(grpc::StatusCode code) {
  const auto value = static_cast<std::size_t>(code);
  if (value < k_status_names.size()) {
    return std::string(k_status_names[value]);
  }
  return "code " + std::to_string(value);  // a code newer than this table
}

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

Result<v1::ListPodResourcesResponse> call_list(const std::string& socket_path,
                                               std::chrono::milliseconds timeout) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(static_cast<int>(k_max_pod_resources_message));
  const auto channel =
      grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), arguments);
  const auto stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListPodResourcesResponse answer;
  const grpc::Status status = stub->List(&context, v1::ListPodResourcesRequest{}, &answer);
  if (!status.ok()) {
    return fail("pod-resources: List: " + status_name(status.error_code()) + ": " +
                escape_for_log(status.error_message()));
  }
  return answer;
}

bool holds_devices(const v1::ContainerResources& container) {
  for (const auto& devices : container.devices()) {
    if (!devices.device_ids().empty()) {
      return true;
    }
  }
  return false;
}

// Appends one entry per resource of `container` that lists device IDs.
void copy_container(const v1::PodResources& pod, const v1::ContainerResources& container,
                    std::vector<ContainerDevices>& out) {
  for (const auto& devices : container.devices()) {
    if (devices.device_ids().empty()) {
      continue;
    }
    out.push_back(ContainerDevices{
        .pod = pod.name(),
        .namespace_name = pod.namespace_(),
        .container = container.name(),
        .resource_name = devices.resource_name(),
        .device_ids = {devices.device_ids().begin(), devices.device_ids().end()},
    });
  }
}

// Appends the entries of `pod`'s containers; at most k_max_containers of them may hold devices.
Result<void> copy_pod(const v1::PodResources& pod, std::vector<ContainerDevices>& out) {
  std::size_t holding = 0;
  for (const auto& container : pod.containers()) {
    if (!holds_devices(container)) {
      continue;
    }
    if (++holding > k_max_containers) {
      return fail("pod-resources: List: pod " + escape_for_log(pod.namespace_()) + "/" +
                  escape_for_log(pod.name()) + ": more than " + std::to_string(k_max_containers) +
                  " containers hold devices: the answer is refused");
    }
    copy_container(pod, container, out);
  }
  return {};
}

Result<std::vector<ContainerDevices>> copy_answer(const v1::ListPodResourcesResponse& answer) {
  std::vector<ContainerDevices> out;
  std::size_t holding = 0;
  for (const auto& pod : answer.pod_resources()) {
    const auto& containers = pod.containers();
    if (std::none_of(containers.begin(), containers.end(), holds_devices)) {
      continue;
    }
    if (++holding > k_max_pods) {
      return fail("pod-resources: List: more than " + std::to_string(k_max_pods) +
                  " pods hold devices: the answer is refused");
    }
    GPUCTK_TRY(copy_pod(pod, out));
  }
  return out;
}

// The call and the copy; the decoded answer is gone when it returns.
Result<std::vector<ContainerDevices>> list_and_copy(const std::string& socket_path,
                                                    std::chrono::milliseconds timeout) {
  GPUCTK_TRY_ASSIGN(const auto answer, call_list(socket_path, timeout));
  return copy_answer(answer);
}

}  // namespace

Result<std::vector<ContainerDevices>> list_pod_resources(const std::string& socket_path,
                                                         std::chrono::milliseconds timeout) {
  GPUCTK_TRY(check_socket(socket_path));
  auto listed = list_and_copy(socket_path, timeout);
  // A large answer is decoded into many small allocations (100 000 pods: about 70 MiB) that malloc keeps
  // once freed; handing them back keeps one broken answer from holding the exporter's resident set up
  // (bench/pod_resources_rss.cpp: 14 MiB after such answers without this, 7.6 MiB with a normal one).
  ::malloc_trim(0);
  return listed;
}

}  // namespace gpuctk::metrics
