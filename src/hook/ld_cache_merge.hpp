#pragma once
// update-ldcache without running ldconfig: the image's own /etc/ld.so.cache merged with the entries the
// driver's libraries need, which the spec carries (`--ld-cache-entry`, written by `cdi generate` from
// the HOST's cache: no image ELF file is ever read). Knows nothing of GPUs. Lives in hook/ because it
// joins the cache format (discover/ld_cache.hpp) with in-root resolution (rootfs/), which the layer rule
// keeps apart below hook/.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::hook {

// One `--ld-cache-entry FLAGS:OSVERSION:SONAME:PATH`: an entry of the host's cache for a library the spec
// mounts, e.g. "0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1" (libc6, x86-64).
struct LdCacheFact {
  std::string soname;      // a file name: no '/', no ':', not "." or ".."
  std::string path;        // a container path: absolute, no "." or ".." component
  uint32_t flags = 0;      // LibType | Arch, as discover::LdCacheEntry::flags
  uint32_t osversion = 0;  // as discover::LdCacheEntry::osversion
  bool operator==(const LdCacheFact&) const = default;
};

// Parses `--ld-cache-entry` values (at most k_max_hook_args of them; each field bounded: numbers of 32
// bits in hex with or without "0x", a SONAME and a path of at most 4096 bytes, no newline or NUL).
// Duplicates are dropped. Errors name the value:
//   --ld-cache-entry "0x303:libcuda.so.1": expected FLAGS:OSVERSION:SONAME:PATH
Result<std::vector<LdCacheFact>> parse_ld_cache_facts(const std::vector<std::string>& values);

}  // namespace gpuctk::hook
