#pragma once
// The MPS directories at injection (security rule 9 in docs/architecture.md): what gpuctk mounts for a
// container's CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY.
//
//  1. config.json already mounts something at or above the path (destination equal to it or a parent
//     directory of it, cleaned): nothing. This is how the Kubernetes device plugin does MPS: its Allocate
//     sets CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe, a path in the container, and adds the mount of
//     the host directory itself. Leaving a path alone grants nothing, so a mount the pod added itself
//     is harmless.
//  2. Otherwise the value names a host directory (under dev-root), which is bind-mounted read-write at the
//     same path, only if: it is strictly below one of the configured roots (mps-pipe-roots,
//     mps-log-roots), never a root itself (a root holds every daemon's pipes); it has no
//     subdirectory (one daemon's directory, not a tree of them); and the walk from the host's "/" to it
//     met no symlink, only directories owned by root, none of them writable by group or others from
//     the root down (above the root: unless sticky, as /tmp is).

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cdi/spec.hpp"
#include "config/config.hpp"
#include "config/log.hpp"
#include "inject/request.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

// The destination in config.json's mounts that is `path` or a parent directory of it ("/" included), if
// any, cleaned. Mounts that are not objects or have no string destination are passed over.
std::optional<std::string> mounted_at_or_above(const nlohmann::ordered_json& config, const std::string& path);

// Appends to `edits` the mount of each MPS directory `request` names (rule 2 above), each decision
// logged. Errors, one per broken rule, name the variable and the path:
//   "<VAR>: \"<path>\" is an MPS root itself (<roots>; config key <key>): only one daemon's directory
//    below a root is mounted",
//   "<VAR>: \"<path>\" is not mounted by config.json and is not below an MPS root on the host (<roots or
//    none configured>; config key <key>)",
//   "<VAR>: host directory <dir> is owned by uid <n>, not root (...)", "... is writable by group or others
//   (mode <mode>; ...)", "<VAR>: host path <dir> is a symbolic link (...)", "<VAR>: host directory <dir>
//   has a subdirectory \"<name>\" (...)", "<VAR>: host directory <dir>: No such file or directory (is the
//   MPS control daemon running?)".
Result<void> add_mps_mounts(cdi::ContainerEdits& edits, const nlohmann::ordered_json& config,
                            const Request& request, const config::Config& cfg, const config::Log& log);

}  // namespace gpuctk::inject
