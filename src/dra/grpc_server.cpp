#include "dra/grpc_server.hpp"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"
#include "pluginregistration.grpc.pb.h"
#include "util/strings.hpp"

namespace gpuctk::dra {

namespace {

namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace reg = ::pluginregistration;

// The service names the kubelet asks for, newest first (k8s.io/kubelet's dra API versions).
constexpr const char* k_versions[] = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
// Longest text taken from a claim reference: the API's names are <= 253 bytes, UIDs 36.
constexpr size_t k_max_field = 253;

// The claims of a request, or why they are refused (a request the kubelet never sends).
template <class Request>
Result<std::vector<ClaimRef>> claims_of(const Request& request) {
  if (static_cast<size_t>(request.claims_size()) > k_max_claims_per_call) {
    return fail(std::to_string(request.claims_size()) + " claims in one call (at most " +
                std::to_string(k_max_claims_per_call) + ")");
  }
  std::vector<ClaimRef> claims;
  for (const auto& claim : request.claims()) {
    if (claim.uid().empty() || claim.uid().size() > k_max_field || claim.name().size() > k_max_field ||
        claim.namespace_().size() > k_max_field) {
      return fail("a claim without a UID, or with a name, namespace or UID over " +
                  std::to_string(k_max_field) + " bytes");
    }
    claims.push_back({.namespace_name = claim.namespace_(), .uid = claim.uid(), .name = claim.name()});
  }
  return claims;
}

template <class Api>
class DraService final : public Api::DRAPlugin::Service {
 public:
  explicit DraService(const ServerHooks& hooks) : m_hooks(hooks) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const typename Api::NodePrepareResourcesRequest* request,
                                    typename Api::NodePrepareResourcesResponse* response) override {
    auto claims = claims_of(*request);
    if (!claims) {
      return {grpc::StatusCode::INVALID_ARGUMENT, claims.error().message};
    }
    for (const auto& [uid, result] : m_hooks.prepare(*claims)) {
      auto& out = (*response->mutable_claims())[uid];
      out.set_error(result.error);
      for (const auto& device : result.error.empty() ? result.devices : std::vector<PreparedDevice>{}) {
        auto* d = out.add_devices();
        for (const auto& request_name : device.requests) {
          d->add_request_names(request_name);
        }
        d->set_pool_name(device.pool);
        d->set_device_name(device.device);
        for (const auto& id : device.cdi_ids) {
          d->add_cdi_device_ids(id);
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const typename Api::NodeUnprepareResourcesRequest* request,
                                      typename Api::NodeUnprepareResourcesResponse* response) override {
    auto claims = claims_of(*request);
    if (!claims) {
      return {grpc::StatusCode::INVALID_ARGUMENT, claims.error().message};
    }
    for (const auto& [uid, error] : m_hooks.unprepare(*claims)) {
      (*response->mutable_claims())[uid].set_error(error);
    }
    return grpc::Status::OK;
  }

 private:
  const ServerHooks& m_hooks;
};

struct V1 {
  using DRAPlugin = v1::DRAPlugin;
  using NodePrepareResourcesRequest = v1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = v1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = v1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = v1::NodeUnprepareResourcesResponse;
};
struct V1beta1 {
  using DRAPlugin = v1beta1::DRAPlugin;
  using NodePrepareResourcesRequest = v1beta1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = v1beta1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = v1beta1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = v1beta1::NodeUnprepareResourcesResponse;
};

class RegistrationService final : public reg::Registration::Service {
 public:
  RegistrationService(const ServerHooks& hooks, std::string driver, std::string endpoint)
      : m_hooks(hooks), m_driver(std::move(driver)), m_endpoint(std::move(endpoint)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const reg::InfoRequest*, reg::PluginInfo* info) override {
    info->set_type("DRAPlugin");
    info->set_name(m_driver);
    info->set_endpoint(m_endpoint);
    for (const char* version : k_versions) {
      info->add_supported_versions(version);
    }
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const reg::RegistrationStatus* status,
                                        reg::RegistrationStatusResponse*) override {
    m_hooks.registration(status->plugin_registered(), status->error().substr(0, 4096));
    return grpc::Status::OK;
  }

 private:
  const ServerHooks& m_hooks;
  std::string m_driver;
  std::string m_endpoint;
};

Result<void> prepare_socket(const std::string& socket) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(socket).parent_path(), ec);
  if (ec) {
    return fail("mkdir " + std::filesystem::path(socket).parent_path().string() + ": " + ec.message());
  }
  if (::unlink(socket.c_str()) != 0 && errno != ENOENT) {
    return fail_errno("remove the stale socket " + socket, errno);
  }
  return {};
}

Result<std::unique_ptr<grpc::Server>> listen(const std::string& socket,
                                             const std::vector<grpc::Service*>& services) {
  GPUCTK_TRY(prepare_socket(socket));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials(), &port);
  for (auto* service : services) {
    builder.RegisterService(service);
  }
  auto server = builder.BuildAndStart();
  if (!server || port == 0) {
    return fail("serve on " + socket + ": gRPC could not listen (is the directory there and writable?)");
  }
  return server;
}

void remove_socket(const std::string& socket) {
  ::unlink(socket.c_str());
}

}  // namespace

struct Servers::State {
  ServerHooks hooks;
  std::string dra_socket, registration_socket;
  DraService<V1> v1_service{hooks};
  DraService<V1beta1> v1beta1_service{hooks};
  RegistrationService registration;
  std::unique_ptr<grpc::Server> dra, reg;

  State(ServerHooks h, const std::string& driver, std::string dra_path, std::string reg_path)
      : hooks(std::move(h)),
        dra_socket(std::move(dra_path)),
        registration_socket(std::move(reg_path)),
        registration(hooks, driver, dra_socket) {}
};

Result<std::unique_ptr<Servers>> Servers::start(const std::string& driver, const std::string& dra_socket,
                                                const std::string& registration_socket, ServerHooks hooks) {
  std::unique_ptr<Servers> out(new Servers());
  out->m_state = std::make_unique<State>(std::move(hooks), driver, dra_socket, registration_socket);
  auto& state = *out->m_state;
  // The DRA service first: the kubelet calls it as soon as the registration is answered.
  GPUCTK_TRY_ASSIGN(state.dra, listen(dra_socket, {&state.v1_service, &state.v1beta1_service}));
  GPUCTK_TRY_ASSIGN(state.reg, listen(registration_socket, {&state.registration}));
  return out;
}

void Servers::stop() {
  if (!m_state) {
    return;
  }
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(1);
  // Registration first: the plugin watcher sees the socket go and unregisters the driver.
  for (auto* server : {m_state->reg.get(), m_state->dra.get()}) {
    if (server != nullptr) {
      server->Shutdown(deadline);
      server->Wait();
    }
  }
  remove_socket(m_state->registration_socket);
  remove_socket(m_state->dra_socket);
  m_state.reset();
}

Servers::~Servers() {
  stop();
}

}  // namespace gpuctk::dra
