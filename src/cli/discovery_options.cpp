#include "cli/discovery_options.hpp"

#include "cli/commands.hpp"
#include "discover/discover.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

// --mode of a command that looks at what is on the node: discovery's modes but management, which shapes
// a spec (one "all" device), not what is found.
Result<void> check_node_mode(std::string_view text) {
  const auto mode = discover::parse_mode(text);
  if (!mode) {
    return fail("unknown mode " + quote(text) + " (want auto, nvml or proc)");
  }
  if (*mode == discover::Mode::management) {
    return fail("\"management\" is a spec's mode, not a discovery one (want auto, nvml or proc)");
  }
  return {};
}

// --mode of cdi generate: a spec's modes, imex (which discovers only the IMEX channels) and the opt-in
// features' (which discover only their devices).
Result<void> check_generate_mode(std::string_view text) {
  if (text == k_imex_mode || gated_mode(text)) {
    return {};
  }
  // nvidia-ctk's modes gpuctk does not have: one line saying why, not "unknown".
  if (text == "csv") {
    return fail(
        "mode \"csv\" is nvidia-ctk's for Tegra (Jetson) systems, whose driver CSV files describe; "
        "gpuctk discovers discrete GPUs only");
  }
  if (text == "wsl") {
    return fail(
        "mode \"wsl\" is nvidia-ctk's for WSL2 (/dev/dxg and the driver store); gpuctk does not "
        "discover WSL2's GPUs");
  }
  if (!discover::parse_mode(text)) {
    return fail("unknown mode " + quote(text) +
                " (want auto, nvml, proc, management, imex, gds, mofed, gdrcopy or nvswitch)");
  }
  return {};
}

}  // namespace

std::optional<discover::GatedFeature> gated_mode(std::string_view mode) {
  for (const auto& info : discover::gated_features()) {
    if (info.name == mode) {
      return info.feature;
    }
  }
  return std::nullopt;
}

Result<void> check_absolute(std::string_view path) {
  if (!path.starts_with('/')) {
    return fail(quote(path) + " is not an absolute path");
  }
  return {};
}

void add_root_options(CLI::App& command, std::string& driver_root, std::string& dev_root) {
  command
      .add_option("--driver-root", driver_root,
                  "Root of the driver files: libraries, binaries, ld.so.cache (a driver container's: "
                  "/run/nvidia/driver)")
      ->capture_default_str()
      ->check(value_check(check_absolute));
  command.add_option("--dev-root", dev_root, "Root of /dev, /proc and /sys")
      ->capture_default_str()
      ->check(value_check(check_absolute));
}

void add_compat32_option(CLI::App& command, bool& libraries32, Compat32Default default_value) {
  if (default_value == Compat32Default::off) {
    command.add_flag("--compat32", libraries32,
                     "Mount the 32-bit driver libraries too, with their links and folder, for the compat32 "
                     "capability (default: left out, as in NVIDIA's spec; no default request uses them)");
    return;
  }
  libraries32 = true;
  command.add_flag("--compat32,!--no-compat32", libraries32,
                   "The spec mounts the 32-bit driver libraries, with their links and folder (default: yes, "
                   "for the hook's and the shim's compat32 requests; --no-compat32 leaves them out, as "
                   "NVIDIA's spec does, for a node where only CDI engines read it)");
}

void add_discovery_options(CLI::App& command, DiscoveryArgs& args, ModeChoice modes) {
  add_root_options(command, args.driver_root, args.dev_root);
  if (modes == ModeChoice::generate) {
    command
        .add_option(
            "--mode,--discovery-mode", args.mode,
            "auto, nvml, proc, management, or imex: the host's IMEX channels alone (one device per "
            "channel, named by its number, and all), or gds, mofed, gdrcopy, nvswitch: that feature's "
            "devices alone (/dev/nvidia-fs* with cuFile's and udev's files, /dev/infiniband/uverbs* "
            "and rdma_cm, /dev/gdrdrv, /dev/nvidia-nvswitch*) as the one device all")
        ->capture_default_str()
        ->check(value_check(check_generate_mode));
  } else if (modes == ModeChoice::spec) {
    command.add_option("--mode,--discovery-mode", args.mode, "auto, nvml, proc or management")
        ->capture_default_str()
        ->check(value_check(discover::parse_mode));
  } else {
    command
        .add_option("--mode,--discovery-mode", args.mode,
                    "auto, nvml or proc (proc finds less: no memory, compute capability or CUDA version)")
        ->capture_default_str()
        ->check(value_check(check_node_mode));
  }
}

}  // namespace gpuctk::cli
