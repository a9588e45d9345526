// gpuctk runtime: a runc-compatible shim. On `create` (and `run`) it injects the requested GPUs into
// <bundle>/config.json (replaced atomically), then execs the real runtime with the unchanged arguments;
// every other subcommand goes straight through. Also reachable as a binary named `gpuctk-runtime`, which is
// what containerd's BinaryName and docker's runtimes setting point at. `gpuctk runtime configure …` (and
// only under the name gpuctk) is another command: cli/runtime_configure.cpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cdi/apply.hpp"
#include "cli/commands.hpp"
#include "hook/config.hpp"
#include "hook/container_label.hpp"
#include "hook/inject.hpp"
#include "hook/prestart.hpp"
#include "hook/request.hpp"
#include "oci/bundle.hpp"
#include "oci/runtime_args.hpp"
#include "oci/runtime_lookup.hpp"
#include "util/strings.hpp"

extern char** environ;

namespace gpuctk::cli {

namespace {

std::string real_path(const std::string& path) {
  char buffer[4096];
  return ::realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : std::string();
}

// The engine reads errors (and warnings) from the --log file it passed (JSON lines with --log-format
// json). `level`: "error" or "warning".
void log_to_engine(const oci::RuntimeArgs& args, const std::string& message, const char* level = "error") {
  if (args.log_file.empty()) {
    return;
  }
  // The message quotes the container's config: escaped and capped here, where it becomes a log line.
  const std::string text = escape_for_log(message);
  std::string line;
  if (args.log_format == "json") {
    line =
        nlohmann::json{{"level", level}, {"msg", "gpuctk: " + text}, {"time", hook::utc_timestamp()}}.dump() +
        "\n";
  } else {
    line = "gpuctk: " + std::string(level) + ": " + text + "\n";
  }
  const int fd = ::open(args.log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd >= 0) {
    [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
    ::close(fd);
  }
}

// runtime-mode: prestart. A GPU container gets the prestart hook, which injects once the container exists.
Result<void> add_prestart_hook(const oci::RuntimeArgs& args, nlohmann::ordered_json& config,
                               const hook::Config& cfg, const hook::Log& log) {
  GPUCTK_TRY_ASSIGN(const auto request, hook::read_request(config, cfg.request));
  if (!request.gpu_container) {
    return {};
  }
  // The hook runs with PATH as its only environment: it is told which config file the shim used.
  const char* config_file = std::getenv("GPUCTK_CONFIG");
  cdi::ContainerEdits edits;
  edits.hooks.push_back(hook::prestart_hook(cfg.hook_path, config_file != nullptr ? config_file : ""));
  GPUCTK_TRY(cdi::apply_edits(config, edits));
  log.info("runtime-mode prestart: added the prestart hook " + cfg.hook_path + " to " + args.config_file);
  return oci::write_config_file(args.config_file, config);
}

Result<void> edit_bundle(const oci::RuntimeArgs& args, HookStart& start) {
  GPUCTK_TRY_ASSIGN(auto config, oci::read_config_file(args.config_file));
  start.log.set_context(hook::container_label(config) + " in " + args.bundle);
  for (const auto& warning : start.warnings) {
    log_to_engine(args, warning, "warning");
  }
  announce_warnings(start);
  start.warnings.clear();
  GPUCTK_TRY_ASSIGN(const auto gated, gate(start, config, args.config_file));
  if (gated == Gate::pass_through) {
    log_to_engine(args, start.problem->message + "; " + args.config_file + " asks for no GPU: left as it is",
                  "warning");
    return {};
  }
  const hook::Config& cfg = start.config;
  if (cfg.runtime_mode == hook::RuntimeMode::prestart) {
    return add_prestart_hook(args, config, cfg, start.log);
  }
  GPUCTK_TRY_ASSIGN(const auto result, hook::inject_request(config, cfg, start.log));
  if (!result.changed) {
    return {};
  }
  // Not fsynced (oci::write_config_file): the bundle does not outlive the boot.
  return oci::write_config_file(args.config_file, config);
}

}  // namespace

int run_runtime_shim(const std::vector<std::string>& args) {
  const auto parsed = oci::parse_runtime_args(args);
  // Every failure goes to the engine's --log as well as to stderr.
  const auto fail_shim = [&parsed](const std::string& message) {
    log_to_engine(parsed, message);
    return report(Error{message});
  };
  // $GPUCTK_CONFIG or the default file: an engine passes no flags of ours. A broken file still gives
  // its valid keys (`runtimes` above all): every other subcommand (state, kill, delete) must reach the
  // runtime that created the container, and a container without a GPU must start.
  hook::Config cfg;
  // Arguments we do not understand go to the runtime untouched: it reports them better than we can.
  if (parsed.unparseable.empty() && parsed.creates_container()) {
    HookStart start = start_hook("");
    if (auto edited = edit_bundle(parsed, start); !edited) {
      const std::string message =
          "could not inject GPUs into " + parsed.config_file + ": " + edited.error().message;
      start.log.error(message);
      return fail_shim(message);
    }
    cfg = std::move(start.config);
  } else {
    cfg = hook::read_config("").config;
  }
  const char* env_path = std::getenv("PATH");
  auto runtime =
      oci::find_runtime(cfg.runtimes, env_path != nullptr ? env_path : "", real_path("/proc/self/exe"));
  if (!runtime) {
    return fail_shim(runtime.error().message);
  }
  std::vector<char*> argv;
  std::string argv0 = *runtime;
  argv.push_back(argv0.data());
  std::vector<std::string> copy = args;
  for (auto& arg : copy) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  ::execve(runtime->c_str(), argv.data(), environ);
  return report(Error{"exec " + *runtime + ": " + std::strerror(errno)});
}

Action define_runtime(CLI::App& command) {
  command.prefix_command();
  command.footer(
      "Every argument is passed to the real runtime (the config's `runtimes`, default runc then crun). "
      "On create/run the bundle's config.json gets the requested GPUs first. The config file comes from "
      "$GPUCTK_CONFIG or /etc/gpuctk/config.yaml. `gpuctk runtime configure --help`: make the shim a runtime "
      "of containerd, CRI-O or docker (as gpuctk-runtime, `configure` goes to runc like any argument).");
  return [&command] {
    const std::vector<std::string> args = command.remaining();
    // runc has no `configure` command, so the word is gpuctk's own here.
    if (!args.empty() && args.front() == "configure") {
      return run_runtime_configure({args.begin() + 1, args.end()});
    }
    return run_runtime_shim(args);
  };
}

}  // namespace gpuctk::cli
