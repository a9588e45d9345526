// gpuctk hook enable-cuda-compat --host-driver-version V: the image's CUDA forward-compat libraries
// first in the linker path, when they are newer than the host driver and made for it.
#include <memory>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"

namespace gpuctk::cli {

Action define_hook_enable_cuda_compat(CLI::App& command) {
  struct Args {
    std::string config_path;
    std::string host_driver_version;
  };
  auto args = std::make_shared<Args>();
  add_config_option(command, args->config_path);
  command.add_option("--host-driver-version", args->host_driver_version,
                     "The host's driver version, e.g. 535.183.01");
  command.footer(std::string("A createContainer hook: reads the OCI state on stdin. Looks at ") +
                 hook::k_cuda_compat_dir + " in the container; writes " + hook::k_cuda_compat_dropin +
                 " when its libraries are to be used.");
  return [args] {
    return run_container_hook(
        args->config_path, "enable-cuda-compat",
        [&](const rootfs::Root& root, const hook::Config&, const hook::Log& log) -> Result<void> {
          GPUCTK_TRY_ASSIGN(auto enabled, hook::enable_cuda_compat(root, args->host_driver_version));
          if (enabled) {
            log.info(std::string("enable-cuda-compat: using ") + hook::k_cuda_compat_dir + " in " +
                     root.path());
          }
          return {};
        });
  };
}

}  // namespace gpuctk::cli
