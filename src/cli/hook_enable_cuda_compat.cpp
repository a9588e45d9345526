// gpuctk hook enable-cuda-compat [--host-driver-version V] [--host-cuda-version C]
// [--cuda-compat-container-root DIR]: the image's CUDA forward-compat libraries first in the linker path,
// when they are made for the host's driver and newer than it (hook/cuda_compat.hpp decides).
#include <memory>

#include "cli/commands.hpp"
#include "hook/container_hooks.hpp"

namespace gpuctk::cli {

Action define_hook_enable_cuda_compat(CLI::App& command) {
  struct Args {
    std::string config_path;
    hook::CudaCompatHost host;
    std::string compat_dir = hook::k_cuda_compat_dir;
  };
  auto args = std::make_shared<Args>();
  add_config_option(command, args->config_path);
  command.add_option(
      "--host-driver-version", args->host.driver_version,
      "The host's driver version, e.g. 570.211.01. With the compat library's note: used when the "
      "note lists the host driver's major and the compat library is newer; without a note: when "
      "the compat library's major is greater");
  command.add_option(
      "--host-cuda-version", args->host.cuda_version,
      "The CUDA version the host driver supports, e.g. 12.8. Used when the host driver version or "
      "the compat library's version is not known: the compat libraries are used when their note "
      "says a newer CUDA version, never without a note");
  command.add_option("--cuda-compat-container-root", args->compat_dir,
                     std::string("The folder of the compat libraries in the container (an absolute path, "
                                 "resolved inside the root); default ") +
                         hook::k_cuda_compat_dir);
  command.footer(
      std::string("A createContainer hook: reads the OCI state on stdin. Looks for one libcuda.so.*.* "
                  "in the compat folder and reads its .note.cuda.fwd_compatibility; writes ") +
      hook::k_cuda_compat_dropin +
      " naming the folder when its libraries are to be used. Does nothing without a host version. A "
      "note it cannot read is a warning in the log, never an error.");
  return [args] {
    return run_container_hook(
        args->config_path, "enable-cuda-compat",
        [args](const rootfs::Root& root, const hook::Config&, const hook::Log& log) -> Result<void> {
          GPUCTK_TRY_ASSIGN(auto enabled, hook::enable_cuda_compat(root, args->host, args->compat_dir, log));
          if (enabled) {
            log.info("enable-cuda-compat: using " + args->compat_dir + " in " + root.path());
          }
          return {};
        });
  };
}

}  // namespace gpuctk::cli
