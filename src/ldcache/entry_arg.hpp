#pragma once
// `--ld-cache-entry FLAGS:OSVERSION:SONAME:PATH`: an entry of the host's linker cache for a library a spec
// mounts, carried by the spec's update-ldcache step to the merge (merge.hpp). Written by `cdi generate`
// (cdi/hook_args.hpp puts it on the hook line), read by the hook and by the capability filter: the
// encoding and the parse are here only.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::ldcache {

// At most this many `--ld-cache-entry` values: a host's cache has a few thousand entries, a spec carries
// the driver's few dozen.
inline constexpr size_t k_max_facts = 8192;

// One value, e.g. "0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1" (libc6, x86-64).
struct LdCacheFact {
  std::string soname;      // a file name: no '/', no ':', not "." or ".."
  std::string path;        // a container path: absolute, no "." or ".." component
  uint32_t flags = 0;      // LibType | Arch, as LdCacheEntry::flags (cache_file.hpp)
  uint32_t osversion = 0;  // as LdCacheEntry::osversion
  bool operator==(const LdCacheFact&) const = default;
};

// The value for an entry, the numbers in hex as ldconfig's headers write them:
// entry_arg(0x303, 0, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1") is
// "0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1". A SONAME or path that
// parse_entry_arg refuses gives a value it refuses.
std::string entry_arg(uint32_t flags, uint32_t osversion, std::string_view soname, std::string_view path);

// One value, strictly: the SONAME up to the third ':' (PATH is the rest, ':' allowed), numbers of 32 bits
// in hex with or without "0x", a SONAME and a path of at most 4096 bytes, no newline or NUL. Errors name
// the value:
//   --ld-cache-entry "0x303:libcuda.so.1": expected FLAGS:OSVERSION:SONAME:PATH
Result<LdCacheFact> parse_entry_arg(std::string_view value);

// The values of a hook line (at most k_max_facts of them), each parsed with parse_entry_arg; duplicates
// are dropped. Errors as parse_entry_arg's, and "--ld-cache-entry: more than 8192 values".
Result<std::vector<LdCacheFact>> parse_ld_cache_facts(const std::vector<std::string>& values);

}  // namespace gpuctk::ldcache
