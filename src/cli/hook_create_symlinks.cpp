// gpuctk hook create-symlinks --link TARGET::LINK...: the links a driver needs in the container
// (libcuda.so.1 -> libcuda.so.<version>, /dev/dri/by-path/...), created inside the root.
#include <memory>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"

namespace gpuctk::cli {

Action define_hook_create_symlinks(CLI::App& command) {
  struct Args {
    std::string config_path;
    std::vector<std::string> links;
  };
  auto args = std::make_shared<Args>();
  add_config_option(command, args->config_path);
  command.add_option("--link", args->links, "TARGET::LINK: make LINK (a container path) a symlink to TARGET")
      ->type_name("TARGET::LINK");
  command.footer(
      "A createContainer hook: reads the OCI state on stdin. A link that already points at TARGET is "
      "left alone; anything else at LINK (not a directory) is replaced atomically.");
  return [args] {
    return run_container_hook(
        args->config_path, "create-symlinks",
        [args](const rootfs::Root& root, const hook::Config&, const hook::Log& log) -> Result<void> {
          auto links = hook::parse_links(args->links);
          if (!links) {
            return std::unexpected(links.error());
          }
          GPUCTK_TRY_ASSIGN(auto changed, hook::create_symlinks(root, *links));
          if (log.enabled(hook::LogLevel::debug)) {
            log.write(hook::LogLevel::debug, "create-symlinks: " + std::to_string(changed) + " of " +
                                                 std::to_string(links->size()) + " links created in " +
                                                 root.path());
          }
          return {};
        });
  };
}

}  // namespace gpuctk::cli
