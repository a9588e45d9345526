#include "install/node_install.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <vector>

#include "cdi/codec.hpp"
#include "cdi/feature_flags.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "discover/host_fs.hpp"
#include "install/docker_hook.hpp"
#include "install/install.hpp"
#include "install/restart.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/stop_signals.hpp"
#include "util/strings.hpp"

namespace gpuctk::install {

namespace {

// "installed P" or "unchanged P"; `prefix` (e.g. "spec: ") goes before either.
Result<void> say_step(const Progress& progress, Change change, std::string_view done, const std::string& path,
                      std::string_view prefix = "") {
  return progress.say(std::string(prefix) + (change == Change::changed ? std::string(done) : "unchanged") +
                      " " + path);
}

engine::RuntimeSettings runtime_settings(const NodeOptions& options, const Layout& layout) {
  engine::RuntimeSettings settings;
  settings.name = options.runtime_name;
  settings.runtime_path = layout.runtime;
  settings.set_as_default = options.set_as_default;
  settings.enable_cdi = options.enable_cdi;
  settings.node_root = options.host_root;  // containerd's absolute imports name the node's files
  return settings;
}

Result<std::string> runtime_config_path(const NodeOptions& options, engine::Engine which) {
  return resolve_in_node_root_clamped(options.host_root, options.runtime_config.empty()
                                                             ? engine::default_config_path(which)
                                                             : options.runtime_config);
}

// The spec for the driver below the host root, with the node's paths; nullopt when there is no driver
// (no /proc/driver/nvidia/version: the kernel module is not loaded). Warnings go to `warnings`.
Result<std::optional<std::string>> spec_text(const NodeOptions& options, const Layout& layout,
                                             std::vector<std::string>& warnings) {
  if (::access(layout.pod_version_file.c_str(), F_OK) != 0) {
    if (errno == ENOENT) {
      return std::nullopt;
    }
    return fail_errno("stat " + layout.pod_version_file, errno);
  }
  // What `gpuctk cdi generate --driver-root R --dev-root D --hook-path H [--compat32]` does
  // (cli/cdi_generate.cpp).
  discover::DiscoverOptions discover_options;
  discover_options.driver_root = layout.pod_driver_root;
  discover_options.dev_root = layout.pod_dev_root;
  GPUCTK_TRY_ASSIGN(auto inventory, discover::discover(discover_options));
  // The spec is read on the node, which sees its files without the host root.
  move_to_node(inventory, options.host_root);
  cdi::BuildOptions build;
  build.hook_path = layout.binary;
  build.libraries32 = options.compat32;
  for (const auto& flag : options.feature_flags) {
    GPUCTK_TRY(cdi::apply_feature_flag(flag, build));
  }
  GPUCTK_TRY_ASSIGN(const auto spec, cdi::generate_spec(inventory, build));
  warnings = std::move(inventory.warnings);
  return cdi::write_spec(spec, cdi::Format::yaml);
}

// Writes the spec when its text changed. `quiet_when_unchanged`: the watch loop's polls say nothing.
Result<void> install_spec(const NodeOptions& options, const Layout& layout, const Progress& progress,
                          bool quiet_when_unchanged) {
  std::vector<std::string> warnings;
  GPUCTK_TRY_ASSIGN(const auto text, spec_text(options, layout, warnings));
  if (!text) {
    if (options.require_spec) {
      return fail("spec: no NVIDIA driver (" + layout.pod_version_file + " is missing)");
    }
    return quiet_when_unchanged ? Result<void>{}
                                : progress.say("spec: no NVIDIA driver (" + layout.pod_version_file +
                                               " is missing); no spec written");
  }
  GPUCTK_TRY_ASSIGN(const auto change, put_file(layout.pod_spec, *text, 0644));
  if (change == Change::changed) {
    for (const auto& warning : warnings) {
      progress.warn(warning);
    }
  } else if (quiet_when_unchanged) {
    return {};
  }
  return say_step(progress, change, "wrote", layout.pod_spec, "spec: ");
}

// After the engine's config file at `path` (as the pod sees it) changed, or when an earlier restart is
// still pending: the engine is restarted as restart_mode says, with one line saying what was done. The
// pending marker is written before the restart is tried and removed once it succeeded (or once nothing is
// to be done by gpuctk), so that a failed restart is tried again by the next run.
Result<void> restart_if_changed(const NodeOptions& options, engine::Engine which, const std::string& path,
                                bool changed, const Progress& progress) {
  const std::string pending = engine::state_files(which, path).restart;
  const bool was_pending = ::access(pending.c_str(), F_OK) == 0;
  if (!changed && !was_pending) {
    return {};
  }
  const std::string name(engine::engine_name(which));
  const std::string why = name + ": " + (changed ? "config changed" : "restart pending from an earlier run");
  GPUCTK_TRY_ASSIGN(const auto mode, parse_restart_mode(options.restart_mode));
  GPUCTK_TRY_ASSIGN(const auto plan, plan_restart(mode, which, node_runs_systemd(options.host_root)));
  if (plan.action == RestartAction::none) {
    GPUCTK_TRY(remove_file(pending));
    return progress.say(why + "; not restarted (" + plan.reason + "): restart " + name +
                        " for it to take effect");
  }
  GPUCTK_TRY(put_file(pending, "", 0644));
  const RestartTarget target{
      .engine = which,
      .host_root = options.host_root,
      .unit = options.engine_unit.empty() ? std::string(default_unit(which)) : options.engine_unit,
      .socket = options.engine_socket.empty() ? std::string(default_socket(which)) : options.engine_socket};
  GPUCTK_TRY_ASSIGN(const auto done, restart_engine(plan, target));
  GPUCTK_TRY(remove_file(pending));
  return progress.say(why + "; " + done);
}

// Nothing but gpuctk's own link at the nvidia-cdi-hook path: NVIDIA's hook there (its package owns
// /usr/bin/nvidia-cdi-hook) or any other file is never replaced.
Result<void> check_cdi_hook_link(const Layout& layout) {
  if (layout.pod_nvidia_cdi_hook.empty()) {
    return {};
  }
  const std::string& link = layout.pod_nvidia_cdi_hook;
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(link));
  if (st && !(S_ISLNK(st->st_mode) && discover::read_link(link) == layout.binary)) {
    return fail(link + ": not gpuctk's link (" + describe_existing(*st, link) +
                "); refusing to replace it (NVIDIA's package owns that name)");
  }
  return {};
}

}  // namespace

Result<void> check_host_root(const std::string& host_root) {
  for (const char* dir : {"/etc", "/proc"}) {
    const std::string path = discover::under_root(host_root, dir);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return fail("--host-root " + host_root + ": not a node's root (no directory " + path +
                  "); mount the node's / there (hostPath /)");
    }
  }
  return {};
}

Result<Layout> layout_of(const NodeOptions& options) {
  Layout l;
  const std::string dir = clean_path(options.install_dir);
  l.binary = dir + "/gpuctk";
  l.runtime = dir + "/gpuctk-runtime";
  const auto pod = [&options](std::string_view node_path) {
    return resolve_in_node_root_clamped(options.host_root, node_path);
  };
  GPUCTK_TRY_ASSIGN(l.pod_binary, pod(l.binary));
  GPUCTK_TRY_ASSIGN(l.pod_runtime, pod(l.runtime));
  // Its own directory: docker finds the hook by this name on dockerd's PATH (src/CMakeLists.txt).
  GPUCTK_TRY_ASSIGN(l.pod_docker_hook, pod(clean_path(dir + "/../docker/nvidia-container-runtime-hook")));
  l.docker_hook_target = docker_hook_target(dir);
  GPUCTK_TRY_ASSIGN(l.pod_docker_path_hook,
                    pod(std::string(k_default_docker_hook_dir) + "/" + std::string(k_docker_hook_name)));
  if (!options.nvidia_cdi_hook_link.empty()) {
    GPUCTK_TRY_ASSIGN(l.pod_nvidia_cdi_hook, pod(clean_path(options.nvidia_cdi_hook_link)));
  }
  GPUCTK_TRY_ASSIGN(l.pod_config, pod(options.config_path));
  l.config_text = config_text({.hook_path = l.binary,
                               .driver_root = clean_path(options.driver_root),
                               .dev_root = clean_path(options.dev_root)});
  GPUCTK_TRY_ASSIGN(l.pod_spec, pod(options.spec_path));
  // Cleaned: "/" below the host root is the host root itself, not "<host root>/".
  l.pod_driver_root = clean_path(discover::under_root(options.host_root, options.driver_root));
  l.pod_dev_root = clean_path(discover::under_root(options.host_root, options.dev_root));
  l.pod_version_file = discover::under_root(l.pod_dev_root, "/proc/driver/nvidia/version");
  return l;
}

Result<void> install_node(const NodeOptions& options, const Layout& layout, const Progress& progress) {
  GPUCTK_TRY_ASSIGN(const auto self, self_exe_path());
  if (auto current = check_self_not_replaced(self); !current) {
    return fail_with("install", current.error());
  }
  GPUCTK_TRY(check_cdi_hook_link(layout));
  GPUCTK_TRY_ASSIGN(const auto bytes, read_file(self));
  GPUCTK_TRY_ASSIGN(auto change, put_file(layout.pod_binary, bytes, 0755));
  GPUCTK_TRY(say_step(progress, change, "installed", layout.pod_binary));
  GPUCTK_TRY_ASSIGN(change, put_symlink("gpuctk", layout.pod_runtime));
  GPUCTK_TRY(say_step(progress, change, "linked", layout.pod_runtime));
  GPUCTK_TRY_ASSIGN(change, put_symlink(layout.docker_hook_target, layout.pod_docker_hook));
  GPUCTK_TRY(say_step(progress, change, "linked", layout.pod_docker_hook));
  if (!layout.pod_nvidia_cdi_hook.empty()) {
    GPUCTK_TRY_ASSIGN(change, put_symlink(layout.binary, layout.pod_nvidia_cdi_hook));
    GPUCTK_TRY(say_step(progress, change, "linked", layout.pod_nvidia_cdi_hook));
  }
  GPUCTK_TRY_ASSIGN(change,
                    put_file_if_missing(layout.pod_config, layout.config_text, options.overwrite_config));
  GPUCTK_TRY(say_step(progress, change, "wrote", layout.pod_config));
  if (options.no_runtime_config) {
    return install_spec(options, layout, progress, false);
  }
  GPUCTK_TRY_ASSIGN(const auto which, engine::parse_engine(options.runtime));
  GPUCTK_TRY_ASSIGN(const auto path, runtime_config_path(options, which));
  GPUCTK_TRY_ASSIGN(const auto result,
                    engine::configure(which, path, runtime_settings(options, layout), false));
  GPUCTK_TRY(progress.say(result.summary));
  if (which == engine::Engine::docker) {
    GPUCTK_TRY_ASSIGN(const auto hook, link_docker_hook(layout.pod_docker_path_hook, layout.binary, false));
    GPUCTK_TRY(progress.say(hook.line));
  }
  // The spec is in place before the engine starts again.
  GPUCTK_TRY(install_spec(options, layout, progress, false));
  return restart_if_changed(options, which, path, result.changed, progress);
}

Result<void> uninstall_node(const NodeOptions& options, const Layout& layout, Undo undo,
                            const Progress& progress) {
  std::optional<Error> first;
  const auto step = [&first](Result<void> done) {
    if (!done && !first) {
      first = done.error();
    }
  };
  const auto removed = [&progress](const Result<Change>& change, const std::string& path) -> Result<void> {
    GPUCTK_TRY(change);
    const auto c = *change;
    return say_step(progress, c, "removed", path);
  };
  step([&]() -> Result<void> {
    GPUCTK_TRY_ASSIGN(const auto change, remove_file(layout.pod_spec));
    return say_step(progress, change, "removed", layout.pod_spec, "spec: ");
  }());
  if (!options.no_runtime_config) {
    step([&]() -> Result<void> {
      GPUCTK_TRY_ASSIGN(const auto which, engine::parse_engine(options.runtime));
      GPUCTK_TRY_ASSIGN(const auto path, runtime_config_path(options, which));
      GPUCTK_TRY_ASSIGN(const auto result,
                        engine::unconfigure(which, path, runtime_settings(options, layout), false));
      GPUCTK_TRY(progress.say(result.summary));
      if (which == engine::Engine::docker) {
        GPUCTK_TRY_ASSIGN(const auto hook,
                          unlink_docker_hook(layout.pod_docker_path_hook, layout.binary, false));
        if (!hook.line.empty()) {
          GPUCTK_TRY(progress.say(hook.line));
        }
      }
      return restart_if_changed(options, which, path, result.changed, progress);
    }());
  }
  if (undo == Undo::unwire) {
    step(progress.say("kept " + layout.pod_binary + ", its links and " + layout.pod_config +
                      ": running containers of the runtime are stopped through them (gpuctk install "
                      "--uninstall removes them)"));
    return first ? Result<void>(std::unexpected(*first)) : Result<void>{};
  }
  step(removed(remove_file_if_same(layout.pod_config, layout.config_text), layout.pod_config));
  if (!layout.pod_nvidia_cdi_hook.empty()) {
    step(removed(remove_symlink_if(layout.pod_nvidia_cdi_hook, layout.binary), layout.pod_nvidia_cdi_hook));
  }
  step(removed(remove_symlink_if(layout.pod_docker_hook, layout.docker_hook_target), layout.pod_docker_hook));
  step(removed(remove_symlink_if(layout.pod_runtime, "gpuctk"), layout.pod_runtime));
  step(removed(remove_file(layout.pod_binary), layout.pod_binary));
  const std::string dirs[] = {parent_path(layout.pod_docker_hook), parent_path(layout.pod_binary),
                              parent_path(parent_path(layout.pod_binary)), parent_path(layout.pod_config)};
  for (const auto& dir : dirs) {
    if (dir.find("/gpuctk/") != std::string::npos || dir.ends_with("/gpuctk")) {
      if (auto removed_dir = remove_dir_if_empty(dir); !removed_dir) {
        step(std::unexpected(removed_dir.error()));
      }
    }
  }
  if (first) {
    return std::unexpected(*first);
  }
  return {};
}

std::string driver_version_text(const Layout& layout) {
  return read_file(layout.pod_version_file, 1 << 16).value_or("");
}

Result<void> watch_node(const NodeOptions& options, const Layout& layout, const sigset_t& stop,
                        std::string seen, const Progress& progress) {
  for (;;) {
    int sig = 0;
    GPUCTK_TRY_ASSIGN(const bool stopped, wait_for_stop(stop, options.watch_seconds, &sig));
    if (stopped) {
      GPUCTK_TRY(progress.say(std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT")));
      return options.uninstall_on_exit ? uninstall_node(options, layout, Undo::unwire, progress)
                                       : Result<void>{};
    }
    if (std::string now = driver_version_text(layout); now != seen) {
      seen = std::move(now);
      GPUCTK_TRY(progress.say("driver changed: " +
                              std::string(trim(std::string_view(seen).substr(0, seen.find('\n'))))));
      // A failure here (a driver half installed) is reported and retried at the next change, not fatal.
      if (auto done = install_spec(options, layout, progress, false); !done) {
        progress.error(done.error());
      }
    }
  }
}

}  // namespace gpuctk::install
