// gpuctk hook update-ldcache --folder DIR...: the driver's library directories in the container's
// dynamic loader search: its linker cache (glibc), written by the host's ldconfig run in a sandbox on the
// container root, and musl's path file.
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"
#include "rootfs/ld_cache_update.hpp"

namespace gpuctk::cli {

Action define_hook_update_ldcache(CLI::App& command) {
  struct Args {
    std::string config_path;
    std::string ldconfig_path = "@/sbin/ldconfig";
    std::vector<std::string> folders;
  };
  auto args = std::make_shared<Args>();
  add_config_option(command, args->config_path);
  command
      .add_option("--ldconfig-path", args->ldconfig_path,
                  "ldconfig to run: @PATH is a host path (default @/sbin/ldconfig, or .real beside it)")
      ->capture_default_str();
  command.add_option("--folder", args->folders, "A library directory of the container to add to its cache")
      ->type_name("DIR");
  command.footer(
      "A createContainer hook: reads the OCI state on stdin. Folders the image's own configuration does not "
      "name go in an /etc/ld.so.conf.d drop-in of the container, then ldconfig runs in new namespaces, "
      "pivoted into the container root, with no_new_privs, three capabilities and a seccomp allow-list. A "
      "musl image (/lib/ld-musl-<arch>.so.1) gets them in /etc/ld-musl-<arch>.path instead, and no "
      "ldconfig run.");
  return [args] {
    return run_container_hook(
        args->config_path, "update-ldcache",
        [args](const hook::Config&, const hook::Log&) -> Result<ContainerHookBody> {
          if (args->folders.size() > hook::k_max_hook_args) {
            return fail("too many folders");
          }
          // The host's ldconfig is opened now (hook prestart: before it enters the container's
          // namespace), but an error only counts where it is run: a musl image runs none.
          auto host = std::make_shared<Result<std::optional<UniqueFd>>>(
              hook::open_host_ldconfig(args->ldconfig_path));
          return ContainerHookBody([args, host](const rootfs::Root& root, const hook::Config& cfg,
                                                const hook::Log&) -> Result<void> {
            return rootfs::update_library_search(root, args->folders, [&]() -> Result<UniqueFd> {
              if (!*host) {
                return std::unexpected(host->error());
              }
              if ((*host)->has_value()) {
                return std::move(**host).value();
              }
              return hook::open_ldconfig(args->ldconfig_path, root, cfg);  // the image's, when allowed
            });
          });
        });
  };
}

}  // namespace gpuctk::cli
