// gpuctk install: what NVIDIA's toolkit container does on a node, from a privileged pod that sees the
// node's root at --host-root. Installs this binary and its links, the config file, the engine's runtime
// entry and the CDI spec, and restarts the engine when its config changed (--restart-mode,
// install/restart.hpp); --uninstall undoes it; --watch keeps the spec current and, with
// --uninstall-on-exit, takes the runtime out of the engine on SIGTERM (so deleting the DaemonSet stops
// offering it), keeping what running containers need (Undo::unwire).
#include "install/install.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "cdi/codec.hpp"
#include "cdi/spec_builder.hpp"
#include "cdi/validate.hpp"
#include "cli/commands.hpp"
#include "discover/discover.hpp"
#include "engine/configure.hpp"
#include "hook/config.hpp"
#include "install/docker_hook.hpp"
#include "install/restart.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

struct InstallArgs {
  std::string host_root = "/host";
  std::string install_dir = "/usr/local/gpuctk/bin";
  std::string driver_root = "/";
  std::string dev_root = "/";
  std::string runtime;
  bool no_runtime_config = false;
  std::string runtime_config;  // on the node; default: the engine's
  std::string runtime_name = std::string(engine::k_default_runtime_name);
  bool set_as_default = false;
  bool enable_cdi = false;
  std::string spec_path = "/var/run/cdi/nvidia.yaml";
  bool overwrite_config = false;
  bool require_spec = false;
  bool uninstall = false;
  unsigned watch_seconds = 0;
  bool uninstall_on_exit = false;
  std::string restart_mode = "auto";  // install::parse_restart_mode
  std::string engine_unit;            // default: the engine's (install::default_unit)
  std::string engine_socket;          // on the node; default: the engine's (install::default_socket)
};

// Every path of the installation, as the pod sees it (`pod`) and as the node does.
struct Layout {
  std::string binary;       // node path of the installed gpuctk: the hooks' and the config's hook-path
  std::string runtime;      // node path of the gpuctk-runtime link: the engine's runtime
  std::string pod_binary;   // the same files below the host root
  std::string pod_runtime;  // <install-dir>/gpuctk-runtime
  std::string pod_docker_hook;
  std::string docker_hook_target;
  std::string pod_docker_path_hook;  // docker --gpus: the link on dockerd's PATH (install/docker_hook.hpp)
  std::string pod_config;
  std::string config_text;
  std::string pod_spec;
  std::string pod_version_file;  // /proc/driver/nvidia/version below the dev root: the driver's identity
  std::string pod_driver_root;
  std::string pod_dev_root;
};

// The host root must be a node's root: a mistyped --host-root (or a pod without the hostPath volume)
// would otherwise get a fake node made below it, and the install would report success.
Result<void> check_host_root(const std::string& host_root) {
  for (const char* dir : {"/etc", "/proc"}) {
    const std::string path = install::under_root(host_root, dir);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return fail("--host-root " + host_root + ": not a node's root (no directory " + path +
                  "); mount the node's / there (hostPath /)");
    }
  }
  return {};
}

Result<Layout> layout_of(const InstallArgs& args) {
  Layout l;
  const std::string dir = clean_path(args.install_dir);
  l.binary = dir + "/gpuctk";
  l.runtime = dir + "/gpuctk-runtime";
  const auto pod = [&args](std::string_view node_path) {
    return install::resolve_under_root(args.host_root, node_path);
  };
  GPUCTK_TRY_ASSIGN(l.pod_binary, pod(l.binary));
  GPUCTK_TRY_ASSIGN(l.pod_runtime, pod(l.runtime));
  // Its own directory: docker finds the hook by this name on dockerd's PATH (src/CMakeLists.txt).
  GPUCTK_TRY_ASSIGN(l.pod_docker_hook, pod(clean_path(dir + "/../docker/nvidia-container-runtime-hook")));
  l.docker_hook_target = install::docker_hook_target(dir);
  GPUCTK_TRY_ASSIGN(l.pod_docker_path_hook, pod(std::string(install::k_default_docker_hook_dir) + "/" +
                                                std::string(install::k_docker_hook_name)));
  GPUCTK_TRY_ASSIGN(l.pod_config, pod(hook::k_default_config_path));
  l.config_text = install::config_text({.hook_path = l.binary,
                                        .driver_root = clean_path(args.driver_root),
                                        .dev_root = clean_path(args.dev_root)});
  GPUCTK_TRY_ASSIGN(l.pod_spec, pod(args.spec_path));
  l.pod_driver_root = install::under_root(args.host_root, args.driver_root);
  l.pod_dev_root = install::under_root(args.host_root, args.dev_root);
  l.pod_version_file = install::under_root(l.pod_dev_root, "/proc/driver/nvidia/version");
  return l;
}

std::string parent_of_path(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}

Result<void> say(const std::string& line) {
  return write_stdout(line + "\n");
}

// "installed P" or "unchanged P"; `prefix` (e.g. "spec: ") goes before either.
Result<void> say_step(install::Change change, std::string_view done, const std::string& path,
                      std::string_view prefix = "") {
  return say(std::string(prefix) + (change == install::Change::changed ? std::string(done) : "unchanged") +
             " " + path);
}

engine::RuntimeSettings runtime_settings(const InstallArgs& args, const Layout& layout) {
  engine::RuntimeSettings settings;
  settings.name = args.runtime_name;
  settings.runtime_path = layout.runtime;
  settings.set_as_default = args.set_as_default;
  settings.enable_cdi = args.enable_cdi;
  return settings;
}

Result<std::string> runtime_config_path(const InstallArgs& args, engine::Engine which) {
  return install::resolve_under_root(
      args.host_root, args.runtime_config.empty() ? engine::default_config_path(which) : args.runtime_config);
}

// The spec for the driver below the host root, with the node's paths; nullopt when there is no driver
// (no /proc/driver/nvidia/version: the kernel module is not loaded). Warnings go to `warnings`.
Result<std::optional<std::string>> spec_text(const InstallArgs& args, const Layout& layout,
                                             std::vector<std::string>& warnings) {
  if (::access(layout.pod_version_file.c_str(), F_OK) != 0) {
    if (errno == ENOENT) {
      return std::nullopt;
    }
    return fail_errno("stat " + layout.pod_version_file, errno);
  }
  // What `gpuctk cdi generate --driver-root R --dev-root D --hook-path H` does (cdi_generate.cpp).
  discover::DiscoverOptions options;
  options.driver_root = layout.pod_driver_root;
  options.dev_root = layout.pod_dev_root;
  GPUCTK_TRY_ASSIGN(auto inventory, discover::discover(options));
  // The spec is read on the node, which sees its files without the host root.
  install::move_to_node(inventory, args.host_root);
  cdi::BuildOptions build;
  build.hook_path = layout.binary;
  GPUCTK_TRY_ASSIGN(const auto spec, cdi::build_spec(inventory, build));
  if (const auto problems = cdi::validate(spec); !problems.empty()) {
    return fail("generated spec is invalid: " + problems.front().where + ": " + problems.front().what);
  }
  warnings = std::move(inventory.warnings);
  return cdi::write_spec(spec, cdi::Format::yaml);
}

// Writes the spec when its text changed. `quiet_when_unchanged`: the watch loop's polls say nothing.
Result<void> install_spec(const InstallArgs& args, const Layout& layout, bool quiet_when_unchanged) {
  std::vector<std::string> warnings;
  GPUCTK_TRY_ASSIGN(const auto text, spec_text(args, layout, warnings));
  if (!text) {
    if (args.require_spec) {
      return fail("spec: no NVIDIA driver (" + layout.pod_version_file + " is missing)");
    }
    return quiet_when_unchanged
               ? Result<void>{}
               : say("spec: no NVIDIA driver (" + layout.pod_version_file + " is missing); no spec written");
  }
  GPUCTK_TRY_ASSIGN(const auto change, install::put_file(layout.pod_spec, *text, 0644));
  if (change == install::Change::changed) {
    for (const auto& warning : warnings) {
      warn(warning);
    }
  } else if (quiet_when_unchanged) {
    return {};
  }
  return say_step(change, "wrote", layout.pod_spec, "spec: ");
}

// After the engine's config file at `path` (as the pod sees it) changed, or when an earlier restart is
// still pending: the engine is restarted as --restart-mode says, with one line saying what was done. The
// pending marker is written before the restart is tried and removed once it succeeded (or once nothing is
// to be done by gpuctk), so that a failed restart is tried again by the next run.
Result<void> restart_if_changed(const InstallArgs& args, engine::Engine which, const std::string& path,
                                bool changed) {
  const std::string pending = engine::state_files(which, path).restart;
  const bool was_pending = ::access(pending.c_str(), F_OK) == 0;
  if (!changed && !was_pending) {
    return {};
  }
  const std::string name(engine::engine_name(which));
  const std::string why = name + ": " + (changed ? "config changed" : "restart pending from an earlier run");
  GPUCTK_TRY_ASSIGN(const auto mode, install::parse_restart_mode(args.restart_mode));
  GPUCTK_TRY_ASSIGN(const auto plan,
                    install::plan_restart(mode, which, install::node_runs_systemd(args.host_root)));
  if (plan.action == install::RestartAction::none) {
    GPUCTK_TRY(install::remove_file(pending));
    return say(why + "; not restarted (" + plan.reason + "): restart " + name + " for it to take effect");
  }
  GPUCTK_TRY(install::put_file(pending, "", 0644));
  const install::RestartTarget target{
      .engine = which,
      .host_root = args.host_root,
      .unit = args.engine_unit.empty() ? std::string(install::default_unit(which)) : args.engine_unit,
      .socket =
          args.engine_socket.empty() ? std::string(install::default_socket(which)) : args.engine_socket};
  GPUCTK_TRY_ASSIGN(const auto done, install::restart_engine(plan, target));
  GPUCTK_TRY(install::remove_file(pending));
  return say(why + "; " + done);
}

Result<void> do_install(const InstallArgs& args, const Layout& layout) {
  GPUCTK_TRY_ASSIGN(const auto self, self_exe_path());
  if (self.ends_with(" (deleted)")) {
    return fail("install: this gpuctk (" + self + ") was replaced since it started");
  }
  GPUCTK_TRY_ASSIGN(const auto bytes, read_file(self));
  GPUCTK_TRY_ASSIGN(auto change, install::put_file(layout.pod_binary, bytes, 0755));
  GPUCTK_TRY(say_step(change, "installed", layout.pod_binary));
  GPUCTK_TRY_ASSIGN(change, install::put_symlink("gpuctk", layout.pod_runtime));
  GPUCTK_TRY(say_step(change, "linked", layout.pod_runtime));
  GPUCTK_TRY_ASSIGN(change, install::put_symlink(layout.docker_hook_target, layout.pod_docker_hook));
  GPUCTK_TRY(say_step(change, "linked", layout.pod_docker_hook));
  GPUCTK_TRY_ASSIGN(
      change, install::put_file_if_missing(layout.pod_config, layout.config_text, args.overwrite_config));
  GPUCTK_TRY(say_step(change, "wrote", layout.pod_config));
  if (args.no_runtime_config) {
    return install_spec(args, layout, false);
  }
  GPUCTK_TRY_ASSIGN(const auto which, engine::parse_engine(args.runtime));
  GPUCTK_TRY_ASSIGN(const auto path, runtime_config_path(args, which));
  GPUCTK_TRY_ASSIGN(const auto result, engine::configure(which, path, runtime_settings(args, layout), false));
  GPUCTK_TRY(say(result.summary));
  if (which == engine::Engine::docker) {
    GPUCTK_TRY_ASSIGN(const auto hook,
                      install::link_docker_hook(layout.pod_docker_path_hook, layout.binary, false));
    GPUCTK_TRY(say(hook.line));
  }
  // The spec is in place before the engine starts again.
  GPUCTK_TRY(install_spec(args, layout, false));
  return restart_if_changed(args, which, path, result.changed);
}

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

// The reverse of do_install, in reverse order; it goes on after a failed step so that as much as can be
// is undone, and returns the first error.
Result<void> do_uninstall(const InstallArgs& args, const Layout& layout, Undo undo) {
  std::optional<Error> first;
  const auto step = [&first](Result<void> done) {
    if (!done && !first) {
      first = done.error();
    }
  };
  const auto removed = [](const Result<install::Change>& change, const std::string& path) -> Result<void> {
    GPUCTK_TRY(change);
    const auto c = *change;
    return say_step(c, "removed", path);
  };
  step([&]() -> Result<void> {
    GPUCTK_TRY_ASSIGN(const auto change, install::remove_file(layout.pod_spec));
    return say_step(change, "removed", layout.pod_spec, "spec: ");
  }());
  if (!args.no_runtime_config) {
    step([&]() -> Result<void> {
      GPUCTK_TRY_ASSIGN(const auto which, engine::parse_engine(args.runtime));
      GPUCTK_TRY_ASSIGN(const auto path, runtime_config_path(args, which));
      GPUCTK_TRY_ASSIGN(const auto result,
                        engine::unconfigure(which, path, runtime_settings(args, layout), false));
      GPUCTK_TRY(say(result.summary));
      if (which == engine::Engine::docker) {
        GPUCTK_TRY_ASSIGN(const auto hook,
                          install::unlink_docker_hook(layout.pod_docker_path_hook, layout.binary, false));
        if (!hook.line.empty()) {
          GPUCTK_TRY(say(hook.line));
        }
      }
      return restart_if_changed(args, which, path, result.changed);
    }());
  }
  if (undo == Undo::unwire) {
    step(say("kept " + layout.pod_binary + ", its links and " + layout.pod_config +
             ": running containers of the runtime are stopped through them (gpuctk install --uninstall "
             "removes them)"));
    return first ? Result<void>(std::unexpected(*first)) : Result<void>{};
  }
  step(removed(install::remove_file_if_same(layout.pod_config, layout.config_text), layout.pod_config));
  step(removed(install::remove_symlink_if(layout.pod_docker_hook, layout.docker_hook_target),
               layout.pod_docker_hook));
  step(removed(install::remove_symlink_if(layout.pod_runtime, "gpuctk"), layout.pod_runtime));
  step(removed(install::remove_file(layout.pod_binary), layout.pod_binary));
  // Directories go only when empty and only gpuctk's own (a component named gpuctk): never /usr/local/bin.
  const std::string dirs[] = {parent_of_path(layout.pod_docker_hook), parent_of_path(layout.pod_binary),
                              parent_of_path(parent_of_path(layout.pod_binary)),
                              parent_of_path(layout.pod_config)};
  for (const auto& dir : dirs) {
    if (dir.find("/gpuctk/") != std::string::npos || dir.ends_with("/gpuctk")) {
      if (auto removed_dir = install::remove_dir_if_empty(dir); !removed_dir) {
        step(std::unexpected(removed_dir.error()));
      }
    }
  }
  if (first) {
    return std::unexpected(*first);
  }
  return {};
}

// The driver's version file ("" when there is no driver).
std::string driver_version_text(const Layout& layout) {
  return read_file(layout.pod_version_file, 1 << 16).value_or("");
}

// Polls the driver's version file every --watch seconds and regenerates the spec when it differs from
// `seen` (read before the install wrote the spec, so a change during the install is not missed), until
// SIGTERM or SIGINT; then uninstalls with --uninstall-on-exit.
Result<void> watch(const InstallArgs& args, const Layout& layout, const sigset_t& stop, std::string seen) {
  for (;;) {
    int sig = 0;
    GPUCTK_TRY_ASSIGN(const bool stopped, wait_for_stop(stop, args.watch_seconds, &sig));
    if (stopped) {
      GPUCTK_TRY(say(std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT")));
      return args.uninstall_on_exit ? do_uninstall(args, layout, Undo::unwire) : Result<void>{};
    }
    if (std::string now = driver_version_text(layout); now != seen) {
      seen = std::move(now);
      GPUCTK_TRY(
          say("driver changed: " + std::string(trim(std::string_view(seen).substr(0, seen.find('\n'))))));
      // A failure here (a driver half installed) is reported and retried at the next change, not fatal.
      if (auto done = install_spec(args, layout, false); !done) {
        std::fprintf(stderr, "gpuctk: error: %s\n", escape_for_log(done.error().message).c_str());
      }
    }
  }
}

Result<void> check_absolute(std::string_view path) {
  if (!path.starts_with('/')) {
    return fail(quote(path) + " is not an absolute path");
  }
  return {};
}

}  // namespace

Action define_install(CLI::App& command) {
  auto args = std::make_shared<InstallArgs>();
  command.add_option("--host-root", args->host_root, "Where this pod sees the node's root")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  command
      .add_option("--install-dir", args->install_dir,
                  "Directory on the node for gpuctk and gpuctk-runtime (the docker hook goes to ../docker)")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  command
      .add_option("--driver-root", args->driver_root,
                  "Root of the driver files on the node (a driver container: /run/nvidia/driver)")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  command.add_option("--dev-root", args->dev_root, "Root of /dev, /proc and /sys on the node")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  CLI::Option* runtime =
      command.add_option("--runtime", args->runtime, "The engine to configure: containerd, crio or docker")
          ->check(value_check(engine::parse_engine));
  CLI::Option* no_runtime =
      command.add_flag("--no-runtime-config", args->no_runtime_config, "Configure no container engine");
  runtime->excludes(no_runtime);
  command
      .add_option("--runtime-config", args->runtime_config,
                  "The engine's config file on the node (default: the engine's usual one)")
      ->check(value_check(check_absolute));
  command
      .add_option("--runtime-name,--nvidia-runtime-name", args->runtime_name,
                  "Runtime name (a RuntimeClass handler)")
      ->capture_default_str()
      ->check(value_check(engine::check_runtime_name));
  command.add_flag("--set-as-default", args->set_as_default, "Make it the engine's default runtime too");
  command.add_flag("--cdi,--enable-cdi-in-runtime", args->enable_cdi, "Turn on the engine's CDI support");
  command.add_option("--spec-path", args->spec_path, "The CDI spec on the node")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  command.add_flag("--overwrite-config", args->overwrite_config,
                   "Replace an existing /etc/gpuctk/config.yaml (default: keep it)");
  command.add_flag("--require-spec", args->require_spec,
                   "Fail when there is no NVIDIA driver to write a spec for");
  command.add_flag("--uninstall", args->uninstall, "Undo an install made with the same options");
  command
      .add_option("--watch", args->watch_seconds,
                  "Stay running; every SECONDS, regenerate the spec when the driver changed (0: exit)")
      ->type_name("SECONDS")
      ->capture_default_str();
  command.add_flag("--uninstall-on-exit", args->uninstall_on_exit,
                   "With --watch: on SIGTERM or SIGINT (a DaemonSet's pod stopping), take the runtime out of "
                   "the engine and remove the spec; the binary, its links and the config stay for the "
                   "containers still running through them (--uninstall removes them)");
  command
      .add_option(
          "--restart-mode", args->restart_mode,
          "After the engine's config changed: auto (systemd when the node runs it, else signal for docker), "
          "systemd (the node's systemctl restart), signal (containerd SIGTERM, dockerd SIGHUP; needs "
          "hostPID), none")
      ->type_name("MODE")
      ->capture_default_str()
      ->check(value_check(install::parse_restart_mode));
  command.add_option("--engine-unit", args->engine_unit,
                     "The engine's systemd unit (default: containerd.service, crio.service, docker.service)");
  command
      .add_option(
          "--engine-socket,--socket", args->engine_socket,
          "The engine's socket on the node, for --restart-mode signal (default: the engine's usual one)")
      ->check(value_check(check_absolute));
  set_env_names(command);
  return [args, &command] {
    if (args->runtime.empty() && !args->no_runtime_config) {
      return usage_error(command, "missing option --runtime (or --no-runtime-config)");
    }
    if (args->uninstall_on_exit && args->watch_seconds == 0) {
      return usage_error(command, "--uninstall-on-exit needs --watch");
    }
    if (args->uninstall && args->watch_seconds != 0) {
      return usage_error(command, "--uninstall and --watch exclude each other");
    }
    if (auto node = check_host_root(args->host_root); !node) {
      return report(node.error());
    }
    const auto resolved = layout_of(*args);
    if (!resolved) {
      return report(resolved.error());
    }
    const Layout& layout = *resolved;
    if (args->uninstall) {
      if (auto done = do_uninstall(*args, layout, Undo::everything); !done) {
        return report(done.error());
      }
      return static_cast<int>(k_exit_ok);
    }
    std::optional<sigset_t> stop;
    if (args->watch_seconds != 0) {
      auto blocked = block_stop_signals();
      if (!blocked) {
        return report(blocked.error());
      }
      stop = *blocked;
    }
    const std::string version = stop ? driver_version_text(layout) : std::string();
    if (auto done = do_install(*args, layout); !done) {
      return report(done.error());
    }
    if (stop) {
      if (auto done = watch(*args, layout, *stop, version); !done) {
        return report(done.error());
      }
    }
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
