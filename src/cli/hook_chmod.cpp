// gpuctk hook chmod --mode M --path P...: permissions of directories inside the container (not emitted
// by default; for rootless runtimes that create nested /dev directories with the wrong mode).
#include <memory>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

Action define_hook_chmod(CLI::App& command) {
  struct Args {
    std::string config_path;
    std::string mode;
    std::vector<std::string> paths;
  };
  auto args = std::make_shared<Args>();
  add_config_option(command, args->config_path);
  command.add_option("--mode", args->mode, "Octal mode, e.g. 755")->required();
  command.add_option("--path", args->paths, "A container path")->required();
  command.footer("A createContainer hook: reads the OCI state on stdin. Never follows a symlink; EPERM is ignored.");
  return [args] {
    return run_container_hook(args->config_path, "chmod",
                              [&](const rootfs::Root& root, const hook::Config&, const hook::Log&) -> Result<void> {
                                unsigned mode = 0;
                                if (args->mode.empty() || args->mode.size() > 4 ||
                                    args->mode.find_first_not_of("01234567") != std::string::npos) {
                                  return fail("--mode " + quote(args->mode) + ": expected an octal mode such as 755");
                                }
                                for (const char c : args->mode) {
                                  mode = mode * 8 + static_cast<unsigned>(c - '0');
                                }
                                auto changed = hook::chmod_paths(root, mode, args->paths);
                                if (!changed) {
                                  return std::unexpected(changed.error());
                                }
                                return {};
                              });
  };
}

}  // namespace gpuctk::cli
