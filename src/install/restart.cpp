#include "install/restart.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

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
  std::string_view daemon;  // its process's name, for messages
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

// Runs the node's systemctl with `args`, chrooted into `host_root`; its output goes where ours goes.
Result<void> run_node_systemctl(const std::string& host_root, const std::string& unit) {
  std::string systemctl;
  for (const std::string_view candidate : k_systemctl) {
    if (::access(discover::under_root(host_root, candidate).c_str(), X_OK) == 0) {
      systemctl = candidate;
      break;
    }
  }
  if (systemctl.empty()) {
    return fail("restart " + unit + ": no systemctl on the node (" +
                discover::under_root(host_root, k_systemctl[0]) + ")");
  }
  // Everything the child needs is made before the fork: after it the child only makes system calls.
  const std::string root = host_root.empty() ? std::string("/") : host_root;
  std::array<const char*, 4> argv = {"systemctl", "restart", unit.c_str(), nullptr};
  std::array<const char*, 2> envp = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    return fail_errno("restart " + unit + ": fork", errno);
  }
  if (pid == 0) {
    if (::chroot(root.c_str()) == 0 && ::chdir("/") == 0) {
      ::execve(systemctl.c_str(), const_cast<char* const*>(argv.data()),
               const_cast<char* const*>(envp.data()));
    }
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return fail_errno("restart " + unit + ": wait for systemctl", errno);
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return {};
  }
  const std::string how = WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                            : "was killed by " + signal_name(WTERMSIG(status));
  return fail("systemctl restart " + unit + " on the node " + how);
}

Result<std::string> signal_engine(const EngineService& service, const RestartPlan& plan,
                                  const RestartTarget& target) {
  GPUCTK_TRY_ASSIGN(const std::string socket, resolve_in_node_root_clamped(target.host_root, target.socket));
  GPUCTK_TRY_ASSIGN(const pid_t pid, socket_owner(socket));
  // Held from here, so that the signal never reaches a process that got the pid later.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() < 0) {
    return fail_errno("open process " + std::to_string(pid) + " (serving " + target.socket + ")", errno);
  }
  if (::syscall(SYS_pidfd_send_signal, pidfd.get(), plan.signal, nullptr, 0) != 0) {
    return fail_errno("send " + signal_name(plan.signal) + " to " + std::string(service.daemon) + " (pid " +
                          std::to_string(pid) + ")",
                      errno);
  }
  return "sent " + signal_name(plan.signal) + " to " + std::string(service.daemon) + " (pid " +
         std::to_string(pid) + ", serving " + target.socket + "): " + std::string(service.signal_effect);
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
      GPUCTK_TRY(run_node_systemctl(target.host_root, target.unit));
      return "restarted " + target.unit + " through the node's systemd";
    case RestartAction::signal:
      return signal_engine(service, plan, target);
    case RestartAction::none:
      break;
  }
  return fail("restart_engine: nothing to do");
}

}  // namespace gpuctk::install
