#pragma once
// Making a container's dynamic loader find libraries in more folders (the driver's), without changing
// the order in which it finds the image's own libraries:
//   - glibc: a drop-in file in the image's /etc/ld.so.conf.d naming the folders the image's configuration
//     does not name already, then a host ldconfig run in the sandbox (rootfs/sandbox.hpp) over the
//     read-only root, and the cache it made installed;
//   - musl (which reads no ld.so.cache): the folders in its path file.
// The files it reads and writes are named in ldcache/paths.hpp. Knows nothing of GPUs.

#include <functional>
#include <string>
#include <vector>

#include "ldcache/paths.hpp"
#include "rootfs/in_root.hpp"
#include "rootfs/sandbox.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::ldcache {

// glibc: writes the drop-in (only when some of `folders` is not configured by the image already; a
// stale one is removed otherwise) and /etc/ld.so.conf when missing, then runs `ldconfig` (a sealed
// program, see seal_host_program) in the sandbox (rootfs/sandbox.hpp: the root read-only, an
// unprivileged user; `limits`: its deadline and cgroups) as `ldconfig -X -i -f <dir>/ld.so.conf -C
// <dir>/ld.so.cache`, where <dir> is the sandbox's scratch tmpfs, attached on an empty directory made in
// the image's /etc for the run and removed after it. <dir>/ld.so.conf includes /etc/ld.so.conf and then
// names the new folders and the image's system folders: the ones its own ldconfig adds after
// everything its configuration names, which a host ldconfig built for another distribution would not
// know. So the image's folders keep their order: glibc resolves every library of the image as the
// image's own ldconfig would have it resolved. ldconfig makes no SONAME link (-X: the create-symlinks
// hook makes the driver's) and neither reads nor writes an auxiliary cache (-i). The cache it wrote
// (at most rootfs::k_scratch_size bytes, and starting as glibc's caches do) is then installed as
// /etc/ld.so.cache by gpuctk (write_file: atomic, a symlink there replaced, never followed).
// `folders` are container paths (absolute, no "." or ".."). The image's configuration is read (see
// configured_library_dirs) before anything but a missing /etc/ld.so.conf is written; its errors, a root
// without an /etc directory, or one that cannot be written (read-only), a failed or killed ldconfig, no
// cache or not a cache are errors of one line; on any error the files this call created are removed:
//   ldconfig wrote no linker cache: /etc/.ldconfig.gpuctk-x/ld.so.cache: No such file or directory
Result<void> update_ld_cache(const rootfs::Root& root, const std::vector<std::string>& folders,
                             const UniqueFd& ldconfig, const rootfs::SandboxLimits& limits = {});

// The directories the ldconfig run of update_ld_cache would scan, for a writer that makes its cache
// without it (ldcache/merge.hpp). Container paths, as written in the configuration.
struct LdScan {
  std::vector<std::string> configured;  // the image's configuration, in ldconfig's order, gpuctk's
                                        // driver drop-in left out (the CUDA compat one is the image's)
  std::vector<std::string> added;       // the folders the drop-in names (none of the image's)
  std::vector<std::string> system;      // the image's system directories that exist, last
  // Every directory of the run in the order ldconfig meets them: the configuration as it reads it with
  // the drop-in written (its folders where its name sorts), the drop-in's folders again, the system ones.
  std::vector<std::string> order;
};
// Installs the cache in place of the ldconfig run and returns true, or returns false (it has logged
// why) and ldconfig runs; an error stops update-ldcache as ldconfig's would. Called after the drop-in
// and a missing /etc/ld.so.conf are written; its error removes them as ldconfig's does. What it reads of
// the image it spends from `budget`, the start's (rootfs/image_budget.hpp), what is left of it.
using LdCacheWriter =
    std::function<Result<bool>(const rootfs::Root& root, const LdScan& scan, rootfs::ImageBudget& budget)>;

// update_ld_cache with `writer` tried first; `open_ldconfig` is called only when ldconfig runs. What is
// read of the image in-process (its configuration, the folders compared, the writer's reads) spends one
// ImageBudget with `limits.deadline`: spent, it is the error (before anything but a missing
// /etc/ld.so.conf is written) or, in the writer, its reason to leave the cache to ldconfig.
using LdconfigOpener = std::function<Result<UniqueFd>()>;
Result<void> update_ld_cache_with(const rootfs::Root& root, const std::vector<std::string>& folders,
                                  const LdCacheWriter& writer, const LdconfigOpener& open_ldconfig,
                                  const rootfs::SandboxLimits& limits = {});

// musl: adds the folders its path file (k_musl_path_file) does not list yet, ahead of what it lists (as
// the drop-in comes first for glibc); starting from k_musl_default_path when there is no file, so the
// image's own libraries still resolve. A folder whose libraries are all for another machine (the
// driver's 32-bit ones) is left out: musl stops at the first file of a wanted name and cannot load it.
// Replaced atomically (a symlink there is replaced, never followed out of the root). Returns whether the file
// changed (nothing to add: untouched). Errors: a root without /etc, bad folders (as above), a path file that
// is a directory, not a regular file or larger than k_max_conf_size (linker_config.hpp), a spent ImageBudget
// of `deadline`.
Result<bool> update_musl_path(const rootfs::Root& root, const std::vector<std::string>& folders,
                              std::chrono::milliseconds deadline = rootfs::k_sandbox_deadline);

// The C libraries an image's programs load with, from the loaders it holds (k_glibc_loader,
// k_musl_loader; links followed inside the root).
enum class ImageLibc { glibc, musl, glibc_and_musl, neither };
ImageLibc image_libc(const rootfs::Root& root);

// update-ldcache for any image: update_ld_cache when the image has glibc's loader or neither (a static
// image: as before musl was known), update_musl_path when it has musl's, both for an image with both
// (e.g. Alpine with glibc compatibility packages). A musl-only image runs no ldconfig: musl reads no
// ld.so.cache, and `open_ldconfig` is not called.
// `writer`, when given, is tried before ldconfig (update_ld_cache_with); `open_ldconfig` is called
// first for a glibc image all the same (its error is the error, merged or not).
Result<void> update_library_search(const rootfs::Root& root, const std::vector<std::string>& folders,
                                   const LdconfigOpener& open_ldconfig,
                                   const rootfs::SandboxLimits& limits = {},
                                   const LdCacheWriter& writer = {});

}  // namespace gpuctk::ldcache
