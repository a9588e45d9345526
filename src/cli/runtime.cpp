// gpuctk runtime: a runc-compatible shim. On `create` (and `run`) it injects the requested GPUs into
// <bundle>/config.json (replaced atomically; inject/shim_bundle.hpp), then execs the real runtime with the
// unchanged arguments; every other subcommand goes straight through. Also reachable as a binary named
// `gpuctk-runtime`, which is what containerd's BinaryName and docker's runtimes setting point at. `gpuctk
// runtime configure …` (and only under the name gpuctk, the word first) is another command:
// cli/runtime_configure.cpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "config/config.hpp"
#include "config/log.hpp"
#include "inject/entry.hpp"
#include "inject/shim_bundle.hpp"
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
    line = nlohmann::json{{"level", level}, {"msg", "gpuctk: " + text}, {"time", config::utc_timestamp()}}
               .dump() +
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
  config::Config cfg;
  // Arguments we do not understand go to the runtime untouched: it reports them better than we can.
  if (parsed.unparseable.empty() && parsed.creates_container()) {
    inject::HookStart start = inject::start_hook("");
    // The shim's warnings go to the terminal and to the engine's --log.
    const auto warn_both = [&parsed](std::string_view warning) {
      warn(warning);
      log_to_engine(parsed, std::string(warning), "warning");
    };
    // The prestart hook of runtime-mode prestart runs with PATH as its only environment: it is told
    // which config file the shim used.
    const char* gpuctk_config = std::getenv("GPUCTK_CONFIG");
    const inject::ShimBundle bundle{.config_file = parsed.config_file,
                                    .bundle = parsed.bundle,
                                    .gpuctk_config = gpuctk_config != nullptr ? gpuctk_config : ""};
    if (auto edited = inject::edit_bundle(bundle, start, warn_both); !edited) {
      const std::string message =
          "could not inject GPUs into " + parsed.config_file + ": " + edited.error().message;
      start.log.error(message);
      return fail_shim(message);
    }
    cfg = std::move(start.config);
  } else {
    cfg = config::read_config("").config;
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
  // `gpuctk runtime configure` is a row of its own (cli/app.cpp): CLI11 runs it instead of this.
  return [&command] { return run_runtime_shim(command.remaining()); };
}

}  // namespace gpuctk::cli
