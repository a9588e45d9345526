// gpuctk: thin entry point; everything lives in gpuctk_core.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sys/syscall.h>
#include <unistd.h>

// Sanitizer builds only. A createContainer hook runs in the container's PID namespace while /proc is
// still the host's, so LeakSanitizer's look at /proc/<its pid>/task fails and it aborts the hook.
// Leaks are checked wherever /proc/self is this process; elsewhere (those hooks) they cannot be.
// It runs before the heap, libstdc++ and the sanitizer's interceptors are ready: raw system calls and a
// stack buffer only.
extern "C" __attribute__((no_sanitize("address", "undefined"))) const char* __lsan_default_options() {
  char self[32] = {};
  const long n = ::syscall(SYS_readlink, "/proc/self", self, sizeof self - 1);  // not intercepted
  char pid[32] = {};
  int len = 0;
  for (unsigned long v = static_cast<unsigned long>(::getpid()); v != 0 && len < 31; v /= 10) {
    pid[len++] = static_cast<char>('0' + v % 10);
  }
  bool same = n == len;
  for (int i = 0; same && i < len; ++i) {
    same = self[i] == pid[len - 1 - i];
  }
  return same ? "detect_leaks=1" : "detect_leaks=0";
}
#endif

int main(int argc, char** argv) {
  try {
    // Installed as gpuctk-runtime (containerd BinaryName, docker runtimes), the binary is the shim and
    // every argument belongs to runc.
    const std::string_view name = argv[0];
    if (name == "gpuctk-runtime" || name.ends_with("/gpuctk-runtime")) {
      return gpuctk::cli::run_runtime_shim(std::vector<std::string>(argv + 1, argv + argc));
    }
    // docker enables `--gpus` when an executable of this name is on dockerd's PATH and runs it as a
    // prestart hook ("nvidia-container-runtime-hook prestart").
    if (name == "nvidia-container-runtime-hook" || name.ends_with("/nvidia-container-runtime-hook")) {
      return gpuctk::cli::run_legacy_hook_name(std::vector<std::string>(argv + 1, argv + argc));
    }
    // The createContainer hooks of the specs NVIDIA's toolkit wrote run /usr/bin/nvidia-cdi-hook <hook> ...:
    // gpuctk stands in once NVIDIA's package is gone (`gpuctk install --nvidia-cdi-hook-link`).
    if (name == "nvidia-cdi-hook" || name.ends_with("/nvidia-cdi-hook")) {
      return gpuctk::cli::run_nvidia_cdi_hook(std::vector<std::string>(argv + 1, argv + argc));
    }
    return gpuctk::cli::run(argc, argv);
  } catch (const std::exception& e) {
    return gpuctk::cli::report(gpuctk::Error{std::string("internal error: ") + e.what()});
  }
}
