#pragma once
// The gRPC side of gpuctk-device-plugin: one resource's DevicePlugin server on its socket beside
// kubelet.sock, and its registration with the kubelet (API v1beta1). The daemon (daemon.hpp) decides when
// each is started, registered and stopped.
//
// ListAndWatch sends the list, then again after every health change, until the server stops or the
// kubelet goes. gRPC's synchronous API tells a handler of a cancelled call nothing, so the stream waits
// on the health board at most k_cancel_poll (250 ms) at a time and looks at ServerContext::IsCancelled()
// in between: a stream the kubelet cancels ends within that, logged; one the server ends is not logged.

#include <memory>
#include <string>
#include <string_view>

#include "plugin/node.hpp"
#include "util/error.hpp"

namespace grpc {
class Server;
}

namespace gpuctk::plugin {

inline constexpr const char* k_api_version = "v1beta1";  // the kubelet's device plugin API this daemon speaks

class Service;

// One resource served: its gRPC server listening on <dir>/nvidia-<name>.sock.
class PluginServer {
 public:
  // Listens on the resource's socket in `dir` (a stale socket there is removed first). `resource` and
  // `node` must outlive the server. Errors: "serve nvidia.com/gpu on <socket>: gRPC could not listen (is
  // the directory there and writable?)", or the failed removal.
  static Result<std::unique_ptr<PluginServer>> serve(const Resource& resource, Node& node,
                                                     const std::string& dir);
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;
  ~PluginServer();

  // Register with the kubelet at `kubelet_socket` (v1beta1, the socket's name, the resource, preferred
  // allocation available), waiting at most 5 s. Error: "register <resource> with <socket>: <gRPC's why>".
  Result<void> register_with(const std::string& kubelet_socket);
  // Ends the streams, shuts the server down and removes its socket (a missing one is fine: the kubelet
  // removes every socket of the directory when it restarts).
  void stop();

  [[nodiscard]] const Resource& resource() const { return m_resource; }
  [[nodiscard]] bool registered() const { return m_registered; }

 private:
  PluginServer(const Resource& resource, std::string socket);

  const Resource& m_resource;
  std::string m_socket;
  std::unique_ptr<Service> m_service;
  std::unique_ptr<grpc::Server> m_server;
  bool m_registered = false;
};

// NVIDIA's socket name of a resource: "nvidia-" + the name after its domain ("nvidia-gpu.sock",
// "nvidia-mig-1g.5gb.sock", "nvidia-gpu.shared.sock").
std::string socket_name(std::string_view resource);

}  // namespace gpuctk::plugin
