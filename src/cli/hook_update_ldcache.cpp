// gpuctk hook update-ldcache --folder DIR...: the driver's library directories in the container's
// dynamic loader search: its linker cache (glibc), written by the host's ldconfig run in a sandbox on the
// container root, and musl's path file.
#include <memory>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"
#include "rootfs/ld_cache_update.hpp"
#include "util/strings.hpp"

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
                  "The host's ldconfig to run, PATH or @PATH (as NVIDIA's toolkit; .real beside it is "
                  "preferred); an image's ldconfig is never run")
      ->capture_default_str();
  command.add_option("--folder", args->folders, "A library directory of the container to add to its cache")
      ->type_name("DIR");
  command.footer(
      "A createContainer hook: reads the OCI state on stdin. Folders the image's own configuration does not "
      "name go in an /etc/ld.so.conf.d drop-in of the container, then ldconfig runs in new namespaces, "
      "pivoted into the container root made read-only, as an unprivileged user of its own user namespace, "
      "with no capability and a seccomp allow-list, and the cache it made is installed. A "
      "musl image (/lib/ld-musl-<arch>.so.1) gets them in /etc/ld-musl-<arch>.path instead, and no "
      "ldconfig run.");
  return [args] {
    return run_container_hook(
        args->config_path, "update-ldcache",
        [args](const hook::Config& cfg, const hook::Log& log) -> Result<ContainerHookBody> {
          if (args->folders.size() > hook::k_max_hook_args) {
            return fail("too many folders");
          }
          if (cfg.allow_ldconfig_from_container) {
            log.warning("update-ldcache: allow-ldconfig-from-container is no longer used: --ldconfig-path " +
                        quote(args->ldconfig_path) +
                        " names the host's ldconfig, and an image's is never run");
          }
          // The host's ldconfig is opened now (hook prestart: before it enters the container's
          // namespace), but an error only counts where it is run: a musl image runs none.
          auto host = std::make_shared<Result<UniqueFd>>(hook::open_host_ldconfig(args->ldconfig_path));
          return ContainerHookBody([args, host, limits = sandbox_limits()](const rootfs::Root& root,
                                                                           const hook::Config&,
                                                                           const hook::Log&) -> Result<void> {
            return rootfs::update_library_search(
                root, args->folders,
                [&]() -> Result<UniqueFd> {
                  if (!*host) {
                    return std::unexpected(host->error());
                  }
                  return std::move(**host);
                },
                limits);
          });
        });
  };
}

}  // namespace gpuctk::cli
