// The shared start of the in-container hooks: config and log, the OCI state on stdin, the container root.
#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

void add_config_option(CLI::App& command, std::string& config_path) {
  command.add_option("--config", config_path,
                     "Config file (default $GPUCTK_CONFIG or /etc/gpuctk/config.yaml)");
}

namespace {

// Set while prepare_hook_in_process runs one of gpuctk's own createContainer hooks' command lines.
struct InProcessHook {
  const hook::Config* config;
  const hook::Log* log;
  std::shared_ptr<const rootfs::SandboxCgroup> cgroup;  // where its sandboxed programs start
  std::optional<ContainerHookBody> body;                // what the hook made ready
  std::optional<Error> error;                           // the preparation's error, returned by the caller
};
InProcessHook* g_in_process = nullptr;

// `body` with its errors prefixed with the hook's `name`, once.
ContainerHookBody named(const std::string& name, ContainerHookBody body) {
  return [name, body = std::move(body)](const rootfs::Root& root, const hook::Config& config,
                                        const hook::Log& log) -> Result<void> {
    if (auto r = body(root, config, log); !r) {
      return fail_with(name, r.error());
    }
    return {};
  };
}

}  // namespace

rootfs::SandboxLimits sandbox_limits() {
  rootfs::SandboxLimits limits;
  if (g_in_process != nullptr) {
    limits.cgroup = g_in_process->cgroup;
  }
  return limits;
}

Result<InProcessBody> prepare_hook_in_process(const std::vector<std::string>& args,
                                              const hook::Config& config, const hook::Log& log,
                                              std::shared_ptr<const rootfs::SandboxCgroup> cgroup) {
  InProcessHook context{&config, &log, std::move(cgroup), {}, {}};
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
  if (!context.body) {
    return InProcessBody([](const rootfs::Root&) -> Result<void> { return {}; });  // e.g. --help: done
  }
  return InProcessBody([body = std::move(*context.body), &config, &log](const rootfs::Root& root) {
    return body(root, config, log);
  });
}

int run_container_hook(const std::string& config_path, const std::string& name,
                       const ContainerHookPrepare& prepare) {
  if (g_in_process != nullptr) {
    // The caller runs the body later, on the root it opened, and reports any error itself, once.
    auto body = prepare(*g_in_process->config, *g_in_process->log);
    if (!body) {
      g_in_process->error = fail_with(name, body.error()).error();
      return k_exit_failure;
    }
    g_in_process->body = named(name, std::move(*body));
    return k_exit_ok;
  }
  return run_with_log(config_path, [&](const hook::Config& cfg, const hook::Log& log) -> Result<void> {
    auto state = read_hook_stdin("OCI state", hook::k_max_state_size);
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
    auto body = prepare(cfg, log);
    if (!body) {
      return fail_with(name, body.error());
    }
    return named(name, std::move(*body))(*root, cfg, log);
  });
}

int run_container_hook(const std::string& config_path, const std::string& name,
                       const ContainerHookBody& body) {
  return run_container_hook(
      config_path, name,
      ContainerHookPrepare(
          [body](const hook::Config&, const hook::Log&) -> Result<ContainerHookBody> { return body; }));
}

}  // namespace gpuctk::cli
