// ld.so.cache parsing (ldcache/cache_file.cpp): any bytes give a cache or an error, never undefined
// behaviour (the header's contract). A cache that parses, written again in its own layout
// (fuzz/support's writer, the fields as ldconfig lays them out), parses to the same entries. Seeds: the
// fixture hosts' caches (written by the real ldconfig), and the same entries in the old and compat
// layouts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ldcache/cache_file.hpp"
#include "support/fuzz_support.hpp"

namespace ldcache = gpuctk::ldcache;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto cache = ldcache::parse_ld_cache(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!cache) {
    return 0;
  }
  for (const auto& entry : cache->entries) {
    (void)ldcache::arch_name(entry.arch());
  }
  if (const auto native = ldcache::native_arch()) {
    (void)cache->libc6_entries(*native);
    if (const auto compat = ldcache::compat32_arch(*native)) {
      (void)cache->libc6_entries(*compat);
    }
  }
  // A string that starts with the new layout's magic, written where the new header of a compat file
  // would be, makes an old-layout file read as compat (for glibc too): not a round trip to check.
  for (const auto& entry : cache->entries) {
    if (entry.key.find("glibc-ld.so.cache") != std::string::npos ||
        entry.value.find("glibc-ld.so.cache") != std::string::npos) {
      return 0;
    }
    // That writer writes no glibc-hwcaps names, so such an entry would not read back.
    if (entry.glibc_hwcaps_index()) {
      return 0;
    }
  }
  const auto rewritten = gpuctk::fuzz::write_ld_cache(cache->entries, cache->format);
  const auto again = ldcache::parse_ld_cache(rewritten);
  GPUCTK_FUZZ_CHECK(again.has_value(), again ? std::string() : again.error().message);
  // That writer writes no extension area (the generator, glibc-hwcaps names): the tables must agree.
  GPUCTK_FUZZ_CHECK(again->format == cache->format, "");
  GPUCTK_FUZZ_CHECK(again->entries == cache->entries, "");
  return 0;
}
