// The shared start of the in-container hooks: config and log, the OCI state on stdin, the container root.
#include <unistd.h>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

void add_config_option(CLI::App& command, std::string& config_path) {
  command.add_option("--config", config_path,
                     "Config file (default $GPUCTK_CONFIG or /etc/gpuctk/config.yaml)");
}

namespace {

// Set while `hook prestart` runs one of gpuctk's own createContainer hooks in its own process.
InProcessHook* g_in_process = nullptr;

}  // namespace

Result<void> run_hook_in_process(const std::vector<std::string>& args, const rootfs::Root& root,
                                 const hook::Config& config, const hook::Log& log) {
  InProcessHook context{&root, &config, &log, {}};
  g_in_process = &context;
  std::vector<std::string> argv = args;
  std::vector<char*> pointers;
  for (auto& arg : argv) {
    pointers.push_back(arg.data());
  }
  pointers.push_back(nullptr);
  const int status = run(static_cast<int>(argv.size()), pointers.data());
  g_in_process = nullptr;
  if (context.error) {
    return std::unexpected(*context.error);
  }
  if (status != k_exit_ok) {
    // A usage error, already printed (a spec that gives a gpuctk hook arguments it does not take).
    return fail("hook " + join(args, " ") + ": exit status " + std::to_string(status));
  }
  return {};
}

int run_container_hook(const std::string& config_path, const std::string& name,
                       const ContainerHookBody& body) {
  if (g_in_process != nullptr) {
    // The caller has the container root open and reports the error itself, once.
    if (auto r = body(*g_in_process->root, *g_in_process->config, *g_in_process->log); !r) {
      g_in_process->error = fail_with(name, r.error()).error();
      return k_exit_failure;
    }
    return k_exit_ok;
  }
  return run_with_log(config_path, [&](const hook::Config& cfg, const hook::Log& log) -> Result<void> {
    auto state = read_fd(STDIN_FILENO, "the OCI state on standard input", hook::k_max_state_size);
    if (!state) {
      return fail_with(name, state.error());
    }
    auto path = hook::container_root_from_state(*state);
    if (!path) {
      return fail_with(name, path.error());
    }
    auto root = rootfs::Root::open(*path);
    if (!root) {
      return fail_with(name, root.error());
    }
    if (auto r = body(*root, cfg, log); !r) {
      return fail_with(name, r.error());
    }
    return {};
  });
}

}  // namespace gpuctk::cli
