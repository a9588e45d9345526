#pragma once
// A read-only in-memory file mounted over a file inside a container root. Knows nothing of GPUs.

#include <string_view>

#include "rootfs/in_root.hpp"
#include "util/error.hpp"

namespace gpuctk::rootfs {

// Mounts a file holding `content` read-only (and nosuid, nodev, noexec) over the existing regular file
// `path` inside `root`, which is resolved in the root and must not be a symlink. The file lives on a
// private tmpfs that is never attached anywhere else: nothing is written into the image, and the
// mount is made through the resolved fd (open_tree/move_mount), never through a path string.
// Needs Linux >= 5.2 (the mount API); an older kernel gets "... needs Linux 5.2 or later".
Result<void> mount_readonly_file(const Root& root, std::string_view path, std::string_view content);

}  // namespace gpuctk::rootfs
