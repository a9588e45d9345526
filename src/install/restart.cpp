#include "install/restart.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <vector>

#include "discover/host_fs.hpp"
#include "install/install.hpp"
#include "util/fd.hpp"
#include "util/strings.hpp"

namespace gpuctk::install {

namespace {

using engine::Engine;

// What each engine's daemon is, and what a signal does to it.
struct EngineService {
  Engine engine;
  std::string_view daemon;  // its executable's file name: the only process its signal is sent to
  std::string_view unit;
  std::string_view socket;
  int signal;                      // 0: no signal makes it read its runtimes again
  std::string_view signal_effect;  // what the signal does
  bool signal_without_systemd;     // auto mode signals it on a node without systemd (the signal is a reload)
};

constexpr std::array<EngineService, 3> k_services = {{
    // containerd has no reload (cmd/containerd: SIGHUP is not handled, Go's default ends the process):
    // SIGTERM is its graceful stop, after which a supervisor must start it.
    {Engine::containerd, "containerd", "containerd.service", "/run/containerd/containerd.sock", SIGTERM,
     "it stops gracefully and its supervisor starts it again with the new config", false},
    // CRI-O reloads only part of its config on SIGHUP (not its runtimes): its unit is restarted.
    {Engine::crio, "crio", "crio.service", "/var/run/crio/crio.sock", 0, "", false},
    // dockerd reloads its runtimes (and default-runtime) on SIGHUP and stays up.
    {Engine::docker, "dockerd", "docker.service", "/var/run/docker.sock", SIGHUP, "it reloads its runtimes",
     true},
}};

const EngineService& service_of(Engine engine) {
  for (const EngineService& service : k_services) {
    if (service.engine == engine) {
      return service;
    }
  }
  return k_services.front();  // every Engine has a row
}

// Where the node's systemctl is, in the order systemd's packages put it.
constexpr std::array<std::string_view, 2> k_systemctl = {"/usr/bin/systemctl", "/bin/systemctl"};

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

enum class Output : uint8_t { inherit, capture };

// Runs the node's systemctl with `args`, chrooted into `host_root`, with only PATH in its environment; it
// must exit 0. Its standard output is returned with Output::capture (at most 4 KiB), else it goes where
// ours goes.
Result<std::string> run_node_systemctl(const std::string& host_root, const std::vector<std::string>& args,
                                       Output output) {
  const std::string what = join(args, " ");
  std::string systemctl;
  for (const std::string_view candidate : k_systemctl) {
    if (::access(discover::under_root(host_root, candidate).c_str(), X_OK) == 0) {
      systemctl = candidate;
      break;
    }
  }
  if (systemctl.empty()) {
    return fail(what + ": no systemctl on the node (" + discover::under_root(host_root, k_systemctl[0]) +
                ")");
  }
  // Everything the child needs is made before the fork: after it the child only makes system calls.
  const std::string root = host_root.empty() ? std::string("/") : host_root;
  std::vector<const char*> argv = {"systemctl"};
  for (const std::string& arg : args) {
    argv.push_back(arg.c_str());
  }
  argv.push_back(nullptr);
  std::array<const char*, 2> envp = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
  std::array<int, 2> pipe_fds = {-1, -1};
  if (output == Output::capture && ::pipe2(pipe_fds.data(), O_CLOEXEC) != 0) {
    return fail_errno(what + ": pipe", errno);
  }
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) {
    return fail_errno(what + ": fork", errno);
  }
  if (pid == 0) {
    if ((write_end.get() < 0 || ::dup2(write_end.get(), STDOUT_FILENO) == STDOUT_FILENO) &&
        ::chroot(root.c_str()) == 0 && ::chdir("/") == 0) {
      ::execve(systemctl.c_str(), const_cast<char* const*>(argv.data()),
               const_cast<char* const*>(envp.data()));
    }
    ::_exit(127);
  }
  write_end.reset();
  std::string out;
  if (read_end.get() >= 0) {
    std::array<char, 4096> buffer{};
    ssize_t n = 0;
    while (out.size() < buffer.size() &&
           ((n = ::read(read_end.get(), buffer.data(), buffer.size())) > 0 || (n < 0 && errno == EINTR))) {
      out.append(buffer.data(), static_cast<size_t>(std::max<ssize_t>(n, 0)));
    }
    read_end.reset();
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return fail_errno(what + ": wait for systemctl", errno);
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return out;
  }
  const std::string how = WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                            : "was killed by " + signal_name(WTERMSIG(status));
  return fail("systemctl " + what + " on the node " + how);
}

// The main process of `unit` on the node, as the node's systemd knows it; 0 when it has none (stopped).
Result<pid_t> unit_main_pid(const std::string& host_root, const std::string& unit) {
  GPUCTK_TRY_ASSIGN(
      const std::string out,
      run_node_systemctl(host_root, {"show", "-p", "MainPID", "--value", unit}, Output::capture));
  const std::string_view text = trim(out);
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size() || pid < 0) {
    return fail("systemctl show -p MainPID " + unit + " on the node: not a pid: " + quote(text));
  }
  return pid;
}

// A process of the node held by a pidfd, once it was found to be the engine's daemon: the signal sent
// through the pidfd never reaches a process that got the pid later.
struct HeldEngine {
  pid_t pid;
  UniqueFd pidfd;
};

// Holds `pid` if it is `service`'s daemon (check_engine_process); the error is check_engine_process's
// phrase, or says why the process could not be looked at.
Result<HeldEngine> hold_engine(const EngineService& service, pid_t pid) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() < 0) {
    return fail_errno("pid " + std::to_string(pid) + " (cannot be opened)", errno);
  }
  // Read once the pidfd is held: should the held process end and its pid be reused before the readlink,
  // the signal sent through the pidfd fails (ESRCH) rather than reach the process that was checked.
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  std::array<char, 4096> exe{};
  const ssize_t n = ::readlink(link.c_str(), exe.data(), exe.size());
  if (n < 0) {
    return fail_errno("pid " + std::to_string(pid) + " (" + link + " cannot be read)", errno);
  }
  GPUCTK_TRY(check_engine_process(service.engine, pid, std::string_view(exe.data(), static_cast<size_t>(n))));
  return HeldEngine{.pid = pid, .pidfd = std::move(pidfd)};
}

Result<void> send_signal(const EngineService& service, const HeldEngine& held, int sig) {
  if (::syscall(SYS_pidfd_send_signal, held.pidfd.get(), sig, nullptr, 0) != 0) {
    return fail_errno("send " + signal_name(sig) + " to " + std::string(service.daemon) + " (pid " +
                          std::to_string(held.pid) + ")",
                      errno);
  }
  return {};
}

// The signal goes to the process listening on the engine's socket when that is the engine's daemon. With
// systemd's socket activation the listener is systemd itself (pid 1), whose SIGHUP reloads systemd and
// whose SIGTERM would stop the node: then it goes to the main process of the engine's unit, if that is the
// daemon; otherwise nothing is signalled, and the error says why.
Result<std::string> signal_engine(const EngineService& service, const RestartPlan& plan,
                                  const RestartTarget& target) {
  GPUCTK_TRY_ASSIGN(const std::string socket, resolve_in_node_root_clamped(target.host_root, target.socket));
  GPUCTK_TRY_ASSIGN(const pid_t listener, socket_owner(socket));
  const std::string effect = std::string(service.signal_effect);
  auto held = hold_engine(service, listener);
  if (held) {
    GPUCTK_TRY(send_signal(service, *held, plan.signal));
    return "sent " + signal_name(plan.signal) + " to " + std::string(service.daemon) + " (pid " +
           std::to_string(listener) + ", serving " + target.socket + "): " + effect;
  }
  const std::string not_signalled =
      "nothing signalled: " + target.socket + " is served by " + held.error().message;
  if (!node_runs_systemd(target.host_root)) {
    return fail(not_signalled);
  }
  GPUCTK_TRY_ASSIGN(const pid_t main_pid, unit_main_pid(target.host_root, target.unit));
  if (main_pid == 0) {
    return fail(not_signalled + ", and " + target.unit + " has no main process");
  }
  auto main_held = hold_engine(service, main_pid);
  if (!main_held) {
    return fail(not_signalled + ", and " + target.unit + "'s main process is " + main_held.error().message);
  }
  GPUCTK_TRY(send_signal(service, *main_held, plan.signal));
  return "sent " + signal_name(plan.signal) + " to " + std::string(service.daemon) + " (pid " +
         std::to_string(main_pid) + ", the main process of " + target.unit + "; " + target.socket +
         " is served by " + held.error().message + "): " + effect;
}

}  // namespace

Result<RestartMode> parse_restart_mode(std::string_view name) {
  if (name == "auto") {
    return RestartMode::automatic;
  }
  if (name == "systemd") {
    return RestartMode::systemd;
  }
  if (name == "signal") {
    return RestartMode::signal;
  }
  if (name == "none") {
    return RestartMode::none;
  }
  return fail("unknown restart mode " + quote(name) + " (want auto, systemd, signal or none)");
}

std::string_view default_unit(Engine engine) {
  return service_of(engine).unit;
}

std::string_view default_socket(Engine engine) {
  return service_of(engine).socket;
}

Result<RestartPlan> plan_restart(RestartMode mode, Engine engine, bool node_runs_systemd) {
  const EngineService& service = service_of(engine);
  switch (mode) {
    case RestartMode::none:
      return RestartPlan{.action = RestartAction::none, .signal = 0, .reason = "--restart-mode none"};
    case RestartMode::systemd:
      return RestartPlan{.action = RestartAction::systemd, .signal = 0, .reason = {}};
    case RestartMode::signal:
      if (service.signal == 0) {
        return fail(std::string(engine::engine_name(engine)) +
                    ": no signal makes CRI-O read its runtimes again; use --restart-mode systemd");
      }
      return RestartPlan{.action = RestartAction::signal, .signal = service.signal, .reason = {}};
    case RestartMode::automatic:
      if (node_runs_systemd) {
        return RestartPlan{.action = RestartAction::systemd, .signal = 0, .reason = {}};
      }
      if (service.signal_without_systemd) {
        return RestartPlan{.action = RestartAction::signal, .signal = service.signal, .reason = {}};
      }
      return RestartPlan{.action = RestartAction::none, .signal = 0, .reason = "the node runs no systemd"};
  }
  return fail("unknown restart mode");
}

bool node_runs_systemd(std::string_view host_root) {
  struct stat st {};
  return ::stat(discover::under_root(host_root, "/run/systemd/system").c_str(), &st) == 0 &&
         S_ISDIR(st.st_mode);
}

Result<void> check_engine_process(Engine engine, pid_t pid, std::string_view exe) {
  const std::string_view daemon = service_of(engine).daemon;
  const std::string who = "pid " + std::to_string(pid) + " (" + std::string(exe) + ")";
  if (pid == 1) {
    return fail(who + ", the node's init, not " + std::string(daemon));
  }
  // The kernel appends " (deleted)" once the file was replaced (an upgrade): the process is still it.
  std::string_view path = exe;
  if (path.ends_with(" (deleted)")) {
    path.remove_suffix(std::string_view(" (deleted)").size());
  }
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || path.substr(slash + 1) != daemon) {
    return fail(who + ", not " + std::string(daemon));
  }
  return {};
}

Result<pid_t> socket_owner(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return fail(path + ": longer than a unix socket path can be (" +
                std::to_string(sizeof(address.sun_path) - 1) + " bytes)");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return fail_errno("socket for " + path, errno);
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return fail_errno("connect " + path, errno);
  }
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
    return fail_errno("SO_PEERCRED of " + path, errno);
  }
  if (credentials.pid <= 0) {
    return fail(path +
                ": its process is in another PID namespace (run the pod with hostPID: true, or use "
                "--restart-mode systemd)");
  }
  return credentials.pid;
}

Result<std::string> restart_engine(const RestartPlan& plan, const RestartTarget& target) {
  const EngineService& service = service_of(target.engine);
  switch (plan.action) {
    case RestartAction::systemd:
      GPUCTK_TRY(run_node_systemctl(target.host_root, {"restart", target.unit}, Output::inherit));
      return "restarted " + target.unit + " through the node's systemd";
    case RestartAction::signal:
      return signal_engine(service, plan, target);
    case RestartAction::none:
      break;
  }
  return fail("restart_engine: nothing to do");
}

}  // namespace gpuctk::install
