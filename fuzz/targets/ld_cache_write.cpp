// ld.so.cache writing (ldcache/cache_file.cpp, serialize_ld_cache and insert_ld_cache_entry): every cache
// parse_ld_cache accepts can be written (the parser's bounds cover the writer's: no error is expected),
// what is written parses back to the same entries and extensions in the new format, and writing that
// again gives the same bytes (a fixed point). Inserting the entries one by one in reverse order into an
// empty cache with the same extensions keeps every entry (ldconfig's order, applied to hostile names,
// must neither crash nor lose one). Seeds: the fixture hosts' caches (written by the real ldconfig) and
// a cache with glibc-hwcaps entries.
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
  const auto written = ldcache::serialize_ld_cache(*cache);
  GPUCTK_FUZZ_CHECK(written.has_value(), written ? std::string() : written.error().message);
  const auto again = ldcache::parse_ld_cache(*written);
  GPUCTK_FUZZ_CHECK(again.has_value(), again ? std::string() : again.error().message);
  GPUCTK_FUZZ_CHECK(again->format == ldcache::LdCacheFormat::new_only, "");
  GPUCTK_FUZZ_CHECK(again->entries == cache->entries, "");
  GPUCTK_FUZZ_CHECK(again->extensions == cache->extensions, "");
  const auto twice = ldcache::serialize_ld_cache(*again);
  GPUCTK_FUZZ_CHECK(twice.has_value(), twice ? std::string() : twice.error().message);
  GPUCTK_FUZZ_CHECK(*twice == *written, "serialize is not a fixed point");

  // The insertion is quadratic, as ldconfig's: bounded so that one input stays fast.
  if (cache->entries.size() <= 512) {
    ldcache::LdCache rebuilt;
    rebuilt.extensions = cache->extensions;
    for (auto it = cache->entries.rbegin(); it != cache->entries.rend(); ++it) {
      ldcache::insert_ld_cache_entry(rebuilt, *it);
    }
    GPUCTK_FUZZ_CHECK(rebuilt.entries.size() == cache->entries.size(), "");
    for (const auto& entry : cache->entries) {
      (void)ldcache::ld_cache_name_compare(entry.key, entry.value);
    }
  }
  return 0;
}
