#pragma once
// The command-line options of every command that discovers a host (cdi generate, info, labels, install):
// --driver-root, --dev-root and --mode declared once, with one help text and one check each, so that the
// same option means and accepts the same thing in every command.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "discover/gated_devices.hpp"
#include "util/error.hpp"

namespace gpuctk::cli {

// Where and how a command discovers the host (discover::DiscoverOptions before parsing).
struct DiscoveryArgs {
  std::string driver_root = "/";
  std::string dev_root = "/";
  std::string mode = "auto";  // discover::parse_mode, checked while parsing
};

// cdi generate's --mode for a spec of the host's IMEX channels (cdi/imex_spec.hpp); no discovery mode.
inline constexpr std::string_view k_imex_mode = "imex";

// The opt-in feature cdi generate's --mode names for a spec of its devices alone (cdi/gated_spec.hpp):
// gds, mofed, gdrcopy or nvswitch; nothing for any other mode.
std::optional<discover::GatedFeature> gated_mode(std::string_view mode);

// Which values --mode takes.
enum class ModeChoice : uint8_t {
  // auto, nvml, proc or management: a spec's modes (info).
  spec,
  // spec's, imex: a spec of the host's IMEX channels alone, and gds, mofed, gdrcopy, nvswitch: a spec of
  // that feature's devices alone (cdi generate).
  generate,
  // auto, nvml or proc: what is on the node; management shapes a spec, it finds nothing (labels).
  node,
};

// Adds --driver-root and --dev-root (absolute paths, default "/") bound to `driver_root` and `dev_root`.
void add_root_options(CLI::App& command, std::string& driver_root, std::string& dev_root);

// add_root_options, and --mode (alias --discovery-mode, nvidia-ctk's name) taking `modes`.
void add_discovery_options(CLI::App& command, DiscoveryArgs& args, ModeChoice modes);

// Adds --compat32, bound to `libraries32` (cdi::BuildOptions::libraries32): the spec written mounts the
// 32-bit driver libraries too, for containers that ask for the compat32 capability. `cdi generate` leaves
// them out by default, as NVIDIA's spec does (Compat32Default::off); `install` writes them by default
// (Compat32Default::on, with --no-compat32 to leave them out): its spec is also the one the hook and the
// shim inject from, where NVIDIA_DRIVER_CAPABILITIES=compat32 (and "all") must get them, as
// libnvidia-container gives them.
enum class Compat32Default { off, on };
void add_compat32_option(CLI::App& command, bool& libraries32, Compat32Default default_value);

// Every path option's check: "\"<path>\" is not an absolute path" for a relative one.
Result<void> check_absolute(std::string_view path);

}  // namespace gpuctk::cli
