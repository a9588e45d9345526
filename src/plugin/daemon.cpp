#include "plugin/daemon.hpp"

#include <malloc.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "discover/discover.hpp"
#include "discover/nvml.hpp"
#include "kube/curl_library.hpp"
#include "plugin/config.hpp"
#include "plugin/health.hpp"
#include "plugin/lifecycle.hpp"
#include "plugin/log.hpp"
#include "plugin/mps.hpp"
#include "plugin/node.hpp"
#include "plugin/node_config.hpp"
#include "plugin/node_label.hpp"
#include "plugin/resources.hpp"
#include "plugin/server.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC, the timerfd's clock

// glibc's malloc arenas: one. glibc otherwise gives threads arenas of their own (up to 8 per core), and each
// of gRPC's ~10 threads that allocates keeps one, resident; the daemon allocates little and rarely, so one
// lock costs nothing (bench/plugin.sh: about 0.3 MiB less resident, issue 25's 10 MiB goal).
constexpr int k_malloc_arenas = 1;
// The most bytes of a config file read (NVIDIA's are a few hundred bytes).
constexpr size_t k_max_config_file = 1024 * 1024;
// How often a resource waiting for its MPS daemon looks at it again.
constexpr auto k_mps_poll = std::chrono::seconds(1);
// What the config file's folder is watched for: a rewrite in place (closed after writing), a file renamed
// over it, and what a ConfigMap mount does (its "..data" link swapped by a rename; new folders created,
// old ones deleted). Every event leads to a read of the file, acted on only when its bytes changed.
constexpr uint32_t k_config_events = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE;
// The same for the folder of per-node configs (a ConfigMap mounted), where any change may change the choice.
constexpr uint32_t k_srcdir_events = k_config_events | IN_MOVED_FROM;

// SIGTERM, SIGINT, SIGQUIT (stop) and SIGHUP (reload, as NVIDIA's config-manager asks for), blocked before
// any thread starts (gRPC's, the health watch's, the node label's inherit the mask), so that they reach only
// the daemon's signalfd; one that comes before it exists waits for it.
sigset_t daemon_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int signal : {SIGTERM, SIGINT, SIGQUIT, SIGHUP}) {
    sigaddset(&set, signal);
  }
  return set;
}

Result<void> block_signals() {
  const sigset_t set = daemon_signals();
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) {
    return fail("block SIGTERM: pthread_sigmask failed");
  }
  return {};
}

// The blocked signals as a file descriptor.
Result<UniqueFd> signal_fd() {
  GPUCTK_TRY(block_signals());
  const sigset_t set = daemon_signals();
  UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) {
    return fail_errno("signalfd", errno);
  }
  return fd;
}

// The signal read from the descriptor; 0 when none was there.
int read_signal(int fd) {
  signalfd_siginfo info{};
  if (::read(fd, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) {
    return 0;
  }
  return static_cast<int>(info.ssi_signo);
}

std::string signal_name(int signal) {
  const char* name = sigabbrev_np(signal);
  return std::string("SIG") + (name != nullptr ? name : "?");
}

// An inotify descriptor watching `dir` for `mask`.
Result<UniqueFd> watch_dir(const std::string& dir, uint32_t mask) {
  UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd || ::inotify_add_watch(fd.get(), dir.c_str(), mask) < 0) {
    return fail_errno("watch " + dir + " (inotify)", errno);
  }
  return fd;
}

// The names of every event waiting on an inotify descriptor.
std::vector<std::string> read_names(int fd) {
  std::vector<std::string> names;
  alignas(inotify_event) char buffer[4096];
  while (true) {
    const auto n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) {
      return names;  // EAGAIN: all read
    }
    auto more = inotify_names(std::span<const char>(buffer, static_cast<size_t>(n)));
    names.insert(names.end(), more.begin(), more.end());
  }
}

// Arms the timer for `at` (disarms it for nullopt); a time past fires at once.
void arm_timer(int fd, std::optional<Clock::time_point> at) {
  itimerspec spec{};
  if (at) {
    const auto since = at->time_since_epoch();
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
    spec.it_value.tv_sec = secs.count();
    spec.it_value.tv_nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(since - secs).count();
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) {
      spec.it_value.tv_nsec = 1;  // zero would disarm it
    }
  }
  ::timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

// An environment variable's value; "" when unset.
std::string_view variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::optional<Clock::time_point> earliest(std::initializer_list<std::optional<Clock::time_point>> times) {
  std::optional<Clock::time_point> out;
  for (const auto& t : times) {
    if (t && (!out || *t < *out)) {
      out = t;
    }
  }
  return out;
}

// Why auto discovery left the driver root's NVML out although it is there: it did not start (asked again:
// discover() keeps that only as a warning). "" when NVML was used, is missing, or starts now.
std::string nvml_start_error(const Config& config, const discover::Inventory& inventory,
                             const std::string& driver_root) {
  if (config.discovery != discover::Mode::automatic || inventory.gpu_source == discover::GpuSource::nvml) {
    return {};
  }
  auto library = discover::find_nvml_library(driver_root);
  if (!library) {
    return {};
  }
  auto session = discover::Nvml::open(*library);
  return session ? std::string() : session.error().message;
}

// A device set under `config`: discovery, the resources, NVML's topology. Errors are a start's failures
// (failOnInitError decides what they do).
Result<std::unique_ptr<Node>> prepare(const Config& config) {
  auto node = std::make_unique<Node>();
  node->config = config;
  const discover::DiscoverOptions options = discover_options(config);
  struct stat st {};
  GPUCTK_TRY_ASSIGN(node->inventory, discover::discover(options));
  const auto version_file = clean_path(options.dev_root + "/proc/driver/nvidia/version");
  GPUCTK_TRY(check_nvml_start(config, nvml_start_error(config, node->inventory, options.driver_root),
                              version_file, ::stat(version_file.c_str(), &st) == 0));
  for (const auto& warning : node->inventory.warnings) {
    log(warning);
  }
  std::vector<std::string> warnings;
  // NVIDIA's start-up check, made again at every start: a reload may name other channels.
  GPUCTK_TRY(check_imex_channels(node->config, options.dev_root, warnings));
  const auto numa = read_numa_nodes(options.dev_root, node->inventory);
  GPUCTK_TRY_ASSIGN(node->resources, build_resources(node->inventory, config, numa, warnings));
  for (const auto& warning : warnings) {
    log(warning);
  }
  if (node->inventory.gpu_source != discover::GpuSource::nvml || node->inventory.nvml_library.empty()) {
    // The log is the only place to say it: v1beta1's Device has an ID, a health and a topology, no reason.
    log("no NVML (GPUs from " + node->inventory.gpus_from +
        "): every device is reported healthy and not watched, and GetPreferredAllocation knows no links");
    return node;
  }
  GPUCTK_TRY_ASSIGN(auto nvml, discover::Nvml::open(node->inventory.nvml_library));
  auto topology = nvml.topology();
  if (topology) {
    node->links = std::move(topology->links);
    for (const auto& warning : topology->warnings) {
      log("topology: " + warning);
    }
  } else {
    log("topology: " + topology.error().message + ": GetPreferredAllocation knows no links");
  }
  return node;  // the session closes: the health watch opens its own
}

// Per-node configs (node_config.hpp): the config the node's label picks among options.srcdir's, written to
// --config-file. Returns whether the file's bytes changed.
Result<bool> choose_config(const NodeConfigOptions& options, const std::optional<std::string>& label) {
  GPUCTK_TRY_ASSIGN(const auto available, list_configs(options.srcdir));
  GPUCTK_TRY_ASSIGN(const auto chosen, select_config(options, available, label));
  GPUCTK_TRY_ASSIGN(const bool changed, write_chosen_config(options, chosen));
  if (changed) {
    log("per-node config: " + (chosen ? quote(*chosen) : std::string("none (the built-in defaults)")) +
        " written to " + options.destination);
  }
  return changed;
}

// Per-node configs in force: the options and the node label's watch and last value (no watch when off).
struct NodeConfigs {
  NodeConfigOptions options;
  std::unique_ptr<NodeLabel> label;
  std::optional<std::string> value;
};

// The daemon's life after its configuration was read: one poll loop on a signalfd, two inotify descriptors
// (kubelet.sock's folder, the config file's) and a timerfd (Register's backoff, the MPS wait, the retry of
// a failed start); with per-node configs also the node label's eventfd and an inotify descriptor on their
// folder. daemon.hpp says what each event does.
class Daemon {
 public:
  Daemon(Overrides overrides, Config config, std::string file_bytes, XidPolicy policy,
         NodeConfigs node_configs)
      : m_overrides(std::move(overrides)),
        m_config(std::move(config)),
        m_file_seen(std::move(file_bytes)),
        m_policy(std::move(policy)),
        m_dir(parent_path(m_config.kubelet_socket)),
        m_kubelet_name(m_config.kubelet_socket.substr(m_dir.size() + 1)),
        m_per_node(std::move(node_configs)) {}

  int run() {
    if (auto opened = open_fds(); !opened) {
      log_error(opened.error().message);
      return 1;
    }
    start();
    while (!m_exit) {
      wait_once();
    }
    stop_servers();
    m_watch.stop();
    m_node.reset();
    if (*m_exit == 0) {
      log("stopped");  // a failure's one line stays the last
    }
    return *m_exit;
  }

 private:
  Result<void> open_fds() {
    GPUCTK_TRY_ASSIGN(m_signals, signal_fd());
    // Watched before the first registration, so that a kubelet starting in between is seen.
    GPUCTK_TRY_ASSIGN(m_kubelet_watch, watch_dir(m_dir, IN_CREATE | IN_MOVED_TO));
    if (!m_config.config_file.empty()) {
      GPUCTK_TRY_ASSIGN(m_config_watch, watch_dir(parent_path(m_config.config_file), k_config_events));
    }
    if (m_per_node.label) {
      GPUCTK_TRY_ASSIGN(m_srcdir_watch, watch_dir(m_per_node.options.srcdir, k_srcdir_events));
    }
    m_timer = UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!m_timer) {
      return fail_errno("timerfd_create", errno);
    }
    return {};
  }

  // One poll(2) and what its events ask for.
  void wait_once() {
    arm_timer(m_timer.get(), earliest({m_retry_at, m_register_at, m_mps_at}));
    pollfd fds[6] = {{.fd = m_signals.get(), .events = POLLIN, .revents = 0},
                     {.fd = m_kubelet_watch.get(), .events = POLLIN, .revents = 0},
                     {.fd = m_config_watch ? m_config_watch.get() : -1, .events = POLLIN, .revents = 0},
                     {.fd = m_timer.get(), .events = POLLIN, .revents = 0},
                     {.fd = m_per_node.label ? m_per_node.label->fd() : -1, .events = POLLIN, .revents = 0},
                     {.fd = m_srcdir_watch ? m_srcdir_watch.get() : -1, .events = POLLIN, .revents = 0}};
    if (::poll(fds, 6, -1) < 0) {
      if (errno != EINTR) {
        log_error(fail_errno("poll", errno).error().message);
        m_exit = 1;
      }
      return;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      on_signal(read_signal(m_signals.get()));
    }
    if (!m_exit && (fds[1].revents & POLLIN) != 0) {
      const auto names = read_names(m_kubelet_watch.get());
      if (std::ranges::find(names, m_kubelet_name) != names.end()) {
        log(m_config.kubelet_socket + " was created (the kubelet started again): discovering again");
        start();
      }
    }
    // Before the config file's own events: the choice may rewrite the file.
    const bool label_changed = (fds[4].revents & POLLIN) != 0;
    if (label_changed) {
      m_per_node.value = m_per_node.label->value();
    }
    if (!m_exit &&
        (label_changed || ((fds[5].revents & POLLIN) != 0 && !read_names(m_srcdir_watch.get()).empty()))) {
      on_node_config_event();
    }
    if (!m_exit && (fds[2].revents & POLLIN) != 0 && !read_names(m_config_watch.get()).empty()) {
      on_config_event();
    }
    if (!m_exit && (fds[3].revents & POLLIN) != 0) {
      on_timer();
    }
  }

  void on_signal(int signal) {
    if (signal == 0) {
      return;
    }
    if (signal == SIGHUP) {
      reload("SIGHUP");
      return;
    }
    log("stopping on " + signal_name(signal));
    m_exit = 0;
  }

  // The config file's folder changed: a reload when the file's bytes did.
  void on_config_event() {
    auto bytes = read_file(m_config.config_file, k_max_config_file);
    // An unreadable file is remembered by its error, so that it is reported once, not at every event.
    std::string seen = bytes ? *bytes : std::string("\0", 1) + bytes.error().message;
    if (seen == m_file_seen) {
      return;
    }
    m_file_seen = std::move(seen);
    reload(m_config.config_file + " changed");
  }

  // The node's label or the folder of per-node configs changed: the config chosen again and, when that
  // changed the config file, a reload. A choice that fails (the label names no config) is one error line
  // and changes nothing.
  void on_node_config_event() {
    auto changed = choose_config(m_per_node.options, m_per_node.value);
    if (!changed) {
      // Said once: a ConfigMap's update is several events, each failing the same way until it is complete.
      if (changed.error().message != m_per_node_failure) {
        m_per_node_failure = changed.error().message;
        log_error("per-node config: " + changed.error().message + ": keeping the configuration in force");
      }
      return;
    }
    m_per_node_failure.clear();
    if (*changed) {
      on_config_event();
    }
  }

  void on_timer() {
    uint64_t expirations = 0;
    [[maybe_unused]] const auto n = ::read(m_timer.get(), &expirations, sizeof expirations);
    const auto now = Clock::now();
    if (m_retry_at && now >= *m_retry_at) {
      m_retry_at.reset();
      start();
    }
    if (!m_exit && ((m_register_at && now >= *m_register_at) || (m_mps_at && now >= *m_mps_at))) {
      register_pending();
    }
  }

  // SIGHUP or a changed file: the new configuration, rediscovery and new servers, or (an invalid
  // configuration, a failed discovery) one error line and nothing changed.
  void reload(const std::string& why) {
    log("reloading the configuration (" + why + ")");
    auto config = read_config();
    if (auto built = config ? rebuild(*config) : Result<void>(std::unexpected(config.error())); !built) {
      log_error("reload: " + built.error().message + ": keeping the configuration in force");
      return;
    }
    for (const auto& warning : m_config.warnings) {
      log(warning);
    }
    log("reloaded (" + why + ")");
  }

  Result<Config> read_config() {
    std::optional<std::string> text;
    if (!m_config.config_file.empty()) {
      auto bytes = read_file(m_config.config_file, k_max_config_file);
      if (!bytes) {
        m_file_seen = std::string("\0", 1) + bytes.error().message;
        return fail(m_config.config_file + ": " + bytes.error().message);
      }
      m_file_seen = *bytes;
      text = std::move(*bytes);
    }
    return resolve_config(m_overrides, text);
  }

  // A start, a retry or a kubelet restart: a new device set under the configuration in force. A failure
  // ends the daemon (failOnInitError) or leaves it serving nothing, trying again every retry interval.
  void start() {
    auto built = rebuild(m_config);
    if (built) {
      return;
    }
    if (m_config.fail_on_init_error) {
      log_error(built.error().message);
      m_exit = 1;
      return;
    }
    stop_servers();
    m_node.reset();
    m_register_at.reset();
    m_mps_at.reset();
    if (built.error().message != m_last_failure) {
      m_last_failure = built.error().message;
      log(built.error().message + " (failOnInitError is false): serving nothing, trying again every " +
          std::to_string(m_config.retry_interval.count()) + " s and when the kubelet restarts");
    }
    m_retry_at = Clock::now() + m_config.retry_interval;
  }

  // A device set under `config`, swapped in when complete: the old servers stop, the new ones serve and
  // register. On failure the old set goes on (its watch started again) and the error is returned. The
  // watch stops first: NVML must be closed for discovery to read it anew.
  Result<void> rebuild(const Config& config) {
    m_watch.stop();
    auto node = prepare(config);
    if (!node) {
      if (m_node) {
        m_watch.start(*m_node, m_policy);
      }
      return std::unexpected(node.error());
    }
    if (m_node) {
      const auto changes = resource_changes(m_node->resources, (*node)->resources);
      for (const auto& change : changes) {
        log("changed: " + change);
      }
      if (changes.empty()) {
        log("the same devices as before");
      }
    }
    stop_servers();
    m_node = std::move(*node);
    m_config = m_node->config;
    activate();
    return {};
  }

  // The device set in force is watched and served, and registers.
  void activate() {
    m_retry_at.reset();
    m_register_at.reset();
    m_mps_at.reset();
    m_last_failure.clear();
    m_mps_waiting.clear();
    m_backoff.reset();
    if (m_node->resources.empty()) {
      log("no devices found: serving nothing until a reload or a kubelet restart");
      return;
    }
    m_watch.start(*m_node, m_policy);
    for (const auto& resource : m_node->resources) {
      auto server = PluginServer::serve(resource, *m_node, m_dir);
      if (!server) {
        log_error(server.error().message + " (served again at a reload or a kubelet restart)");
        continue;
      }
      m_servers.push_back(std::move(*server));
    }
    register_pending();
  }

  void stop_servers() {
    for (auto& server : m_servers) {
      server->stop();
    }
    m_servers.clear();
  }

  // Whether `server` may register: not an MPS-shared resource, or one whose MPS daemon is ready. The wait
  // is logged once, and so is its end.
  bool mps_allows(const PluginServer& server) {
    const auto& name = server.resource().name;
    if (!shared_through_mps(m_node->config, server.resource())) {
      return true;
    }
    if (auto ready = mps_ready(m_node->config.mps_root, name); !ready) {
      if (m_mps_waiting.insert(name).second) {
        log("waiting for the MPS daemon of " + name + " before registering it: " + ready.error().message);
      }
      return false;
    }
    if (m_mps_waiting.erase(name) > 0) {
      log("the MPS daemon of " + name + " is ready");
    }
    return true;
  }

  // Registers every server not yet registered that may, unless a failed Register's backoff is running:
  // a failure starts (or lengthens) it; a resource waiting for its MPS daemon is looked at every second.
  // Nothing happens while kubelet.sock is missing: its creation restarts everything.
  void register_pending() {
    const auto now = Clock::now();
    const bool backing_off = m_register_at && now < *m_register_at;
    m_mps_at.reset();
    struct stat st {};
    if (::stat(m_config.kubelet_socket.c_str(), &st) != 0) {
      if (!m_waiting_for_kubelet) {
        log("waiting for " + m_config.kubelet_socket + " (the kubelet) to register");
      }
      m_waiting_for_kubelet = true;
      m_register_at.reset();
      return;
    }
    m_waiting_for_kubelet = false;
    std::optional<std::string> failure;
    for (auto& server : m_servers) {
      if (server->registered()) {
        continue;
      }
      if (!mps_allows(*server)) {
        m_mps_at = now + k_mps_poll;
      } else if (!backing_off) {
        if (auto done = server->register_with(m_config.kubelet_socket); !done) {
          failure = done.error().message;
        }
      }
    }
    if (backing_off) {
      return;
    }
    if (failure) {
      const auto delay = m_backoff.next();
      log(*failure + ": trying again in " + std::to_string(delay.count()) + " s");
      m_register_at = now + delay;
    } else {
      m_register_at.reset();
      m_backoff.reset();
    }
  }

  Overrides m_overrides;
  Config m_config;          // the configuration in force (the last valid one)
  std::string m_file_seen;  // the config file's bytes last acted on (or "\0" + why it was unreadable)
  XidPolicy m_policy;
  std::string m_dir;  // kubelet.sock's folder, where the plugins' sockets go
  std::string m_kubelet_name;
  UniqueFd m_signals;
  UniqueFd m_kubelet_watch;
  UniqueFd m_config_watch;  // none without a config file
  UniqueFd m_timer;
  NodeConfigs m_per_node;
  UniqueFd m_srcdir_watch;         // the folder of per-node configs, with them only
  std::string m_per_node_failure;  // the failed choice last logged
  std::unique_ptr<Node> m_node;    // none while serving nothing after a failed start
  HealthWatch m_watch;
  std::vector<std::unique_ptr<PluginServer>> m_servers;
  Backoff m_backoff;
  std::optional<Clock::time_point> m_retry_at;     // the next try of a failed start
  std::optional<Clock::time_point> m_register_at;  // the end of a failed Register's backoff
  std::optional<Clock::time_point> m_mps_at;       // the next look at the MPS daemons waited for
  std::set<std::string> m_mps_waiting;             // the resources whose wait was logged
  std::string m_last_failure;                      // the failed start last logged
  bool m_waiting_for_kubelet = false;              // the wait for kubelet.sock was logged
  std::optional<int> m_exit;
};

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
    // libcurl is loaded here only to say it can be (per-node configs need it): build-image.sh's check.
    std::printf("gpuctk-device-plugin %s (device plugin API %s, %s)\n", GPUCTK_VERSION, k_api_version,
                kube::curl_version().c_str());
    return 0;
  }
  auto node_options = resolve_node_config_options(arguments->overrides);
  if (!node_options) {
    log_error(node_options.error().message);
    return 1;
  }
  // Per-node configs: the label read before the config file, which the choice writes. The label's watch is
  // the first thread.
  if (auto blocked = block_signals(); !blocked) {
    log_error(blocked.error().message);
    return 1;
  }
  NodeConfigs node_configs{.options = std::move(*node_options), .label = nullptr, .value = std::nullopt};
  if (node_configs.options.enabled()) {
    auto started = NodeLabel::start(node_configs.options);
    if (!started) {
      log_error(started.error().message);
      return 1;
    }
    node_configs.label = std::move(*started);
    node_configs.value = node_configs.label->value();
    if (auto chosen = choose_config(node_configs.options, node_configs.value); !chosen) {
      log_error("per-node config: " + chosen.error().message);
      return 1;
    }
  }
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
  for (const auto& warning : config->warnings) {
    log(warning);
  }
  std::vector<std::string> notes;
  auto policy =
      XidPolicy::from(variable("DP_DISABLE_HEALTHCHECKS"), variable("DP_ENABLE_HEALTHCHECKS"), notes);
  for (const auto& note : notes) {
    log(note);
  }
  Daemon daemon(std::move(arguments->overrides), std::move(*config), file_text.value_or(""),
                std::move(policy), std::move(node_configs));
  return daemon.run();
}

}  // namespace gpuctk::plugin
