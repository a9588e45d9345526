#pragma once
// `gpuctk install` end to end: what NVIDIA's toolkit container does on a node, from a privileged pod
// that sees the node's root at a host root. Installs the gpuctk binary and its links, the config file,
// the engine's runtime entry and the CDI spec, and restarts the engine when its config changed
// (install/restart.hpp); uninstall undoes it; watch keeps the spec current and, on SIGTERM, can take the
// runtime out of the engine (Undo::unwire). The steps are install.hpp's idempotent file operations; what
// they did goes to a Progress, one line each, so the CLI only parses options and prints.

#include <signal.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/configure.hpp"
#include "util/error.hpp"

namespace gpuctk::install {

// What `gpuctk install` was asked to do; every path is the node's (without the host root).
struct NodeOptions {
  std::string host_root = "/host";  // where this pod sees the node's root
  std::string install_dir = "/usr/local/gpuctk/bin";
  std::string driver_root = "/";
  std::string dev_root = "/";
  std::string config_path;  // gpuctk's config file on the node (the CLI: config::k_default_config_path)
  std::string runtime;      // the engine to configure (engine::parse_engine)
  bool no_runtime_config = false;
  std::string runtime_config;  // default: the engine's
  std::string runtime_name = std::string(engine::k_default_runtime_name);
  bool set_as_default = false;
  bool enable_cdi = false;
  std::string spec_path = "/var/run/cdi/nvidia.yaml";
  bool overwrite_config = false;
  bool require_spec = false;  // no NVIDIA driver is an error, not a note
  bool compat32 = true;  // the spec mounts the 32-bit driver libraries too (cdi::BuildOptions::libraries32)
  // nvidia-ctk's feature flags for the spec (cdi/feature_flags.hpp): no-additional-gids-for-device-nodes
  // where the engine's CDI library predates v0.7.0 (containerd before 1.7.16, CRI-O before 1.30).
  std::vector<std::string> feature_flags;
  unsigned watch_seconds = 0;
  bool uninstall_on_exit = false;
  std::string restart_mode = "auto";  // install::parse_restart_mode
  std::string engine_unit;            // default: the engine's (install::default_unit)
  std::string engine_socket;          // default: the engine's (install::default_socket)
  // A link of the name NVIDIA's specs run their hooks by (/usr/bin/nvidia-cdi-hook) to the installed
  // gpuctk, which answers to it (cli/nvidia_cdi_hook.hpp); "" (the default): none. Its last component
  // must be nvidia-cdi-hook (the CLI checks).
  std::string nvidia_cdi_hook_link;
};

// Every path of the installation, as the pod sees it (`pod_*`, the host root included) and as the node
// does.
struct Layout {
  std::string binary;              // node path of the installed gpuctk: the hooks' and the config's hook-path
  std::string runtime;             // node path of the gpuctk-runtime link: the engine's runtime
  std::string pod_binary;          // <install-dir>/gpuctk below the host root
  std::string pod_runtime;         // <install-dir>/gpuctk-runtime
  std::string pod_docker_hook;     // <install-dir>/../docker/nvidia-container-runtime-hook
  std::string docker_hook_target;  // its relative target (docker_hook_target)
  std::string pod_docker_path_hook;  // docker --gpus: the link on dockerd's PATH (install/docker_hook.hpp)
  std::string pod_nvidia_cdi_hook;   // NodeOptions::nvidia_cdi_hook_link below the host root; "" none
  std::string pod_config;
  std::string config_text;
  std::string pod_spec;
  std::string pod_version_file;  // /proc/driver/nvidia/version below the dev root: the driver's identity
  std::string pod_driver_root;
  std::string pod_dev_root;
};

// Where the steps' lines go: `say` one line of what was done (stdout), `warn` one warning (discovery's
// about the spec), `error` a failure the watch loop reports and survives. The CLI escapes what it prints.
struct Progress {
  std::function<Result<void>(const std::string& line)> say;
  std::function<void(const std::string& warning)> warn;
  std::function<void(const Error& error)> error;
};

// The host root must be a node's root (directories /etc and /proc): a mistyped --host-root, or a pod
// without the hostPath volume, would otherwise get a fake node made below it, and the install would
// report success. Error: "--host-root R: not a node's root (no directory R/etc); mount the node's /
// there (hostPath /)".
Result<void> check_host_root(const std::string& host_root);

// The layout of `options`: every node path resolved below the host root as the node would resolve it
// (resolve_in_node_root_clamped). Errors: a link loop on one of the paths.
Result<Layout> layout_of(const NodeOptions& options);

// Installs: the binary (this process's own executable; an error when it was replaced since it started),
// its links (the nvidia-cdi-hook link when asked for: anything else already at its path is an error,
// "<path>: not gpuctk's link (<what is there>); refusing to replace it (NVIDIA's package owns that name)",
// before anything is written), the config (kept when present unless overwrite_config), the engine's runtime
// entry and, for docker, its hook on PATH, the spec (none without a driver, or an error with require_spec),
// then the engine's restart (restart.hpp) when its config changed or an earlier restart is pending.
Result<void> install_node(const NodeOptions& options, const Layout& layout, const Progress& progress);

// What an uninstall takes away.
enum class Undo : uint8_t {
  // Everything install put there (--uninstall).
  everything,
  // What offers gpuctk to new containers: the spec, the engine's runtime entry, docker's hook on PATH
  // (--uninstall-on-exit, on SIGTERM). The binary, its links and the config stay: a container created
  // through the shim is killed and deleted through it for as long as it runs (containerd's runc shim
  // runs the BinaryName it was created with, a "fork/exec ...: no such file" otherwise, and the pod stays
  // Terminating), and the shim finds the low-level runtime that holds the container's state through the
  // config's `runtimes`. The pod cannot know when the last such container is gone; a rolling update
  // replaces the files again (atomically: a running shim keeps its own), and `--uninstall` removes them.
  unwire,
};

// The reverse of install_node, in reverse order (the nvidia-cdi-hook link only when it is gpuctk's); it goes
// on after a failed step so that as much as can be is undone, and returns the first error. Directories go
// only when empty and only gpuctk's own (a component named gpuctk): never /usr/local/bin.
Result<void> uninstall_node(const NodeOptions& options, const Layout& layout, Undo undo,
                            const Progress& progress);

// The driver's version file ("" when there is no driver): what watch_node compares.
std::string driver_version_text(const Layout& layout);

// Polls the driver's version file every watch_seconds and regenerates the spec when it differs from
// `seen` (read before the install wrote the spec, so a change during the install is not missed), until
// SIGTERM or SIGINT in `stop` (util/stop_signals.hpp); then uninstalls with uninstall_on_exit
// (Undo::unwire). A failed regeneration (a driver half installed) goes to progress.error and is retried
// at the next change.
Result<void> watch_node(const NodeOptions& options, const Layout& layout, const sigset_t& stop,
                        std::string seen, const Progress& progress);

}  // namespace gpuctk::install
