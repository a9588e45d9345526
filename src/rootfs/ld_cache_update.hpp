#pragma once
// Updating the dynamic linker cache of a container root: drop-in files in its /etc/ld.so.conf.d, then
// a host ldconfig run in the sandbox (rootfs/sandbox.hpp) over the root. Knows nothing of GPUs.

#include <string>
#include <vector>

#include "rootfs/in_root.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::rootfs {

// The drop-in file naming `folders`. Named "00-gpuctk-…" so it comes before the image's own files;
// anything that must win over it (a CUDA forward-compat directory) sorts before it.
inline constexpr const char* k_ld_conf_dropin = "/etc/ld.so.conf.d/00-gpuctk-driver.conf";
// The drop-in naming the image's own system directories (those that exist): a host ldconfig built for
// another distribution does not know them by default, and would leave the image's libraries out.
inline constexpr const char* k_ld_conf_system_dropin = "/etc/ld.so.conf.d/zz-gpuctk-system.conf";

// What update_ld_cache writes besides the drop-ins when missing.
inline constexpr const char* k_ld_so_conf = "/etc/ld.so.conf";
inline constexpr const char* k_ld_so_conf_text = "include /etc/ld.so.conf.d/*.conf\n";

// Writes the drop-ins (and /etc/ld.so.conf when missing) and runs `ldconfig` (a sealed program, see
// seal_program) as `ldconfig -f /etc/ld.so.conf -C /etc/ld.so.cache` in the sandbox. `folders` are
// container paths (absolute, no "." or ".."). A root without an /etc directory, or one that cannot be
// written (read-only), is an error of one line; on any error the files this call created are removed.
Result<void> update_ld_cache(const Root& root, const std::vector<std::string>& folders,
                             const UniqueFd& ldconfig);

// Removes the file `path` inside `root` (never following a symlink as its last component). Missing is fine.
Result<void> remove_file(const Root& root, std::string_view path);

}  // namespace gpuctk::rootfs
