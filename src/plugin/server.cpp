#include "plugin/server.hpp"

#include <grpcpp/grpcpp.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "api.grpc.pb.h"
#include "plugin/allocate.hpp"
#include "plugin/log.hpp"

namespace gpuctk::plugin {

namespace {

namespace api = ::v1beta1;

// How long a Register call may take (the kubelet answers at once; a dead socket fails at once).
constexpr auto k_register_timeout = std::chrono::seconds(5);
// How long a ListAndWatch stream waits on the board before it looks whether the kubelet cancelled it
// (server.hpp): the most a cancelled stream lingers.
constexpr auto k_cancel_poll = std::chrono::milliseconds(250);

// A random (version 4) UUID: the response id NVIDIA's plugin names each CDI annotation with.
std::string random_uuid() {
  unsigned char bytes[16] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    const auto n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      break;  // cannot happen for 16 bytes after boot; zeroes still name a distinct annotation key
    }
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  char text[37];
  std::snprintf(text, sizeof text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

std::vector<std::string> strings_of(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return {field.begin(), field.end()};
}

void fill(const ContainerAnswer& answer, api::ContainerAllocateResponse& out) {
  out.mutable_envs()->insert(answer.envs.begin(), answer.envs.end());
  for (const auto& mount : answer.mounts) {
    auto* m = out.add_mounts();
    m->set_container_path(mount.container_path);
    m->set_host_path(mount.host_path);
    m->set_read_only(mount.read_only);
  }
  for (const auto& device : answer.devices) {
    auto* d = out.add_devices();
    d->set_container_path(device.container_path);
    d->set_host_path(device.host_path);
    d->set_permissions(device.permissions);
  }
  out.mutable_annotations()->insert(answer.annotations.begin(), answer.annotations.end());
  for (const auto& name : answer.cdi_devices) {
    out.add_cdi_devices()->set_name(name);
  }
}

}  // namespace

// The DevicePlugin service of one resource.
class Service final : public api::DevicePlugin::Service {
 public:
  Service(const Resource& resource, Node& node)
      : m_resource(resource),
        m_node(node),
        m_allocator(resource, node.config, node.inventory.control_nodes) {}

  // Ends the ListAndWatch streams (the server is about to shut down).
  void close() {
    m_closing = true;
    m_node.board.wake();
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* /*context*/, const api::Empty* /*request*/,
                                      api::DevicePluginOptions* response) override {
    response->set_pre_start_required(false);
    response->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
  }

  // The device list now, then again after every health change, until the kubelet goes or the server
  // closes. The version is read before the list, so that a change while it is sent is not missed; the
  // closing flag is read by the wait itself, so that a close() while the list is sent is not missed either
  // (Server::Wait() would wait for this handler forever).
  grpc::Status ListAndWatch(grpc::ServerContext* context, const api::Empty* /*request*/,
                            grpc::ServerWriter<api::ListAndWatchResponse>* writer) override {
    uint64_t seen = m_node.board.version();
    while (true) {
      if (!writer->Write(list())) {
        log("ListAndWatch of " + m_resource.name + " ended: the kubelet went away");
        return grpc::Status::OK;
      }
      uint64_t now = seen;
      while (now == seen) {
        now = m_node.board.wait_change(
            seen, [&] { return m_closing.load() || context->IsCancelled(); }, k_cancel_poll);
        if (m_closing || m_node.board.stopped()) {
          return grpc::Status::OK;
        }
        if (context->IsCancelled()) {
          log("ListAndWatch of " + m_resource.name + " ended: the kubelet cancelled it");
          return grpc::Status::CANCELLED;
        }
      }
      seen = now;
    }
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext* /*context*/,
                                      const api::PreferredAllocationRequest* request,
                                      api::PreferredAllocationResponse* response) override {
    for (const auto& container : request->container_requests()) {
      const auto available = strings_of(container.available_deviceids());
      const auto required = strings_of(container.must_include_deviceids());
      auto chosen = preferred_allocation(m_resource, m_node.links, m_node.config.shared_policy, available,
                                         required, container.allocation_size());
      if (!chosen) {
        return refuse("GetPreferredAllocation", chosen.error().message);
      }
      auto* out = response->add_container_responses();
      for (auto& id : *chosen) {
        out->add_deviceids(std::move(id));
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext* /*context*/, const api::AllocateRequest* request,
                        api::AllocateResponse* response) override {
    for (const auto& container : request->container_requests()) {
      const auto ids = strings_of(container.devices_ids());
      auto answer = m_allocator.answer(ids, random_uuid());
      if (!answer) {
        return refuse("Allocate", answer.error().message);
      }
      fill(*answer, *response->add_container_responses());
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext* /*context*/,
                                 const api::PreStartContainerRequest* /*request*/,
                                 api::PreStartContainerResponse* /*response*/) override {
    return grpc::Status::OK;  // never asked for: pre_start_required is false
  }

 private:
  api::ListAndWatchResponse list() const {
    api::ListAndWatchResponse out;
    for (const auto& device : m_resource.devices) {
      auto* d = out.add_devices();
      d->set_id(device.id);
      d->set_health(m_node.board.healthy(device.id) ? "Healthy" : "Unhealthy");
      if (device.numa_node) {
        d->mutable_topology()->add_nodes()->set_id(*device.numa_node);
      }
    }
    return out;
  }

  // A refused request: logged (the kubelet shows only its own summary) and answered INVALID_ARGUMENT.
  grpc::Status refuse(std::string_view call, const std::string& message) const {
    log_error(std::string(call) + " " + m_resource.name + ": " + message);
    return {grpc::StatusCode::INVALID_ARGUMENT, message};
  }

  const Resource& m_resource;
  Node& m_node;
  const Allocator m_allocator;
  std::atomic<bool> m_closing{false};
};

std::string socket_name(std::string_view resource) {
  const auto slash = resource.rfind('/');
  return "nvidia-" + std::string(resource.substr(slash == std::string_view::npos ? 0 : slash + 1)) + ".sock";
}

PluginServer::PluginServer(const Resource& resource, std::string socket)
    : m_resource(resource), m_socket(std::move(socket)) {}

PluginServer::~PluginServer() {
  stop();
}

Result<std::unique_ptr<PluginServer>> PluginServer::serve(const Resource& resource, Node& node,
                                                          const std::string& dir) {
  std::unique_ptr<PluginServer> out(new PluginServer(resource, dir + "/" + socket_name(resource.name)));
  // A socket left by a killed daemon (or removed by the kubelet: ENOENT) would refuse the bind.
  if (::unlink(out->m_socket.c_str()) != 0 && errno != ENOENT) {
    return fail_errno("remove the stale socket " + out->m_socket, errno);
  }
  out->m_service = std::make_unique<Service>(resource, node);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("unix:" + out->m_socket, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(out->m_service.get());
  out->m_server = builder.BuildAndStart();
  if (!out->m_server || port == 0) {
    return fail("serve " + resource.name + " on " + out->m_socket +
                ": gRPC could not listen (is the directory there and writable?)");
  }
  log("serving " + resource.name + " (" + std::to_string(resource.devices.size()) + " devices) on " +
      out->m_socket);
  return out;
}

Result<void> PluginServer::register_with(const std::string& kubelet_socket) {
  auto channel = grpc::CreateChannel("unix:" + kubelet_socket, grpc::InsecureChannelCredentials());
  const auto stub = api::Registration::NewStub(channel);
  api::RegisterRequest request;
  request.set_version(k_api_version);
  request.set_endpoint(socket_name(m_resource.name));
  request.set_resource_name(m_resource.name);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + k_register_timeout);
  api::Empty reply;
  const auto status = stub->Register(&context, request, &reply);
  if (!status.ok()) {
    return fail("register " + m_resource.name + " with " + kubelet_socket + ": " + status.error_message());
  }
  m_registered = true;
  log("registered " + m_resource.name + " with " + kubelet_socket + " as " + request.endpoint());
  return {};
}

void PluginServer::stop() {
  if (!m_server) {
    return;
  }
  m_service->close();
  m_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  m_server->Wait();
  m_server.reset();
  if (::unlink(m_socket.c_str()) != 0 && errno != ENOENT) {
    log("remove " + m_socket + ": " + std::strerror(errno));
  }
}

}  // namespace gpuctk::plugin
