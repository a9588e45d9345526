// gpuctk install: the options of install, uninstall and watch (install/node_install.hpp does them) and
// the printing of what they did.
#include <cstdio>
#include <memory>
#include <optional>

#include "cdi/feature_flags.hpp"
#include "cli/commands.hpp"
#include "cli/discovery_options.hpp"
#include "install/node_install.hpp"
#include "install/restart.hpp"
#include "util/stop_signals.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

// The steps' lines on stdout, their warnings and the watch loop's errors on stderr.
install::Progress printed_progress() {
  return {.say = [](const std::string& line) { return write_stdout(line + "\n"); },
          .warn = [](const std::string& warning) { warn(warning); },
          .error =
              [](const Error& error) {
                std::fprintf(stderr, "gpuctk: error: %s\n", escape_for_log(error.message).c_str());
              }};
}

// The nvidia-cdi-hook link's path: absolute, and named as NVIDIA's specs run it.
Result<void> check_cdi_hook_link_path(std::string_view path) {
  GPUCTK_TRY(check_absolute(path));
  if (!path.ends_with("/nvidia-cdi-hook")) {
    return fail(quote(path) + " does not end in /nvidia-cdi-hook, the name NVIDIA's specs run");
  }
  return {};
}

}  // namespace

Action define_install(CLI::App& command) {
  auto args = std::make_shared<install::NodeOptions>();
  auto uninstall = std::make_shared<bool>(false);
  args->config_path = config::k_default_config_path;
  command.add_option("--host-root", args->host_root, "Where this pod sees the node's root")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  command
      .add_option("--install-dir", args->install_dir,
                  "Directory on the node for gpuctk and gpuctk-runtime (the docker hook goes to ../docker)")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  add_root_options(command, args->driver_root, args->dev_root);
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
  add_compat32_option(command, args->compat32, Compat32Default::on);
  command
      .add_option("--feature-flag,--feature-flags", args->feature_flags,
                  "nvidia-ctk's feature flags for the spec, as gpuctk cdi generate takes them: "
                  "no-additional-gids-for-device-nodes for an engine whose CDI library predates v0.7.0 "
                  "(containerd before 1.7.16, CRI-O before 1.30); a comma list or repeated")
      ->delimiter(',')
      ->check(value_check(cdi::check_feature_flag));
  command.add_flag("--require-spec", args->require_spec,
                   "Fail when there is no NVIDIA driver to write a spec for");
  command
      .add_option("--nvidia-cdi-hook-link", args->nvidia_cdi_hook_link,
                  "Also make this node path (e.g. /usr/bin/nvidia-cdi-hook) a link to the installed gpuctk, "
                  "which answers to that name, so that containers whose specs NVIDIA's toolkit wrote start "
                  "without its package; a file that is not gpuctk's link there is an error, never replaced, "
                  "and --uninstall removes only gpuctk's link (default: none)")
      ->type_name("PATH")
      ->check(value_check(check_cdi_hook_link_path));
  command.add_flag("--uninstall", *uninstall, "Undo an install made with the same options");
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
  return [args, uninstall, &command] {
    if (args->runtime.empty() && !args->no_runtime_config) {
      return usage_error(command, "missing option --runtime (or --no-runtime-config)");
    }
    if (args->uninstall_on_exit && args->watch_seconds == 0) {
      return usage_error(command, "--uninstall-on-exit needs --watch");
    }
    if (*uninstall && args->watch_seconds != 0) {
      return usage_error(command, "--uninstall and --watch exclude each other");
    }
    if (auto node = install::check_host_root(args->host_root); !node) {
      return report(node.error());
    }
    const auto resolved = install::layout_of(*args);
    if (!resolved) {
      return report(resolved.error());
    }
    const install::Layout& layout = *resolved;
    const install::Progress progress = printed_progress();
    if (*uninstall) {
      if (auto done = install::uninstall_node(*args, layout, install::Undo::everything, progress); !done) {
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
    const std::string version = stop ? install::driver_version_text(layout) : std::string();
    if (auto done = install::install_node(*args, layout, progress); !done) {
      return report(done.error());
    }
    if (stop) {
      if (auto done = install::watch_node(*args, layout, *stop, version, progress); !done) {
        return report(done.error());
      }
    }
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
