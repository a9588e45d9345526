#pragma once
// The gRPC side of gpuctk-dra-plugin: the kubelet's plugin watcher finds the registration socket
// (<registry>/gpu.nvidia.com-reg.sock) and asks GetInfo (type DRAPlugin, the driver's name, the DRA
// service's socket <plugins>/gpu.nvidia.com/dra.sock, the versions "v1.DRAPlugin" and
// "v1beta1.DRAPlugin"), then tells the plugin NotifyRegistrationStatus. The kubelet then calls
// NodePrepareResources / NodeUnprepareResources on the DRA socket in the newest version both speak; the
// messages of v1 and v1beta1 are the same, so both services answer through one Preparer.

#include <functional>
#include <memory>
#include <string>

#include "dra/prepare.hpp"
#include "util/error.hpp"

namespace grpc {
class Server;
}

namespace gpuctk::dra {

// What the servers call into; each must be thread-safe (gRPC calls them from its threads).
struct ServerHooks {
  std::function<std::map<std::string, PrepareResult>(const std::vector<ClaimRef>&)> prepare;
  std::function<std::map<std::string, std::string>(const std::vector<ClaimRef>&)> unprepare;
  // The kubelet registered the plugin (true), or refused it (false, its error).
  std::function<void(bool registered, const std::string& error)> registration;
  std::function<void(const std::string&)> log;
};

class Servers {
 public:
  // Listens on the DRA socket, then on the registration socket (a stale socket at either is removed
  // first; their directories are made 0750). Errors name the socket.
  static Result<std::unique_ptr<Servers>> start(const std::string& driver, const std::string& dra_socket,
                                                const std::string& registration_socket, ServerHooks hooks);
  Servers(const Servers&) = delete;
  Servers& operator=(const Servers&) = delete;
  ~Servers();
  // Shuts both servers down (calls in flight get a second) and removes the sockets.
  void stop();

 private:
  Servers() = default;
  struct State;
  std::unique_ptr<State> m_state;
};

// The bound of one request: the kubelet sends the claims of one pod (at most a pod's claims: 128 here).
inline constexpr size_t k_max_claims_per_call = 128;

}  // namespace gpuctk::dra
