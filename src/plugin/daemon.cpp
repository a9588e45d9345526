#include "plugin/daemon.hpp"

#include <grpcpp/grpcpp.h>
#include <malloc.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api.grpc.pb.h"
#include "discover/discover.hpp"
#include "discover/nvml.hpp"
#include "plugin/allocate.hpp"
#include "plugin/config.hpp"
#include "plugin/health.hpp"
#include "plugin/preferred.hpp"
#include "plugin/resources.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

namespace api = ::v1beta1;

constexpr const char* k_api_version = "v1beta1";  // the kubelet's device plugin API this daemon speaks
// How long one NVML wait lasts before the health watch looks at its stop flag (NVML sleeps in the kernel
// meanwhile): the most SIGTERM waits for the watch to end.
constexpr auto k_health_poll = std::chrono::milliseconds(500);
// glibc's malloc arenas: one. glibc otherwise gives threads arenas of their own (up to 8 per core), and each
// of gRPC's ~10 threads that allocates keeps one, resident; the daemon allocates little and rarely, so one
// lock costs nothing (bench/plugin.sh: about 0.3 MiB less resident, issue 25's 10 MiB goal).
constexpr int k_malloc_arenas = 1;
// How long a Register call may take (the kubelet answers at once; a dead socket fails at once).
constexpr auto k_register_timeout = std::chrono::seconds(5);
// The most bytes of a config file read (NVIDIA's are a few hundred bytes).
constexpr size_t k_max_config_file = 1024 * 1024;

// One line on stderr, written with one write(2) so that the threads' lines never interleave.
void log_line(std::string_view prefix, std::string_view text) {
  std::string line = "gpuctk-device-plugin: ";
  line.append(prefix).append(escape_for_log(text)).push_back('\n');
  // Nothing to do when stderr is gone.
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line.data(), line.size());
}
void log(std::string_view text) {
  log_line("", text);
}
void log_error(std::string_view text) {
  log_line("error: ", text);
}

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

// The socket of a resource, NVIDIA's name: "nvidia-" + the name after its domain ("nvidia-gpu.sock",
// "nvidia-mig-1g.5gb.sock", "nvidia-gpu.shared.sock").
std::string socket_name(std::string_view resource) {
  const auto slash = resource.rfind('/');
  return "nvidia-" + std::string(resource.substr(slash == std::string_view::npos ? 0 : slash + 1)) + ".sock";
}

std::vector<std::string> strings_of(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return {field.begin(), field.end()};
}

// The DevicePlugin service of one resource.
class Service final : public api::DevicePlugin::Service {
 public:
  Service(const Resource& resource, const Config& config, const Links& links,
          const std::vector<discover::DeviceNode>& control_nodes, HealthBoard& board)
      : m_resource(resource),
        m_config(config),
        m_links(links),
        m_allocator(resource, config, control_nodes),
        m_board(board) {}

  // Ends the ListAndWatch streams (the server is about to shut down).
  void close() {
    m_closing = true;
    m_board.wake();
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
    uint64_t seen = m_board.version();
    while (true) {
      if (!writer->Write(list())) {
        return grpc::Status::OK;  // the kubelet went away
      }
      uint64_t now = seen;
      while (now == seen) {
        now = m_board.wait_change(seen, [this] { return m_closing.load(); });
        if (m_closing || m_board.stopped() || context->IsCancelled()) {
          return grpc::Status::OK;
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
      auto chosen = preferred_allocation(m_resource, m_links, m_config.shared_policy, available, required,
                                         container.allocation_size());
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
      auto* out = response->add_container_responses();
      out->mutable_envs()->insert(answer->envs.begin(), answer->envs.end());
      for (const auto& mount : answer->mounts) {
        auto* m = out->add_mounts();
        m->set_container_path(mount.container_path);
        m->set_host_path(mount.host_path);
        m->set_read_only(mount.read_only);
      }
      for (const auto& device : answer->devices) {
        auto* d = out->add_devices();
        d->set_container_path(device.container_path);
        d->set_host_path(device.host_path);
        d->set_permissions(device.permissions);
      }
      out->mutable_annotations()->insert(answer->annotations.begin(), answer->annotations.end());
      for (const auto& name : answer->cdi_devices) {
        out->add_cdi_devices()->set_name(name);
      }
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
      d->set_health(m_board.healthy(device.id) ? "Healthy" : "Unhealthy");
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
  const Config& m_config;
  const Links& m_links;
  const Allocator m_allocator;
  HealthBoard& m_board;
  std::atomic<bool> m_closing{false};
};

// What every server shares, fixed after the start.
struct Node {
  Config config;
  discover::Inventory inventory;
  std::vector<Resource> resources;
  Links links;
  HealthBoard board;
};

// The servers of every resource, started and registered together, stopped together.
class Servers {
 public:
  explicit Servers(Node& node) : m_node(node), m_dir(parent_path(node.config.kubelet_socket)) {}
  Servers(const Servers&) = delete;
  Servers& operator=(const Servers&) = delete;
  ~Servers() { stop(); }

  // Serves every resource and registers each with the kubelet. The servers stay up when a registration
  // fails (the kubelet's next start registers them).
  Result<void> start() {
    for (const auto& resource : m_node.resources) {
      GPUCTK_TRY(serve(resource));
    }
    for (const auto& server : m_servers) {
      GPUCTK_TRY(register_with_kubelet(server));
    }
    return {};
  }

  // Every server shut down and its socket removed.
  void stop() {
    for (auto& server : m_servers) {
      server.service->close();
      server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      server.server->Wait();
      if (::unlink(server.socket.c_str()) != 0 && errno != ENOENT) {
        log("remove " + server.socket + ": " + std::strerror(errno));
      }
    }
    m_servers.clear();
  }

 private:
  struct Running {
    const Resource* resource = nullptr;
    std::string socket;
    std::unique_ptr<Service> service;
    std::unique_ptr<grpc::Server> server;
  };

  Result<void> serve(const Resource& resource) {
    Running running;
    running.resource = &resource;
    running.socket = m_dir + "/" + socket_name(resource.name);
    // A socket left by a killed daemon (or removed by the kubelet: ENOENT) would refuse the bind.
    if (::unlink(running.socket.c_str()) != 0 && errno != ENOENT) {
      return fail_errno("remove the stale socket " + running.socket, errno);
    }
    running.service = std::make_unique<Service>(resource, m_node.config, m_node.links,
                                                m_node.inventory.control_nodes, m_node.board);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("unix:" + running.socket, grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(running.service.get());
    running.server = builder.BuildAndStart();
    if (!running.server || port == 0) {
      return fail("serve " + resource.name + " on " + running.socket +
                  ": gRPC could not listen (is the directory there and writable?)");
    }
    log("serving " + resource.name + " (" + std::to_string(resource.devices.size()) + " devices) on " +
        running.socket);
    m_servers.push_back(std::move(running));
    return {};
  }

  Result<void> register_with_kubelet(const Running& running) const {
    const auto& kubelet = m_node.config.kubelet_socket;
    auto channel = grpc::CreateChannel("unix:" + kubelet, grpc::InsecureChannelCredentials());
    const auto stub = api::Registration::NewStub(channel);
    api::RegisterRequest request;
    request.set_version(k_api_version);
    request.set_endpoint(socket_name(running.resource->name));
    request.set_resource_name(running.resource->name);
    request.mutable_options()->set_get_preferred_allocation_available(true);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + k_register_timeout);
    api::Empty reply;
    const auto status = stub->Register(&context, request, &reply);
    if (!status.ok()) {
      return fail("register " + running.resource->name + " with " + kubelet + ": " + status.error_message());
    }
    log("registered " + running.resource->name + " with " + kubelet + " as " + request.endpoint());
    return {};
  }

  Node& m_node;
  std::string m_dir;
  std::vector<Running> m_servers;
};

// SIGTERM, SIGINT and SIGQUIT as a file descriptor; blocked in every thread (gRPC's and the health
// watch's inherit the mask, so the signals reach only the descriptor).
Result<UniqueFd> signal_fd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGQUIT);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) {
    return fail("block SIGTERM: pthread_sigmask failed");
  }
  UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC));
  if (!fd) {
    return fail_errno("signalfd", errno);
  }
  return fd;
}

// Waits for a signal; returns its name.
std::string wait_signal(int fd) {
  signalfd_siginfo info{};
  while (::read(fd, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) {
    if (errno != EINTR) {
      return "a failed signalfd read";
    }
  }
  const char* name = sigabbrev_np(static_cast<int>(info.ssi_signo));
  return std::string("SIG") + (name != nullptr ? name : "?");
}

// Whether the inotify events in `fd` say `name` was created (or moved in).
bool created(int fd, std::string_view name) {
  alignas(inotify_event) char buffer[4096];
  bool found = false;
  while (true) {
    const auto n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) {
      return found;  // EAGAIN: all read
    }
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      if (event->len > 0 && std::string_view(event->name) == name) {
        found = true;
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
}

// The daemon's start: configuration, discovery, resources, NVML topology. Errors are the daemon's
// start-up failures.
Result<void> prepare(Node& node, std::optional<discover::Nvml>& nvml) {
  discover::DiscoverOptions options;
  struct stat st {};
  // In a pod the host's driver root is mounted at containerDriverRoot; outside one, driver_root is it.
  options.driver_root = ::stat(node.config.container_driver_root.c_str(), &st) == 0 && S_ISDIR(st.st_mode)
                            ? node.config.container_driver_root
                            : node.config.driver_root;
  options.dev_root = node.config.container_dev_root;
  options.mode = node.config.discovery;
  GPUCTK_TRY_ASSIGN(node.inventory, discover::discover(options));
  for (const auto& warning : node.inventory.warnings) {
    log(warning);
  }
  std::vector<std::string> warnings;
  const auto numa = read_numa_nodes(options.dev_root, node.inventory);
  GPUCTK_TRY_ASSIGN(node.resources, build_resources(node.inventory, node.config, numa, warnings));
  for (const auto& warning : warnings) {
    log(warning);
  }
  if (node.inventory.gpu_source != discover::GpuSource::nvml || node.inventory.nvml_library.empty()) {
    log("no NVML (GPUs from " + node.inventory.gpus_from +
        "): every device is reported healthy and not watched, and GetPreferredAllocation knows no links");
    return {};
  }
  GPUCTK_TRY_ASSIGN(nvml, discover::Nvml::open(node.inventory.nvml_library));
  auto topology = nvml->topology();
  if (topology) {
    node.links = std::move(topology->links);
    for (const auto& warning : topology->warnings) {
      log("topology: " + warning);
    }
  } else {
    log("topology: " + topology.error().message + ": GetPreferredAllocation knows no links");
  }
  return {};
}

// An environment variable's value; "" when unset.
std::string_view variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Waits for a signal: a daemon that has nothing to serve stays up, as NVIDIA's does.
int idle_until_signal(int signals, const std::string& why) {
  log(why + ": serving nothing, waiting for SIGTERM");
  log("stopping on " + wait_signal(signals));
  return 0;
}

}  // namespace

int run_daemon(std::span<const std::string_view> args) {
  // Before any thread exists (gRPC's start with the first server); failure leaves glibc's default.
  ::mallopt(M_ARENA_MAX, k_malloc_arenas);
  auto arguments = parse_arguments(args, [](const char* name) { return std::getenv(name); });
  if (!arguments) {
    log_error(arguments.error().message);
    return 2;
  }
  if (arguments->action == Action::help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (arguments->action == Action::version) {
    std::printf("gpuctk-device-plugin %s (device plugin API %s)\n", GPUCTK_VERSION, k_api_version);
    return 0;
  }

  Node node;
  std::optional<std::string> file_text;
  if (const auto it = arguments->overrides.find("config-file"); it != arguments->overrides.end()) {
    auto text = read_file(it->second.value, k_max_config_file);
    if (!text) {
      log_error(it->second.origin + ": " + text.error().message);
      return 1;
    }
    file_text = std::move(*text);
  }
  auto config = resolve_config(arguments->overrides, file_text);
  if (!config) {
    log_error(config.error().message);  // names the file's key, the flag or the variable
    return 1;
  }
  node.config = std::move(*config);
  for (const auto& warning : node.config.warnings) {
    log(warning);
  }
  std::vector<std::string> notes;
  const auto policy =
      XidPolicy::from(variable("DP_DISABLE_HEALTHCHECKS"), variable("DP_ENABLE_HEALTHCHECKS"), notes);
  for (const auto& note : notes) {
    log(note);
  }

  auto signals = signal_fd();
  if (!signals) {
    log_error(signals.error().message);
    return 1;
  }
  std::optional<discover::Nvml> nvml;
  if (auto prepared = prepare(node, nvml); !prepared) {
    if (node.config.fail_on_init_error) {
      log_error(prepared.error().message);
      return 1;
    }
    return idle_until_signal(signals->get(), prepared.error().message + " (failOnInitError is false)");
  }
  if (node.resources.empty()) {
    return idle_until_signal(signals->get(), "no devices found");
  }

  // The health watch, with NVML, unless every check is off.
  std::optional<discover::NvmlEvents> events;
  std::thread watcher;
  if (nvml && policy.all_disabled()) {
    log("health checks are disabled (DP_DISABLE_HEALTHCHECKS)");
  } else if (nvml) {
    auto made = nvml->events();
    if (!made) {
      log("health: " + made.error().message + ": devices are reported healthy and not watched");
    } else {
      events = std::move(*made);
      log("health: watching Xid events, skipping Xids " + policy.describe());
      watcher = std::thread([&] {
        watch_health(*events, node.resources, policy, node.board, k_health_poll,
                     [](const std::string& line) { log(line); });
      });
    }
  }

  int status = 0;
  {
    const auto dir = parent_path(node.config.kubelet_socket);
    const std::string kubelet_name = node.config.kubelet_socket.substr(dir.size() + 1);
    // Watched before the first registration, so that a kubelet starting in between is seen.
    UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!inotify || ::inotify_add_watch(inotify.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
      log_error(fail_errno("watch " + dir + " (inotify)", errno).error().message);
      status = 1;
    }
    Servers servers(node);
    if (status == 0) {
      if (auto started = servers.start(); !started) {
        log(started.error().message + ": registering again when " + node.config.kubelet_socket +
            " is created");
      }
    }
    while (status == 0) {
      pollfd fds[2] = {{.fd = signals->get(), .events = POLLIN, .revents = 0},
                       {.fd = inotify.get(), .events = POLLIN, .revents = 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) {
          continue;
        }
        log_error(fail_errno("poll", errno).error().message);
        status = 1;
        break;
      }
      if ((fds[0].revents & POLLIN) != 0) {
        log("stopping on " + wait_signal(signals->get()));
        break;
      }
      if ((fds[1].revents & POLLIN) != 0 && created(inotify.get(), kubelet_name)) {
        log(node.config.kubelet_socket + " was created (the kubelet restarted): restarting the servers");
        servers.stop();
        if (auto started = servers.start(); !started) {
          log(started.error().message + ": registering again when " + node.config.kubelet_socket +
              " is created");
        }
      }
    }
  }  // the servers stop here: sockets removed
  node.board.stop();
  if (watcher.joinable()) {
    watcher.join();
  }
  log("stopped");
  return status;
}

}  // namespace gpuctk::plugin
