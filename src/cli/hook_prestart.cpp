// gpuctk hook prestart: the OCI prestart (or createRuntime) hook, and the same hook under the name docker's
// `--gpus` runs, nvidia-container-runtime-hook. The OCI state arrives on stdin; the GPUs are put into the
// created container live (inject/prestart.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "inject/entry.hpp"
#include "inject/prestart.hpp"
#include "oci/bundle.hpp"
#include "oci/state.hpp"
#include "steps/root_edits.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

// Whether `hook` (its program opened before the container's namespace is entered) is one of this
// gpuctk's own createContainer hooks: the same executable file as this process (`self`), run as
// "gpuctk hook <name>". Those run in this process (prepare_hook_in_process); anything else (another
// vendor's spec) is exec'ed from its fd as a runtime would.
bool is_own_hook(const oci::OpenedHook& hook, const std::optional<struct stat>& self) {
  const auto& args = hook.command.args;
  if (!self || args.size() < 3 || args[1] != "hook" || args[2] == "prestart" || args[2] == "precreate") {
    return false;
  }
  struct stat other {};
  return ::fstat(hook.program.get(), &other) == 0 && self->st_dev == other.st_dev &&
         self->st_ino == other.st_ino;
}

Result<void> run_prestart(inject::HookStart& start) {
  auto state = read_hook_stdin("OCI state", steps::k_max_state_size);
  if (!state) {
    return fail_with("prestart", state.error());
  }
  // Which container the lines are about (inject::prestart parses the state again, and says what is wrong
  // with one that does not parse).
  if (const auto parsed = oci::parse_state(*state)) {
    start.log.set_context("container " + parsed->id);
    if (start.problem) {
      // Only here is config.json read before inject::prestart reads it: to let a container without a GPU
      // through a broken config.
      auto container = oci::read_config(parsed->bundle);
      if (!container) {
        return fail_with("prestart", container.error());
      }
      inject::announce_warnings(start, warn);
      start.warnings.clear();
      GPUCTK_TRY_ASSIGN(const auto gated, inject::gate(start, *container, "the container", warn));
      if (gated == inject::Gate::pass_through) {
        return {};
      }
    }
  }
  inject::announce_warnings(start, warn);
  start.warnings.clear();
  if (start.problem) {
    return std::unexpected(*start.problem);
  }
  // This executable, as the host sees it (hooks are prepared before the container's namespace is
  // entered, and so is this).
  std::optional<struct stat> self;
  if (struct stat st{}; ::stat("/proc/self/exe", &st) == 0) {
    self = st;
  }
  const config::Config& cfg = start.config;
  const config::Log& log = start.log;
  const auto prepare = [&](const oci::HookCommand& hook,
                           const inject::SandboxCgroupRef& cgroup) -> Result<inject::ContainerHook> {
    GPUCTK_TRY_ASSIGN(auto opened, oci::open_hook(hook));
    if (!is_own_hook(opened, self)) {
      return inject::foreign_hook(std::move(opened));
    }
    GPUCTK_TRY_ASSIGN(auto body, prepare_hook_in_process(hook.args, cfg, log, cgroup));
    return inject::ContainerHook(
        [body = std::move(body)](std::string_view, const rootfs::Root& root) { return body(root); });
  };
  if (auto done = inject::prestart(*state, cfg, log, prepare); !done) {
    return fail_with("prestart", done.error());
  }
  return {};
}

int run_prestart(const std::string& config_path) {
  inject::HookStart start = inject::start_hook(config_path);
  if (auto r = run_prestart(start); !r) {
    inject::announce_warnings(start, warn);  // when the state could not be read: still said once
    start.log.error(r.error().message);
    return report(r.error());
  }
  return k_exit_ok;
}

constexpr const char* k_legacy_usage =
    "usage: nvidia-container-runtime-hook prestart|poststart|poststop\n"
    "\n"
    "This is gpuctk under the name docker's `--gpus` looks for on dockerd's PATH. `prestart` is\n"
    "`gpuctk hook prestart` (the OCI state on stdin, the config from $GPUCTK_CONFIG or\n"
    "/etc/gpuctk/config.yaml); poststart and poststop do nothing.\n";

}  // namespace

Action define_hook_prestart(CLI::App& command) {
  auto config_path = std::make_shared<std::string>();
  add_config_option(command, *config_path);
  command.footer(
      "An OCI prestart hook (also usable at createRuntime): reads the OCI state on stdin and the bundle's "
      "config.json, and puts the requested GPUs into the created container live: device nodes, read-only "
      "driver mounts, the spec's createContainer hooks (links, linker cache) and the device cgroup. The "
      "container's environment cannot change at this point and stays as the image and the pod set it.");
  return [config_path] { return run_prestart(*config_path); };
}

int run_legacy_hook_name(const std::vector<std::string>& args) {
  // NVIDIA's hook also takes -config, -debug and -version flags; docker passes only the stage.
  if (args.size() == 1 && args[0] == "prestart") {
    return run_prestart("");
  }
  if (args.size() == 1 && (args[0] == "poststart" || args[0] == "poststop")) {
    return k_exit_ok;
  }
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help")) {
    std::fputs(k_legacy_usage, stdout);
    return k_exit_ok;
  }
  const std::string got = args.empty()
                              ? std::string("no argument")
                              : (args.size() == 1 ? "argument " : "arguments ") + quote(join(args, " "));
  std::fprintf(stderr,
               "gpuctk: error: nvidia-container-runtime-hook: %s (want prestart, poststart or poststop; see "
               "nvidia-container-runtime-hook --help)\n",
               escape_for_log(got).c_str());
  return k_exit_usage;
}

}  // namespace gpuctk::cli
