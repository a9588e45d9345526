#include "plugin/mps_daemon.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "discover/discover.hpp"
#include "discover/nvml.hpp"
#include "discover/nvml_abi.h"
#include "plugin/config.hpp"
#include "plugin/mps.hpp"
#include "plugin/mps_control.hpp"
#include "plugin/mps_daemon_host.hpp"
#include "plugin/resources.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

// NVIDIA's mps-control-daemon tries a failed start again after this long.
constexpr int k_retry_ms = 30 * 1000;
constexpr size_t k_max_config_file = 1024 * 1024;  // as gpuctk-device-plugin reads it
constexpr std::string_view k_binary_flag = "--mps-control-binary";
constexpr const char* k_binary_variable = "MPS_CONTROL_BINARY";
constexpr const char* k_ready_name = ".ready";

void log_line(std::string_view prefix, std::string_view text) {
  std::string line = "gpuctk-mps-control-daemon: ";
  line.append(prefix).append(escape_for_log(text)).push_back('\n');
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line.data(), line.size());
}
void log(std::string_view text) {
  log_line("", text);
}
void log_error(std::string_view text) {
  log_line("error: ", text);
}

// The command line without gpuctk-mps-control-daemon's own flag, and that flag's value (else its variable).
struct OwnArguments {
  std::vector<std::string_view> rest;
  std::string control_binary;
};

Result<OwnArguments> split_arguments(std::span<const std::string_view> args) {
  OwnArguments out;
  const char* variable = std::getenv(k_binary_variable);
  out.control_binary = variable != nullptr ? variable : "";
  for (size_t i = 0; i < args.size(); ++i) {
    const auto arg = args[i];
    if (arg == k_binary_flag) {
      if (i + 1 == args.size()) {
        return fail(std::string(k_binary_flag) + ": needs a value");
      }
      out.control_binary = std::string(args[++i]);
    } else if (arg.starts_with(std::string(k_binary_flag) + "=")) {
      out.control_binary = std::string(arg.substr(k_binary_flag.size() + 1));
    } else {
      out.rest.push_back(arg);
    }
  }
  return out;
}

Result<Config> load_config(const Overrides& overrides) {
  std::optional<std::string> file_text;
  if (const auto it = overrides.find("config-file"); it != overrides.end()) {
    auto text = read_file(it->second.value, k_max_config_file);
    if (!text) {
      return fail_with(it->second.origin, text.error());
    }
    file_text = std::move(*text);
  }
  return resolve_config(overrides, file_text);
}

// The device plugin's discovery and resources, fresh (a MIG change or a new GPU since the last start).
Result<std::vector<Resource>> discover_resources(const Config& config, std::string& nvml_library) {
  const discover::DiscoverOptions options = discover_options(config);
  GPUCTK_TRY_ASSIGN(const auto inventory, discover::discover(options));
  std::vector<std::string> warnings;
  const auto numa = read_numa_nodes(options.dev_root, inventory);
  GPUCTK_TRY_ASSIGN(auto resources, build_resources(inventory, config, numa, warnings));
  for (const auto& warning : warnings) {
    log(warning);
  }
  if (inventory.gpu_source != discover::GpuSource::nvml || inventory.nvml_library.empty()) {
    return fail("no NVML (GPUs from " + inventory.gpus_from +
                "): MPS needs it to set the GPUs' compute mode");
  }
  nvml_library = inventory.nvml_library;
  return resources;
}

// One started control daemon and what its stop undoes.
struct Running {
  MpsDaemonPlan plan;
  UniqueFd resource_dir;  // <root>/<resource>
  UniqueFd pipe_dir;
  std::vector<uint32_t> exclusive;  // GPUs set to EXCLUSIVE_PROCESS
  bool started = false;             // `-d` ran: `quit` is due
};

// Everything one start made; stop() undoes it in reverse, whatever failed.
class Session {
 public:
  Session(const Config& config, std::string program) : m_config(config), m_program(std::move(program)) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { stop(); }

  Result<void> start() {
    std::string library;
    GPUCTK_TRY_ASSIGN(const auto resources, discover_resources(m_config, library));
    GPUCTK_TRY_ASSIGN(const auto plans, plan_mps_daemons(m_config, resources));
    if (plans.empty()) {
      log("no resource is shared through MPS on this node");
      return {};
    }
    GPUCTK_TRY_ASSIGN(m_nvml, discover::Nvml::open(library));
    GPUCTK_TRY_ASSIGN(m_root, mps_host::open_root(m_config.mps_root));
    GPUCTK_TRY(mount_shm());
    for (const auto& plan : plans) {
      Running running;
      running.plan = plan;
      m_daemons.push_back(std::move(running));
      GPUCTK_TRY(fail_prefixed(plan.resource, start_daemon(m_daemons.back())));
    }
    return {};
  }

  void stop() {
    for (auto it = m_daemons.rbegin(); it != m_daemons.rend(); ++it) {
      stop_daemon(*it);
    }
    m_daemons.clear();
    if (m_shm_mounted) {
      if (auto done = mps_host::unmount_shm(m_config.mps_root); !done) {
        log_error(done.error().message);
      }
      m_shm_mounted = false;
    }
    mps_host::reap_children();
  }

 private:
  static Result<void> fail_prefixed(const std::string& resource, Result<void> result) {
    if (!result) {
      return fail_with(resource, result.error());
    }
    return {};
  }

  Result<void> mount_shm() {
    auto meminfo = read_file("/proc/meminfo", k_max_meminfo);
    const std::string size = mps_shm_size(meminfo ? *meminfo : "");
    GPUCTK_TRY(mps_host::mount_shm(m_root.get(), m_config.mps_root, size));
    m_shm_mounted = true;
    log("mounted a tmpfs of " + size + " on " + mps_shm_dir(m_config.mps_root));
    return {};
  }

  Result<std::string> control(const Running& d, const std::string& command) {
    const auto deadline = std::chrono::steady_clock::now() + k_mps_command_timeout;
    return mps_host::run_program(m_program, {}, d.plan.environment, command + "\n", deadline,
                                 k_mps_max_answer);
  }

  Result<void> start_daemon(Running& d) {
    GPUCTK_TRY_ASSIGN(const auto components, mps_resource_components(d.plan.resource));
    GPUCTK_TRY_ASSIGN(d.resource_dir, mps_host::make_dirs_at(m_root.get(), m_config.mps_root, components));
    const auto resource_path = mps_resource_dir(m_config.mps_root, d.plan.resource);
    GPUCTK_TRY(mps_host::remove_marker(d.resource_dir.get(), k_ready_name,
                                       mps_ready_file(m_config.mps_root, d.plan.resource)));
    GPUCTK_TRY_ASSIGN(d.pipe_dir, mps_host::make_dirs_at(d.resource_dir.get(), resource_path, {"pipe"}));
    GPUCTK_TRY(mps_host::make_dirs_at(d.resource_dir.get(), resource_path, {"log"}));
    for (const uint32_t gpu : d.plan.gpus) {
      GPUCTK_TRY(m_nvml->set_compute_mode(gpu, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS));
      d.exclusive.push_back(gpu);
    }
    GPUCTK_TRY(launch(d));
    for (const auto& command : d.plan.commands) {
      GPUCTK_TRY(control(d, command));
      log(d.plan.resource + ": " + command);
    }
    GPUCTK_TRY_ASSIGN(const auto answer, control(d, "get_default_active_thread_percentage"));
    GPUCTK_TRY(check_thread_percentage(answer, d.plan.thread_percentage));
    GPUCTK_TRY(mps_host::write_marker(d.resource_dir.get(), k_ready_name,
                                      mps_ready_file(m_config.mps_root, d.plan.resource)));
    log(d.plan.resource + ": ready (GPUs " + join(d.plan.uuids, ",") + ")");
    return {};
  }

  // `nvidia-cuda-mps-control -d`, after a daemon an earlier run left listening there is told to quit.
  Result<void> launch(Running& d) {
    if (mps_host::control_listening(d.pipe_dir.get())) {
      log(d.plan.resource + ": a control daemon of an earlier run still listens: quitting it");
      d.started = true;
      quit(d);
    }
    const auto deadline = std::chrono::steady_clock::now() + k_mps_start_timeout;
    d.started = true;
    GPUCTK_TRY(mps_host::run_program(m_program, {"-d"}, d.plan.environment, "", deadline, k_mps_max_answer));
    if (!mps_host::wait_control(d.pipe_dir.get(), true, deadline)) {
      return fail(m_program + " -d: no control socket in " + d.plan.pipe_dir + " after " +
                  std::to_string(k_mps_start_timeout.count()) + " s");
    }
    log(d.plan.resource + ": started " + m_program + " -d (" + join(d.plan.environment, " ") + ")");
    return {};
  }

  void quit(Running& d) {
    if (auto sent = control(d, "quit"); !sent) {
      log_error(d.plan.resource + ": " + sent.error().message);
    }
    const auto deadline = std::chrono::steady_clock::now() + k_mps_quit_timeout;
    if (!mps_host::wait_control(d.pipe_dir.get(), false, deadline)) {
      log_error(d.plan.resource + ": the control daemon still listens " +
                std::to_string(k_mps_quit_timeout.count()) + " s after quit");
    }
    d.started = false;
  }

  void stop_daemon(Running& d) {
    if (d.resource_dir) {
      const auto ready = mps_ready_file(m_config.mps_root, d.plan.resource);
      if (auto removed = mps_host::remove_marker(d.resource_dir.get(), k_ready_name, ready); !removed) {
        log_error(removed.error().message);
      }
    }
    if (d.started) {
      quit(d);
      log(d.plan.resource + ": the control daemon quit");
    }
    for (const uint32_t gpu : d.exclusive) {
      if (auto reset = m_nvml->set_compute_mode(gpu, NVML_COMPUTEMODE_DEFAULT); !reset) {
        log_error(d.plan.resource + ": " + reset.error().message);
      }
    }
    d.exclusive.clear();
  }

  const Config& m_config;
  std::string m_program;
  std::optional<discover::Nvml> m_nvml;
  UniqueFd m_root;
  bool m_shm_mounted = false;
  std::vector<Running> m_daemons;
};

// SIGTERM, SIGINT, SIGQUIT and SIGHUP as a file descriptor.
Result<UniqueFd> signal_fd() {
  sigset_t set;
  sigemptyset(&set);
  for (const int signal : {SIGTERM, SIGINT, SIGQUIT, SIGHUP}) {
    sigaddset(&set, signal);
  }
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
    return fail_errno("block SIGTERM", errno);
  }
  UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC));
  if (!fd) {
    return fail_errno("signalfd", errno);
  }
  return fd;
}

// The next signal within `timeout_ms` (-1: for ever); 0 when none came.
int next_signal(int fd, int timeout_ms) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  while (true) {
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      return 0;
    }
    signalfd_siginfo info{};
    if (::read(fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      return static_cast<int>(info.ssi_signo);
    }
  }
}

std::string signal_name(int signal) {
  const char* name = sigabbrev_np(signal);
  return std::string("SIG") + (name != nullptr ? name : "?");
}

// One start and what ends it: a stop signal (its number), SIGHUP, or 0 when a failed start's retry is due.
// What started is stopped before it returns.
int run_once(const Config& config, const std::string& program, int signals) {
  Session session(config, program);
  auto started = session.start();
  if (!started) {
    log_error(started.error().message + ": stopping what started, trying again in 30 s");
    session.stop();
  }
  const int signal = next_signal(signals, started ? -1 : k_retry_ms);
  log(signal == 0 ? "restarting" : "stopping on " + signal_name(signal));
  session.stop();
  return signal;
}

// Starts, waits, restarts on SIGHUP (the file read again) or after a failure, stops on the other signals.
int serve(const Overrides& overrides, Config config, const std::string& program, int signals) {
  while (true) {
    const int signal = run_once(config, program, signals);
    if (signal != 0 && signal != SIGHUP) {
      log("stopped");
      return 0;
    }
    if (auto reloaded = load_config(overrides); reloaded) {
      config = std::move(*reloaded);
    } else {
      log_error(reloaded.error().message + ": keeping the previous configuration");
    }
  }
}

}  // namespace

int run_mps_control_daemon(std::span<const std::string_view> args) {
  auto own = split_arguments(args);
  if (!own) {
    log_error(own.error().message);
    return 2;
  }
  auto arguments = parse_arguments(own->rest, [](const char* name) { return std::getenv(name); });
  if (!arguments) {
    log_error(arguments.error().message);
    return 2;
  }
  if (arguments->action == Action::help) {
    std::printf(
        "Usage: gpuctk-mps-control-daemon [flags]\n  %s PATH  [%s]\n      the MPS control program "
        "(default: %s on PATH)\nand gpuctk-device-plugin's flags:\n%s",
        std::string(k_binary_flag).c_str(), k_binary_variable, std::string(k_mps_control_program).c_str(),
        usage().c_str());
    return 0;
  }
  if (arguments->action == Action::version) {
    std::printf("gpuctk-mps-control-daemon %s\n", GPUCTK_VERSION);
    return 0;
  }
  auto config = load_config(arguments->overrides);
  if (!config) {
    log_error(config.error().message);
    return 1;
  }
  auto signals = signal_fd();
  if (!signals) {
    log_error(signals.error().message);
    return 1;
  }
  if (config->sharing != labels::SharingStrategy::mps) {
    log("the sharing strategy is not MPS (sharing.mps): no MPS daemon to run, waiting for SIGTERM");
    int signal = 0;
    while ((signal = next_signal(signals->get(), -1)) == SIGHUP) {
    }
    log("stopping on " + signal_name(signal));
    return 0;
  }
  auto program = mps_host::find_program(own->control_binary, k_mps_control_program);
  if (!program) {
    log_error(program.error().message);
    return 1;
  }
  // The control daemons fork away from their parent: as a subreaper this process still reaps them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  return serve(arguments->overrides, std::move(*config), *program, signals->get());
}

}  // namespace gpuctk::plugin
