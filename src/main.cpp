// gpuctk: thin entry point; everything lives in gpuctk_core.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  try {
    // Installed as gpuctk-runtime (containerd BinaryName, docker runtimes), the binary is the shim and
    // every argument belongs to runc.
    const std::string_view name = argv[0];
    if (name == "gpuctk-runtime" || name.ends_with("/gpuctk-runtime")) {
      return gpuctk::cli::run_runtime_shim(std::vector<std::string>(argv + 1, argv + argc));
    }
    return gpuctk::cli::run(argc, argv);
  } catch (const std::exception& e) {
    return gpuctk::cli::report(gpuctk::Error{std::string("internal error: ") + e.what()});
  }
}
