#pragma once
// After `gpuctk install` changed an engine's config file, the engine must read it again: containerd,
// CRI-O and docker read their config only at start (docker also on SIGHUP, for its runtimes). From the
// DaemonSet's pod, which sees the node's root at the host root, gpuctk does what NVIDIA's toolkit
// container does, and only when the file changed (or an earlier restart did not happen):
//
//   systemd  the node's systemd restarts the engine's unit: the node's own `systemctl restart <unit>`,
//            run chrooted into the host root, talks to the node's systemd over the node's D-Bus socket
//            (below the host root's /run, which the hostPath volume of / brings along);
//   signal   the engine's daemon gets the engine's signal: the process serving the engine's socket (found
//            by SO_PEERCRED on a connection to it; the pod needs the node's PID namespace, hostPID: true)
//            when it is the daemon (check_engine_process), else, where systemd's socket activation made
//            systemd (pid 1) the listener, the main process of the engine's unit when that is the daemon,
//            else nobody (an error says why); the signals: dockerd SIGHUP
//            (it reloads its runtimes and stays up); containerd SIGTERM (it has no reload: it stops
//            gracefully, its running containers stay, and its supervisor starts it again with the new file;
//            NVIDIA sends SIGHUP, which kills containerd without its shutdown); CRI-O none (a SIGHUP
//            reloads only part of its config, not its runtimes: systemd restarts it);
//   none     nothing, and a line that says the engine must be restarted (the opt-out);
//   auto     (the default) systemd when the node runs systemd (<host root>/run/systemd/system is a
//            directory, as sd_booted() asks); otherwise signal for docker, whose signal is a reload, and
//            none for containerd and CRI-O: stopping a daemon nobody starts again would stop the node.
//
// The restart is remembered as pending (a marker beside the config's backup, state_files' `restart`)
// from before it is tried until it succeeds, so that a restart that failed is tried again by the next
// install, although the config is unchanged then.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/configure.hpp"
#include "util/error.hpp"

namespace gpuctk::install {

enum class RestartMode : uint8_t { automatic, systemd, signal, none };

// "auto", "systemd", "signal", "none"; anything else: `unknown restart mode "x" (want auto, systemd,
// signal or none)`.
Result<RestartMode> parse_restart_mode(std::string_view name);

// What is done about one engine.
enum class RestartAction : uint8_t { systemd, signal, none };

struct RestartPlan {
  RestartAction action = RestartAction::none;
  int signal = 0;      // signal: the signal to send
  std::string reason;  // none: why not, one phrase ("--restart-mode none", "the node runs no systemd")
};

// Pure: the plan for `engine` in `mode` on a node that runs systemd or not. Errors: signal mode for CRI-O
// ("crio: no signal makes CRI-O read its runtimes again; use --restart-mode systemd").
Result<RestartPlan> plan_restart(RestartMode mode, engine::Engine engine, bool node_runs_systemd);

// The engine's systemd unit ("containerd.service", "crio.service", "docker.service") and the socket it
// serves ("/run/containerd/containerd.sock", "/var/run/crio/crio.sock", "/var/run/docker.sock"), on the
// node.
std::string_view default_unit(engine::Engine engine);
std::string_view default_socket(engine::Engine engine);

// Whether the node below `host_root` runs systemd: <host_root>/run/systemd/system is a directory.
bool node_runs_systemd(std::string_view host_root);

// Whether the process `pid`, whose executable is `exe` (as /proc/<pid>/exe reads; " (deleted)" after an
// upgrade replaced the file), is `engine`'s daemon and may get its signal: the executable's file name is the
// daemon's ("containerd", "crio", "dockerd") and the pid is not 1. The process listening on the engine's
// socket is not always the daemon: with systemd's socket activation it is systemd (pid 1), which a SIGHUP
// reloads and a SIGTERM would stop. The error is one phrase naming the process:
//   "pid 1 (/usr/lib/systemd/systemd), the node's init, not dockerd"
//   "pid 42 (/usr/bin/socat), not dockerd"
Result<void> check_engine_process(engine::Engine engine, pid_t pid, std::string_view exe);

// The pid of the process that listens on the unix socket `path` (SO_PEERCRED of a connection to it).
// Errors name the socket: "connect /host/run/containerd/containerd.sock: No such file or directory";
// "/host/run/docker.sock: its process is in another PID namespace (run the pod with hostPID: true, or use
// --restart-mode systemd)" when the kernel reports pid 0.
Result<pid_t> socket_owner(const std::string& path);

struct RestartTarget {
  engine::Engine engine;
  std::string host_root;  // the node's root as this process sees it
  std::string unit;       // systemd: the unit to restart
  std::string socket;     // signal: the engine's socket on the node (resolved below host_root)
};

// Carries out `plan` (the action must not be none) and returns what was done, one line without the
// engine's prefix:
//   "restarted containerd.service through the node's systemd"
//   "sent SIGTERM to containerd (pid 42, serving /run/containerd/containerd.sock): it stops gracefully
//    and its supervisor starts it again with the new config"
//   "sent SIGHUP to dockerd (pid 42, serving /var/run/docker.sock): it reloads its runtimes"
//   "sent SIGHUP to dockerd (pid 42, the main process of docker.service; /var/run/docker.sock is served by
//    pid 1 (/usr/lib/systemd/systemd), the node's init, not dockerd): it reloads its runtimes"
// systemd: the node's systemctl (<host root>/usr/bin/systemctl, else /bin/systemctl) runs chrooted into
// the host root with only PATH in its environment; it must exit 0 ("systemctl restart containerd.service
// on the node exited 1"). signal: the pid is held by a pidfd from before its executable is checked until
// the signal is sent; the unit's main process is asked of the node's systemd (`systemctl show -p MainPID
// --value <unit>`) only when the listener is not the daemon and the node runs systemd. When neither is
// the daemon nothing is signalled: "nothing signalled: /var/run/docker.sock is served by pid 1
// (/usr/lib/systemd/systemd), the node's init, not dockerd, and docker.service has no main process" (or
// "...'s main process is pid 7 (/usr/bin/x), not dockerd"; without systemd the sentence ends after the
// listener).
Result<std::string> restart_engine(const RestartPlan& plan, const RestartTarget& target);

}  // namespace gpuctk::install
