#pragma once
// update-ldcache without running ldconfig: the image's own /etc/ld.so.cache merged with the entries the
// driver's libraries need, which the spec carries (`--ld-cache-entry`, written by `cdi generate` from
// the HOST's cache: no image ELF file is ever read). Knows nothing of GPUs.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ldcache/entry_arg.hpp"
#include "ldcache/library_search.hpp"
#include "ldcache/paths.hpp"
#include "rootfs/in_root.hpp"
#include "util/error.hpp"

namespace gpuctk::ldcache {

// What merge_ld_cache did: installed the merged cache, or left it to ldconfig for `reason` (one line for
// the debug log, e.g. "/etc/ld.so.cache is older than /usr/lib/x86_64-linux-gnu/libfoo.so.1").
struct MergeOutcome {
  bool merged = false;
  size_t added = 0;    // entries added to the image's cache
  std::string reason;  // why not merged
};

// The image's /etc/ld.so.cache with the entries of `facts` that ldconfig would add, written over it
// (rootfs::write_file: atomic, a link there replaced, never followed), when this can be proven to be
// the cache the ldconfig run of update_ld_cache (library_search.hpp) would write, entry for entry (same keys,
// flags, paths, osversion and hwcap, in ldconfig's order; the image's generator and glibc-hwcaps names are
// kept). `scan` is what that run would scan. Not merged (ldconfig runs), each with its reason:
//   - no facts (a spec of an older gpuctk, or another tool's);
//   - the CUDA compat drop-in (k_cuda_compat_dropin) exists: its libraries are image files;
//   - no /etc/ld.so.cache, or one that is not a regular file (a link, a FIFO), larger than
//     rootfs::k_scratch_size, unparsable (parse_ld_cache), not in the new format alone, or
//     with a glibc-hwcaps index outside its list of subdirectories;
//   - a stale cache: /etc/ld.so.conf or a /etc/ld.so.conf.d/*.conf file other than gpuctk's is newer
//     than the cache or includes anything but /etc/ld.so.conf.d/*.conf; a glibc-hwcaps directory of a
//     scanned directory is newer; or a scanned directory that is newer (or one of `scan.added`) holds a
//     library name ("*.so*") that is none of the facts' paths and their files, and is newer than the
//     cache, another file system's (mounted), a link, or in an added folder; or a cache entry of it
//     names a file that is gone. Modification times are the image's to set: a cache dated in the
//     future only makes the image's own lookups differ from what ldconfig would give, never reads or
//     writes anything outside the root, and the driver's entries still come from the host;
//   - a fact whose key and flags the image's cache has with another path, or two facts doing so (the
//     winner would depend on the order ldconfig meets the folders).
// A fact whose path does not lead, inside the root, to a regular file is left out (ldconfig finds
// nothing there either); one whose directory is not scanned too. Its paths are named as ldconfig would
// name them: under the first scanned name of the directory (merged /usr: /lib/x86_64-linux-gnu).
// Everything it reads of the image is spent from `budget` (rootfs/image_budget.hpp: the start's, with
// the sandboxed ldconfig's deadline); a spent budget is a reason too (its line), never a merge made on
// what it could not read. Errors (the cache could not be written, a directory of the image could not be
// read): one line.
Result<MergeOutcome> merge_ld_cache(const rootfs::Root& root, const LdScan& scan,
                                    const std::vector<LdCacheFact>& facts, rootfs::ImageBudget& budget);

}  // namespace gpuctk::ldcache
