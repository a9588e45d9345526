#pragma once
// `gpuctk install`: put gpuctk on a node from a privileged pod that sees the node's root at a host root
// (/host), as NVIDIA's toolkit container does. The steps here are idempotent file operations below that
// root: each writes only when the result would differ, and says whether it changed anything, so a second
// run writes nothing. Paths given to these functions are the pod's (host root included); what is written
// *into* files (the config's hook-path, the spec's host paths) must be the node's, without the host root.

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <string_view>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::install {

// Whether a step changed the node.
enum class Change : uint8_t { unchanged, changed };

// `path` (on the node) as the pod sees it: `root` + `path` with every symbolic link among its existing
// components resolved inside `root`, as the node would resolve it. An absolute link target starts again at
// `root` (/var/run -> /run on Debian must not lead to the pod's own /run); ".." never climbs above it. The
// last component is not followed (a file to be replaced, or a link install makes); components that do not
// exist are kept as they are. Errors: more than 40 links ("… too many levels of symbolic links").
// Trust: the node's own root, seen from a privileged pod, is trusted entirely: its links are followed as
// the node's kernel follows them, ".." clamped at the root as the node's "/" clamps it, and the string
// answer is used later (a tree that changes meanwhile is not for this). Of gpuctk's three resolvers
// (discover::resolve_in_host_root_strict refuses escaping links; rootfs/in_root.hpp is for hostile
// container roots), only install uses this one.
Result<std::string> resolve_in_node_root_clamped(std::string_view root, std::string_view path);

// mkdir -p with mode 0755 for the directories it makes. Errors name the directory.
Result<void> make_dirs(const std::string& dir);

// `path` holds `bytes` with `mode` afterwards: written atomically and durably (temp file + rename) unless
// it already is a regular file with those bytes and that mode. The parent directories are made.
Result<Change> put_file(const std::string& path, std::string_view bytes, mode_t mode);

// `path` holds `bytes` (mode 0644) afterwards only when it did not exist (or `overwrite`): a config file
// an administrator may have edited since is left alone.
Result<Change> put_file_if_missing(const std::string& path, std::string_view bytes, bool overwrite);

// `link` is a symbolic link to `target` afterwards (made beside it under a temporary name, then renamed
// over `link`, so it never is missing); unchanged when it already is. The parent directories are made.
Result<Change> put_symlink(const std::string& target, const std::string& link);

// Removes the regular file `path`; a missing file is unchanged.
Result<Change> remove_file(const std::string& path);

// Removes the regular file `path` only when it holds exactly `bytes` (what install wrote); a missing or
// different file is unchanged.
Result<Change> remove_file_if_same(const std::string& path, std::string_view bytes);

// Removes the symbolic link `link` only when it points at `target`; anything else is unchanged.
Result<Change> remove_symlink_if(const std::string& link, std::string_view target);

// What is at `path` (`st`, its lstat) when it is not the link gpuctk would make: "a regular file", "a
// directory", "a special file", "a link to /usr/bin/x".
std::string describe_existing(const struct stat& st, const std::string& path);

// Removes the directory `dir` when it is empty; a missing or non-empty one is left (unchanged).
Result<Change> remove_dir_if_empty(const std::string& dir);

// What /etc/gpuctk/config.yaml gets: the node's paths. Every other key keeps its default.
struct ConfigValues {
  std::string hook_path;    // the installed gpuctk, on the node
  std::string driver_root;  // on the node: "/" or a driver container's root
  std::string dev_root;
};
std::string config_text(const ConfigValues& values);

// The target of the docker hook link `<parent of install_dir>/docker/nvidia-container-runtime-hook`:
// relative ("../bin/gpuctk"), so it is right both on the node and below the host root.
std::string docker_hook_target(std::string_view install_dir);

// Moves an inventory discovered below `host_root` to the node's view: every host path (device nodes,
// driver files) loses the `host_root` prefix, so a spec built from it names the node's files, exactly as
// `gpuctk cdi generate` run on the node would. A path outside `host_root` is left as it is.
void move_to_node(discover::Inventory& inventory, std::string_view host_root);

}  // namespace gpuctk::install
