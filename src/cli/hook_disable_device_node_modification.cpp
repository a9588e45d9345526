// gpuctk hook disable-device-node-modification: the container sees ModifyDeviceFiles: 0 in
// /proc/driver/nvidia/params, so the driver's user-space libraries in it never try to mknod.
#include <memory>

#include "cli/commands.hpp"
#include "discover/host_fs.hpp"
#include "hook/container_hooks.hpp"

namespace gpuctk::cli {

Action define_hook_disable_device_node_modification(CLI::App& command) {
  auto config_path = std::make_shared<std::string>();
  add_config_option(command, *config_path);
  command.footer(
      "A createContainer hook: reads the OCI state on stdin. Mounts a read-only copy of the host's "
      "<dev-root>/proc/driver/nvidia/params with ModifyDeviceFiles: 0 over the container's.");
  return [config_path] {
    return run_container_hook(
        *config_path, "disable-device-node-modification",
        [](const hook::Config& cfg, const hook::Log&) -> Result<ContainerHookBody> {
          // The host's file now (hook prestart: before it enters the container's namespace).
          const std::string host = discover::under_root(cfg.dev_root, "/proc/driver/nvidia/params");
          GPUCTK_TRY_ASSIGN(auto params, hook::read_hidden_params(host));
          return ContainerHookBody([params = std::move(params)](const rootfs::Root& root, const hook::Config&,
                                                                const hook::Log&) -> Result<void> {
            if (params) {
              GPUCTK_TRY(hook::mount_hidden_params(root, *params));
            }
            return {};
          });
        });
  };
}

}  // namespace gpuctk::cli
