// The shared start of the in-container hooks: config and log, the OCI state on stdin, the container root.
#include <unistd.h>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"
#include "util/file.hpp"

namespace gpuctk::cli {

void add_config_option(CLI::App& command, std::string& config_path) {
  command.add_option("--config", config_path,
                     "Config file (default $GPUCTK_CONFIG or /etc/gpuctk/config.yaml)");
}

int run_container_hook(const std::string& config_path, const std::string& name,
                       const ContainerHookBody& body) {
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
