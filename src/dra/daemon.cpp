// gpuctk-dra-plugin (daemon.hpp): flags, the start, the signal loop, the NVML Xid watch.

#include "dra/daemon.hpp"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

#include <CLI/CLI.hpp>

#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "discover/host_fs.hpp"
#include "discover/nvml.hpp"
#include "dra/grpc_server.hpp"
#include "dra/prepare.hpp"
#include "dra/publisher.hpp"
#include "dra/taints.hpp"
#include "install/install.hpp"
#include "kube/client.hpp"
#include "plugin/health.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {
namespace {

constexpr int k_exit_ok = 0;
constexpr int k_exit_failure = 1;
constexpr int k_exit_usage = 2;
// glibc's malloc arenas: one, as gpuctk-device-plugin (its daemon.cpp): gRPC's threads would each keep an
// arena resident, and the daemon allocates little and rarely.
constexpr int k_malloc_arenas = 1;
// How long one NVML event wait lasts: the most a stop or a rediscovery waits for the Xid watch.
constexpr auto k_health_poll = std::chrono::milliseconds(500);

void write_line(std::string_view prefix, std::string_view text) {
  const std::string line = std::string(prefix) + escape_for_log(text) + "\n";
  [[maybe_unused]] const auto n = ::write(STDERR_FILENO, line.data(), line.size());
}
void log(std::string_view text) {
  write_line("gpuctk-dra-plugin: ", text);
}
void log_error(std::string_view text) {
  write_line("gpuctk-dra-plugin: error: ", text);
}

struct Options {
  std::string node_name;
  std::string kubeconfig;
  std::string cdi_root = "/var/run/cdi";
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string plugins_dir = "/var/lib/kubelet/plugins";
  std::string host_root;  // "": this process sees the node's root at /
  std::string driver_root = "/";
  std::string dev_root;  // "": the driver root
  std::string discovery = "auto";
  std::string nvml_library;
  std::string gpuctk_path = "/usr/bin/gpuctk";
  std::string additional_xids;
};

// The flags; nullopt with the exit status when parsing ended the run (--help, --version, a mistake).
std::variant<Options, int> parse(std::span<const std::string_view> args) {
  Options o;
  CLI::App app(
      "gpuctk-dra-plugin: the Dynamic Resource Allocation kubelet plugin for NVIDIA GPUs "
      "(driver gpu.nvidia.com)",
      "gpuctk-dra-plugin");
  app.set_version_flag("--version", std::string("gpuctk-dra-plugin ") + GPUCTK_VERSION);
  app.add_option("--node-name", o.node_name, "this node's name (the pool and the slices' node)")
      ->envname("NODE_NAME")
      ->required();
  app.add_option("--kubeconfig", o.kubeconfig,
                 "the Kubernetes API's kubeconfig (default: the pod's service account)")
      ->envname("KUBECONFIG");
  app.add_option("--cdi-root", o.cdi_root, "where the claims' CDI specs are written")
      ->envname("CDI_ROOT")
      ->capture_default_str();
  app.add_option("--kubelet-registrar-directory-path", o.registry_dir, "the kubelet's plugin watcher folder")
      ->envname("KUBELET_REGISTRAR_DIRECTORY_PATH")
      ->capture_default_str();
  app.add_option("--kubelet-plugins-directory-path", o.plugins_dir,
                 "the kubelet's plugins folder: the DRA socket and the checkpoint go in <it>/gpu.nvidia.com")
      ->envname("KUBELET_PLUGINS_DIRECTORY_PATH")
      ->capture_default_str();
  app.add_option("--host-root", o.host_root,
                 "where this pod sees the node's root (a DaemonSet's hostPath mount); the claim specs name "
                 "the node's paths")
      ->envname("GPUCTK_HOST_ROOT");
  app.add_option("--nvidia-driver-root", o.driver_root, "the node's driver root")
      ->envname("NVIDIA_DRIVER_ROOT")
      ->capture_default_str();
  app.add_option("--dev-root", o.dev_root, "the root of /dev, /proc and /sys (default: the driver root)")
      ->envname("NVIDIA_DEV_ROOT");
  app.add_option("--device-discovery-strategy", o.discovery, "auto | nvml | proc (no NVML: no health taints)")
      ->envname("DEVICE_DISCOVERY_STRATEGY")
      ->check(CLI::IsMember({"auto", "nvml", "proc"}))
      ->capture_default_str();
  app.add_option("--nvml-library", o.nvml_library,
                 "the libnvidia-ml.so.1 to read the GPUs through (default: the driver root's)")
      ->envname("GPUCTK_NVML_LIBRARY");
  app.add_option("--gpuctk-path", o.gpuctk_path, "the host path of gpuctk, which the claim specs' hooks run")
      ->envname("GPUCTK_PATH")
      ->capture_default_str();
  app.add_option("--additional-xids-to-ignore", o.additional_xids,
                 "Xids that taint no device beside 13, 31, 43, 45, 68, 109 (comma list)")
      ->envname("ADDITIONAL_XIDS_TO_IGNORE");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    log_error(e.what());
    return k_exit_usage;
  }
  if (o.dev_root.empty()) {
    o.dev_root = o.driver_root;
  }
  return o;
}

// What discovery found, as the daemon serves it: swapped whole at a rediscovery.
struct Node {
  discover::Inventory inventory;
  cdi::Spec spec;
  std::vector<Device> devices;
};

Result<Node> discover_node(const Options& o) {
  discover::DiscoverOptions options;
  options.driver_root =
      o.host_root.empty() ? o.driver_root : discover::under_root(o.host_root, o.driver_root);
  options.dev_root = o.host_root.empty() ? o.dev_root : discover::under_root(o.host_root, o.dev_root);
  options.nvml_library = o.nvml_library;
  options.mode = o.discovery == "nvml"   ? discover::Mode::nvml
                 : o.discovery == "proc" ? discover::Mode::proc
                                         : discover::Mode::automatic;
  Node node;
  GPUCTK_TRY_ASSIGN(node.inventory, discover::discover(options));
  install::move_to_node(node.inventory, o.host_root);  // the spec names the node's files
  cdi::BuildOptions build;
  build.hook_path = o.gpuctk_path;
  GPUCTK_TRY_ASSIGN(node.spec, cdi::generate_spec(node.inventory, build));
  node.devices = devices_of(node.inventory);
  return node;
}

// The Xid watch: an NVML session and event set of its own, and a thread that taints through `board`.
class XidWatch {
 public:
  XidWatch() = default;
  XidWatch(const XidWatch&) = delete;
  XidWatch& operator=(const XidWatch&) = delete;
  ~XidWatch() { stop(); }

  void start(const Node& node, const plugin::XidPolicy& policy, TaintBoard& board,
             const std::function<void()>& changed) {
    stop();
    if (node.inventory.nvml_library.empty()) {
      log("no NVML (proc discovery): devices are not watched for Xid events");
      return;
    }
    if (policy.all_disabled()) {
      log("health: every Xid is ignored: devices are not watched");
      return;
    }
    auto nvml = discover::Nvml::open(node.inventory.nvml_library);
    auto events = nvml ? nvml->events() : std::unexpected(nvml.error());
    if (!events) {
      log("health: " + events.error().message + ": devices are not watched for Xid events");
      return;
    }
    for (const auto& gpu : node.inventory.gpus) {
      if (auto added = events->add(gpu.uuid, plugin::watched_event_types()); !added) {
        log("health: " + added.error().message + ": its devices are not watched for Xid events");
      } else if (!*added) {
        log("health: " + gpu.uuid + " has no Xid events (too old): its devices are not watched");
      }
    }
    m_nvml = std::move(*nvml);
    m_events = std::move(*events);
    m_stop = false;
    log("health: watching Xid events, ignoring Xids " + policy.describe());
    m_thread = std::thread([this, policy, &board, changed] { watch(policy, board, changed); });
  }

  void stop() {
    m_stop = true;
    if (m_thread.joinable()) {
      m_thread.join();
    }
    m_events.reset();
    m_nvml.reset();
  }

 private:
  void watch(const plugin::XidPolicy& policy, TaintBoard& board, const std::function<void()>& changed) {
    while (!m_stop) {
      auto event = m_events->wait(k_health_poll);
      if (!event) {
        log_error("health: " + event.error().message + ": tainting every device " +
                  std::string(k_gpu_lost_taint));
        if (board.mark_lost()) {
          changed();
        }
        return;
      }
      if (*event && board.apply(**event, policy)) {
        log("health: Xid " + std::to_string((*event)->data) + " on " + (*event)->uuid + ": tainted");
        changed();
      }
    }
  }

  std::optional<discover::Nvml> m_nvml;
  std::optional<discover::NvmlEvents> m_events;
  std::thread m_thread;
  std::atomic<bool> m_stop{false};
};

std::string claim_path(const std::string& ns, const std::string& name) {
  return "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims/" + name;
}

int64_t microseconds_since(std::chrono::steady_clock::time_point then) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - then)
      .count();
}

std::string describe(const ClaimRef& claim) {
  return claim.namespace_name + "/" + claim.name + " (" + claim.uid + ")";
}

class Daemon {
 public:
  explicit Daemon(Options options) : m_options(std::move(options)) {}

  int run() {
    sigset_t signals;
    sigemptyset(&signals);
    for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
      sigaddset(&signals, sig);
    }
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts: only sigtimedwait takes them
    if (auto started = start(); !started) {
      log_error(started.error().message);
      return k_exit_failure;
    }
    for (;;) {
      const int sig = sigwaitinfo(&signals, nullptr);
      if (sig == SIGHUP) {
        rediscover();
      } else if (sig == SIGTERM || sig == SIGINT) {
        log(std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
        break;
      }
    }
    m_xids.stop();
    m_servers->stop();
    m_publisher->stop();
    return k_exit_ok;
  }

 private:
  Result<void> start() {
    const auto& o = m_options;
    std::vector<std::string> notes;
    m_policy = plugin::XidPolicy::from(o.additional_xids, "", notes);
    for (const auto& note : notes) {
      log(note);
    }
    GPUCTK_TRY_ASSIGN(auto node, discover_node(o));
    m_node = std::make_shared<const Node>(std::move(node));
    m_board = std::make_unique<TaintBoard>(m_node->devices);
    for (const auto& warning : m_node->inventory.warnings) {
      log("warning: " + warning);
    }
    log("discovered " + std::to_string(m_node->devices.size()) + " devices (" + m_node->inventory.gpus_from +
        ")");
    const std::string plugin_dir = o.plugins_dir + "/" + std::string(k_driver_name);
    GPUCTK_TRY_ASSIGN(m_preparer, Preparer::open({.node_name = o.node_name,
                                                  .driver = std::string(k_driver_name),
                                                  .cdi_dir = o.cdi_root,
                                                  .checkpoint_path = plugin_dir + "/checkpoint.json"},
                                                 m_node->spec, m_node->devices));
    GPUCTK_TRY_ASSIGN(auto credentials,
                      kube::load_credentials(o.kubeconfig, [](const char* n) { return ::getenv(n); }));
    GPUCTK_TRY_ASSIGN(auto claims_client, kube::Client::create(credentials));
    m_claims_client.emplace(std::move(claims_client));
    GPUCTK_TRY_ASSIGN(auto slices_client, kube::Client::create(credentials));
    ServerHooks hooks{.prepare = [this](const std::vector<ClaimRef>& claims) { return prepare(claims); },
                      .unprepare = [this](const std::vector<ClaimRef>& claims) { return unprepare(claims); },
                      .registration =
                          [this](bool registered, const std::string& error) {
                            if (registered) {
                              log("registered with the kubelet");
                              m_publisher->poke();  // a kubelet that starts wipes the node's slices
                            } else {
                              log_error("the kubelet refused the registration: " + error);
                            }
                          },
                      .log = [](const std::string& line) { log(line); }};
    m_publisher = Publisher::start(
        std::move(slices_client), o.node_name, [this] { return inputs(); },
        [](const std::string& line) { log(line); });
    GPUCTK_TRY_ASSIGN(
        m_servers,
        Servers::start(std::string(k_driver_name), plugin_dir + "/dra.sock",
                       o.registry_dir + "/" + std::string(k_driver_name) + "-reg.sock", std::move(hooks)));
    m_xids.start(*m_node, m_policy, *m_board, [this] { m_publisher->poke(); });
    log("serving " + plugin_dir + "/dra.sock (v1.DRAPlugin, v1beta1.DRAPlugin)");
    return {};
  }

  Publisher::Inputs inputs() {
    const std::lock_guard lock(m_node_mutex);
    return {.devices = m_node->devices, .taints = m_board->snapshot()};
  }

  std::map<std::string, PrepareResult> prepare(const std::vector<ClaimRef>& claims) {
    const auto begin = std::chrono::steady_clock::now();
    std::atomic<int64_t> fetching_us{0};  // the API's share of the call
    const ClaimFetch fetch = [&](const std::string& ns, const std::string& name) -> Result<nlohmann::json> {
      const auto asked = std::chrono::steady_clock::now();
      const std::lock_guard lock(m_client_mutex);
      auto claim = m_claims_client->get(claim_path(ns, name));
      fetching_us += microseconds_since(asked);
      if (!claim) {
        return fail("get resourceclaim " + ns + "/" + name + ": " + claim.error().message);
      }
      return *claim;
    };
    auto results = m_preparer->prepare(claims, fetch);
    const std::string took = " (" + std::to_string(microseconds_since(begin)) + " us for the call, " +
                             std::to_string(fetching_us.load()) + " us of them getting claims)";
    for (const auto& claim : claims) {
      const auto it = results.find(claim.uid);
      if (it == results.end()) {
        continue;
      }
      if (it->second.error.empty()) {
        log("prepared claim " + describe(claim) + ": " + std::to_string(it->second.devices.size()) +
            " devices" + took);
      } else {
        log_error("prepare claim " + describe(claim) + ": " + it->second.error);
      }
    }
    return results;
  }

  std::map<std::string, std::string> unprepare(const std::vector<ClaimRef>& claims) {
    auto results = m_preparer->unprepare(claims);
    for (const auto& claim : claims) {
      const auto it = results.find(claim.uid);
      if (it != results.end() && !it->second.empty()) {
        log_error("unprepare claim " + describe(claim) + ": " + it->second);
      } else {
        log("unprepared claim " + describe(claim));
      }
    }
    return results;
  }

  void rediscover() {
    log("SIGHUP: discovering again");
    m_xids.stop();
    auto node = discover_node(m_options);
    if (!node) {
      log_error("rediscovery: " + node.error().message + ": keeping the devices in force");
      m_xids.start(*m_node, m_policy, *m_board, [this] { m_publisher->poke(); });
      return;
    }
    {
      const std::lock_guard lock(m_node_mutex);
      m_node = std::make_shared<const Node>(std::move(*node));
      m_board->clear(m_node->devices);
    }
    m_preparer->set_inventory(m_node->spec, m_node->devices);
    log("discovered " + std::to_string(m_node->devices.size()) + " devices; taints cleared");
    m_xids.start(*m_node, m_policy, *m_board, [this] { m_publisher->poke(); });
    m_publisher->poke();
  }

  Options m_options;
  plugin::XidPolicy m_policy;
  std::mutex m_node_mutex;
  std::shared_ptr<const Node> m_node;
  std::unique_ptr<TaintBoard> m_board;
  std::unique_ptr<Preparer> m_preparer;
  std::mutex m_client_mutex;
  std::optional<kube::Client> m_claims_client;
  std::unique_ptr<Publisher> m_publisher;
  std::unique_ptr<Servers> m_servers;
  XidWatch m_xids;
};

}  // namespace

int run_dra_plugin(std::span<const std::string_view> args) {
  ::mallopt(M_ARENA_MAX, k_malloc_arenas);  // before any thread; failure leaves glibc's default
  auto parsed = parse(args);
  if (const int* status = std::get_if<int>(&parsed)) {
    return *status;
  }
  Daemon daemon(std::move(std::get<Options>(parsed)));
  return daemon.run();
}

}  // namespace gpuctk::dra
