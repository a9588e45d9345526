// plugin_client SOCKET CALLS: the kubelet's calls to a device plugin, timed from C++ (the generated stubs,
// gRPC's synchronous client), so that bench/plugin.sh's Allocate figures are not mostly python's client.
// Reads the advertised devices from the first ListAndWatch list, then, after 200 warm-up calls, times
// CALLS calls each of GetDevicePluginOptions (the floor: a handler that does nothing), Allocate of the
// first device and Allocate of the first 8 (or all); prints "<what> (N calls): median X ms  max Y ms".
// Measures, never asserts. Exit 1 on a failed call.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "api.grpc.pb.h"

namespace {

namespace api = ::v1beta1;

// Runs `call` `count` times; the wall time of each, in nanoseconds. False when a call failed.
bool timed(int count, const std::function<grpc::Status()>& call, std::vector<double>& out) {
  out.clear();
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto status = call();
    const auto end = std::chrono::steady_clock::now();
    if (!status.ok()) {
      std::fprintf(stderr, "plugin_client: error: %s\n", status.error_message().c_str());
      return false;
    }
    out.push_back(
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
  }
  return true;
}

void report(const char* what, std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const double median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  std::printf("%s (%zu calls): median %.3f ms  max %.3f ms\n", what, n, median / 1e6, samples.back() / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: plugin_client SOCKET CALLS\n");
    return 2;
  }
  const int calls = std::atoi(argv[2]);
  if (calls <= 0) {
    std::fprintf(stderr, "plugin_client: error: CALLS: %s is not a positive number\n", argv[2]);
    return 2;
  }
  const auto stub = api::DevicePlugin::NewStub(
      grpc::CreateChannel(std::string("unix:") + argv[1], grpc::InsecureChannelCredentials()));

  std::vector<std::string> ids;
  {
    grpc::ClientContext context;
    const auto reader = stub->ListAndWatch(&context, api::Empty());
    api::ListAndWatchResponse list;
    if (!reader->Read(&list)) {
      std::fprintf(stderr, "plugin_client: error: no ListAndWatch list from %s\n", argv[1]);
      return 1;
    }
    for (const auto& device : list.devices()) {
      ids.push_back(device.id());
    }
    context.TryCancel();
  }
  if (ids.empty()) {
    std::fprintf(stderr, "plugin_client: error: %s advertises no devices\n", argv[1]);
    return 1;
  }
  auto request = [&](size_t count) {
    api::AllocateRequest out;
    auto* container = out.add_container_requests();
    for (size_t i = 0; i < std::min(count, ids.size()); ++i) {
      container->add_devices_ids(ids[i]);
    }
    return out;
  };
  const auto one = request(1);
  const auto eight = request(8);
  auto allocate = [&](const api::AllocateRequest& what) {
    return [&stub, &what] {
      grpc::ClientContext context;
      api::AllocateResponse response;
      return stub->Allocate(&context, what, &response);
    };
  };
  auto options = [&stub] {
    grpc::ClientContext context;
    api::DevicePluginOptions response;
    return stub->GetDevicePluginOptions(&context, api::Empty(), &response);
  };

  std::vector<double> samples;
  if (!timed(200, allocate(one), samples)) {  // warm-up: the connection, the daemon's first answers
    return 1;
  }
  if (!timed(calls, options, samples)) {
    return 1;
  }
  report("C++ client: floor (GetDevicePluginOptions)", samples);
  if (!timed(calls, allocate(one), samples)) {
    return 1;
  }
  report("C++ client: allocate 1 GPU", samples);
  if (!timed(calls, allocate(eight), samples)) {
    return 1;
  }
  report(ids.size() >= 8 ? "C++ client: allocate 8 GPUs" : "C++ client: allocate all GPUs", samples);
  return 0;
}
