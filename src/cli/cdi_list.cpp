// gpuctk cdi list [--spec-dir DIR]... [--verbose]: the device names CDI runtimes can resolve.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cdi/registry.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

struct ListOptions {
  std::vector<std::string> spec_dirs;
  bool verbose = false;
};

}  // namespace

Action define_cdi_list(CLI::App& command) {
  auto options = std::make_shared<ListOptions>();
  command
      .add_option("--spec-dir", options->spec_dirs,
                  "Spec directory to read; repeat for more, lowest priority first (default: the config's "
                  "spec-dirs, /etc/cdi then /var/run/cdi unless it says otherwise)")
      ->type_name("DIR")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command.add_flag("-v,--verbose", options->verbose,
                   "Also print the spec file each device comes from: NAME<TAB>FILE");
  command.footer(
      "Prints the qualified names (vendor/class=name) that resolve, sorted, one per line. Files that cannot\n"
      "be used and devices defined twice in one directory are reported as warnings on stderr; a device in a\n"
      "later directory replaces the same device in an earlier one. No device at all is a note on stderr\n"
      "naming the directories read (exit status 0).");
  return [options] {
    std::vector<std::string> dirs = options->spec_dirs;
    if (dirs.empty()) {
      // The directories the hooks and the shim resolve devices in (a broken config file still gives its
      // valid keys; the hooks report its problems).
      dirs = config::read_config("").config.spec_dirs;
    }
    const cdi::Registry registry = cdi::scan_spec_dirs(dirs);
    for (const auto& [name, device] : registry.devices) {
      if (options->verbose) {
        std::printf("%s\t%s\n", name.c_str(), device.spec_file.c_str());
      } else {
        std::printf("%s\n", name.c_str());
      }
    }
    std::fflush(stdout);
    for (const std::string& error : registry.errors) {
      warn(error);
    }
    if (registry.devices.empty()) {
      note("no CDI device in " + join(dirs, ", ") + " (gpuctk cdi generate --output " +
           (dirs.empty() ? std::string("/etc/cdi") : dirs.front()) + "/nvidia.yaml writes one)");
    }
    return k_exit_ok;
  };
}

}  // namespace gpuctk::cli
