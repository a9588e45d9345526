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
//
// Before Linux 5.2 (no fsopen; RHEL 8) the file is made on the host's /dev/shm under a random name
// (O_EXCL | O_NOFOLLOW, mode 0444), bound onto itself and remounted read-only there, that read-only
// mount bound onto the target through /proc/self/fd/<target fd>, then the helper mount detached and the
// name unlinked: the host sees the name for microseconds, never anything mounted.
// `legacy` forces that path (tests).
enum class MountApi { automatic, legacy };
Result<void> mount_readonly_file(const Root& root, std::string_view path, std::string_view content,
                                 MountApi api = MountApi::automatic);

}  // namespace gpuctk::rootfs
