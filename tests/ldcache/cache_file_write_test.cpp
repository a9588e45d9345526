// The writing half of ldcache/cache_file: glibc's name order, ldconfig's entry order, the extension area
// (parsed and written) and serialize_ld_cache's bytes. cache_file_test.cpp covers parsing the tables.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fixtures/builder/test_support.hpp"
#include "ldcache/cache_file.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::ldcache {
namespace {

constexpr uint64_t k_hwcaps_bit = uint64_t{1} << 62;  // DL_CACHE_HWCAP_EXTENSION

template <class T>
T get(const std::string& bytes, size_t pos) {
  T value;
  std::memcpy(&value, bytes.data() + pos, sizeof value);
  return value;
}

template <class T>
void put(std::string& bytes, size_t pos, T value) {
  std::memcpy(bytes.data() + pos, &value, sizeof value);
}

std::string error_of(std::string_view bytes) {
  const auto result = parse_ld_cache(bytes);
  return result ? "(parsed)" : result.error().message;
}

std::string serialize_error(const LdCache& cache) {
  const auto result = serialize_ld_cache(cache);
  return result ? "(serialized)" : result.error().message;
}

LdCacheEntry lib(std::string key, std::string value, uint32_t flags = 0x0303, uint64_t hwcap = 0) {
  return {.key = std::move(key), .value = std::move(value), .flags = flags, .osversion = 0, .hwcap = hwcap};
}

// A cache with one glibc-hwcaps entry and one plain one, a generator and two subdirectory names.
LdCache hwcaps_cache() {
  LdCache cache;
  cache.extensions.generator = "ldconfig (GNU libc) stable release version 2.36";
  cache.extensions.hwcaps_subdirs = {"x86-64-v3", "x86-64-v4"};
  cache.entries = {
      lib("libz.so.1", "/usr/lib/glibc-hwcaps/x86-64-v3/libz.so.1", 0x0303,
          k_hwcaps_bit | (uint64_t{3} << 32)),
      lib("libz.so.1", "/usr/lib/libz.so.1"),
  };
  return cache;
}

std::string serialized(const LdCache& cache) {
  auto bytes = serialize_ld_cache(cache);
  EXPECT_TRUE(bytes) << bytes.error().message;
  return bytes ? *bytes : std::string();
}

// ---------------------------------------------------------------------------------------------------
// glibc's name order

TEST(LdCacheNameCompare, DigitRunsCompareAsNumbers) {
  EXPECT_GT(ld_cache_name_compare("libfoo.so.10", "libfoo.so.9"), 0);
  EXPECT_LT(ld_cache_name_compare("libfoo.so.9", "libfoo.so.10"), 0);
  EXPECT_LT(ld_cache_name_compare("libfoo2.so", "libfoo10.so"), 0);
  EXPECT_GT(ld_cache_name_compare("libfoo.so.1.10", "libfoo.so.1.9"), 0);
  // Leading zeros do not count: the numbers are equal, and so are the names.
  EXPECT_EQ(ld_cache_name_compare("lib01.so", "lib1.so"), 0);
  EXPECT_EQ(ld_cache_name_compare("libz.so.1", "libz.so.1"), 0);
}

TEST(LdCacheNameCompare, ADigitSortsAfterAnyOtherByteAndAPrefixFirst) {
  EXPECT_GT(ld_cache_name_compare("lib1", "libz"), 0);  // '1' < 'z' as bytes, but a digit wins
  EXPECT_LT(ld_cache_name_compare("libz", "lib1"), 0);
  EXPECT_LT(ld_cache_name_compare("libz.so", "libz.so.1"), 0);
  EXPECT_GT(ld_cache_name_compare("libz.so.1", "libz.so"), 0);
  EXPECT_LT(ld_cache_name_compare("", "a"), 0);
  EXPECT_EQ(ld_cache_name_compare("", ""), 0);
  // Other bytes by value: the difference of the first that differ, as glibc returns it.
  EXPECT_EQ(ld_cache_name_compare("liba", "libc"), 'a' - 'c');
  EXPECT_EQ(ld_cache_name_compare("libz.so", "libz"), '.');
}

TEST(LdCacheNameCompare, AStringEndsAtItsFirstNul) {
  EXPECT_EQ(ld_cache_name_compare(std::string_view("libz\0abc", 8), "libz"), 0);
  EXPECT_LT(ld_cache_name_compare(std::string_view("lib\0z", 5), "libz"), 0);
}

TEST(LdCacheNameCompare, BytesAboveAsciiCompareAsTheHostsChar) {
  // glibc compares `char`: signed on x86, so 0x80 sorts before 'a' there; unsigned on ARM.
  const int cmp = ld_cache_name_compare("\x80", "a");
  if (static_cast<char>(0x80) < 0) {
    EXPECT_EQ(cmp, -128 - 'a');
  } else {
    EXPECT_EQ(cmp, 0x80 - 'a');
  }
}

TEST(LdCacheNameCompare, LongDigitRunsWrapAsGlibcsInt) {
  // 4294967296 wraps to 0 in 32 bits, as glibc's int computation does on every target we build for.
  EXPECT_EQ(ld_cache_name_compare("lib4294967296", "lib0"), 0);
  EXPECT_GT(ld_cache_name_compare("lib4294967297", "lib0"), 0);
}

// ---------------------------------------------------------------------------------------------------
// ldconfig's entry order

std::vector<std::string> values_of(const LdCache& cache) {
  std::vector<std::string> out;
  for (const auto& entry : cache.entries) {
    out.push_back(entry.value);
  }
  return out;
}

TEST(LdCacheInsert, NamesDescendingByGlibcOrder) {
  LdCache cache;
  for (const char* key :
       {"libfoo.so.9", "liba.so.1", "libfoo.so.10", "libfoo2.so", "libfoo10.so", "libz.so"}) {
    insert_ld_cache_entry(cache, lib(key, std::string("/lib/") + key));
  }
  EXPECT_EQ(values_of(cache),
            (std::vector<std::string>{"/lib/libz.so", "/lib/libfoo10.so", "/lib/libfoo2.so",
                                      "/lib/libfoo.so.10", "/lib/libfoo.so.9", "/lib/liba.so.1"}));
}

TEST(LdCacheInsert, SameNameByFlagsDescendingAsSignedNumbers) {
  LdCache cache;
  insert_ld_cache_entry(cache, lib("libz.so.1", "/i386", 0x0003));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/x86_64", 0x0303));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/negative", 0x80000303));  // negative as glibc's int
  insert_ld_cache_entry(cache, lib("libz.so.1", "/x32", 0x0803));
  EXPECT_EQ(values_of(cache), (std::vector<std::string>{"/x32", "/x86_64", "/i386", "/negative"}));
}

TEST(LdCacheInsert, GlibcHwcapsEntriesFirstBySubdirectoryNameThenHwcapBits) {
  LdCache cache;
  // Indices into an unsorted list, so that the name (not the index) is seen to decide.
  cache.extensions.hwcaps_subdirs = {"x86-64-v4", "x86-64-v2", "x86-64-v3"};
  insert_ld_cache_entry(cache, lib("libz.so.1", "/plain"));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/tls", 0x0303, uint64_t{1} << 63));  // legacy hwcap: 1 bit
  insert_ld_cache_entry(cache, lib("libz.so.1", "/v4", 0x0303, k_hwcaps_bit | 0));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/two-bits", 0x0303, 0x5));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/v2", 0x0303, k_hwcaps_bit | 1));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/v3", 0x0303, k_hwcaps_bit | (uint64_t{2} << 32) | 2));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/one-bit-high", 0x0303, 0x8));
  EXPECT_EQ(values_of(cache),
            (std::vector<std::string>{"/v2", "/v3", "/v4", "/two-bits", "/tls", "/one-bit-high", "/plain"}));
}

TEST(LdCacheInsert, EqualEntriesKeepTheirInsertionOrder) {
  LdCache cache;
  cache.extensions.hwcaps_subdirs = {"x86-64-v3"};
  insert_ld_cache_entry(cache, lib("libz.so.1", "/first"));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/second"));
  // Same subdirectory, different ISA level: ldconfig does not compare the level, so these tie too.
  insert_ld_cache_entry(cache, lib("libz.so.1", "/v3-level-3", 0x0303, k_hwcaps_bit | (uint64_t{3} << 32)));
  insert_ld_cache_entry(cache, lib("libz.so.1", "/v3-level-1", 0x0303, k_hwcaps_bit | (uint64_t{1} << 32)));
  insert_ld_cache_entry(cache, lib("libz.so.01", "/third"));  // equal name by glibc's rule
  EXPECT_EQ(values_of(cache),
            (std::vector<std::string>{"/v3-level-3", "/v3-level-1", "/first", "/second", "/third"}));
}

TEST(LdCacheInsert, GlibcHwcapsIndex) {
  EXPECT_EQ(lib("a", "/a", 0x0303, k_hwcaps_bit | 7).glibc_hwcaps_index(), 7u);
  EXPECT_EQ(lib("a", "/a", 0x0303, k_hwcaps_bit | (uint64_t{0x3ff} << 32) | 2).glibc_hwcaps_index(), 2u);
  EXPECT_EQ(lib("a", "/a", 0x0303, 0).glibc_hwcaps_index(), std::nullopt);
  EXPECT_EQ(lib("a", "/a", 0x0303, 7).glibc_hwcaps_index(), std::nullopt);
  // Any other bit in the upper half: not a glibc-hwcaps entry (glibc's loader skips those bits' owners).
  EXPECT_EQ(lib("a", "/a", 0x0303, k_hwcaps_bit | (uint64_t{1} << 42) | 7).glibc_hwcaps_index(),
            std::nullopt);
  EXPECT_EQ(lib("a", "/a", 0x0303, (uint64_t{1} << 63) | k_hwcaps_bit).glibc_hwcaps_index(), std::nullopt);
}

// ---------------------------------------------------------------------------------------------------
// serialize_ld_cache: layout

TEST(LdCacheSerialize, EmptyCacheIsAHeaderAlone) {
  const auto bytes = serialized(LdCache{});
  std::string expected = "glibc-ld.so.cache1.1";
  expected.append(28, '\0');
  expected[28] = 2;  // little-endian
  EXPECT_EQ(bytes, expected);
}

TEST(LdCacheSerialize, OneEntryWhoseNameEndsItsPathSharesTheTail) {
  LdCache cache;
  cache.entries = {lib("libz.so.1", "/lib/libz.so.1")};
  const auto bytes = serialized(cache);
  ASSERT_EQ(bytes.size(), 48u + 24u + 15u);
  EXPECT_EQ(get<uint32_t>(bytes, 20), 1u);   // nlibs
  EXPECT_EQ(get<uint32_t>(bytes, 24), 15u);  // len_strings: "/lib/libz.so.1\0" holds both
  EXPECT_EQ(get<uint32_t>(bytes, 32), 0u);   // no extension area
  EXPECT_EQ(get<int32_t>(bytes, 48), 0x0303);
  EXPECT_EQ(get<uint32_t>(bytes, 52), 72u + 5u);  // key: the tail of the value
  EXPECT_EQ(get<uint32_t>(bytes, 56), 72u);       // value
  EXPECT_EQ(bytes.substr(72), std::string("/lib/libz.so.1\0", 15));
}

TEST(LdCacheSerialize, StringTableByReversedBytesDescending) {
  LdCache cache;
  // Reversed: "b/" > "a/" > "a" ... so "/b" first, "/a" next, "a" shares the tail of "/a".
  cache.entries = {lib("a", "/a"), lib("b", "/b")};
  const auto bytes = serialized(cache);
  const std::string table = bytes.substr(48 + 2 * 24);
  EXPECT_EQ(table, std::string("/b\0/a\0", 6));
  EXPECT_EQ(get<uint32_t>(bytes, 48 + 4), 96u + 4u);       // "a": tail of "/a"
  EXPECT_EQ(get<uint32_t>(bytes, 48 + 8), 96u + 3u);       // "/a"
  EXPECT_EQ(get<uint32_t>(bytes, 48 + 24 + 4), 96u + 1u);  // "b": tail of "/b"
  EXPECT_EQ(get<uint32_t>(bytes, 48 + 24 + 8), 96u + 0u);  // "/b"
}

TEST(LdCacheSerialize, ExtensionAreaFollowsTheStringsAlignedToFour) {
  const auto cache = hwcaps_cache();
  const auto bytes = serialized(cache);
  const uint32_t strings = 48 + 2 * 24;
  const uint32_t len_strings = get<uint32_t>(bytes, 24);
  const uint32_t ext = get<uint32_t>(bytes, 32);
  EXPECT_EQ(ext, (strings + len_strings + 3) / 4 * 4);
  EXPECT_EQ(bytes.substr(strings + len_strings, ext - strings - len_strings),
            std::string(ext - strings - len_strings, '\0'));
  EXPECT_EQ(get<uint32_t>(bytes, ext), 0xeaa42174u);
  EXPECT_EQ(get<uint32_t>(bytes, ext + 4), 2u);
  // Generator section first, glibc-hwcaps second; the array, then the generator's bytes end the file.
  const std::string generator = *cache.extensions.generator;
  const std::vector<uint32_t> directory{0, 0, ext + 40 + 8, static_cast<uint32_t>(generator.size()),
                                        1, 0, ext + 40,     8};
  for (size_t i = 0; i < directory.size(); ++i) {
    EXPECT_EQ(get<uint32_t>(bytes, ext + 8 + 4 * i), directory[i]) << "directory word " << i;
  }
  EXPECT_EQ(bytes.size(), ext + 40 + 8 + generator.size());
  EXPECT_EQ(bytes.substr(ext + 48), generator);
  for (uint32_t j = 0; j < 2; ++j) {
    const auto at = get<uint32_t>(bytes, ext + 40 + 4 * j);
    EXPECT_EQ(std::string(bytes.c_str() + at), cache.extensions.hwcaps_subdirs[j]);
  }
}

TEST(LdCacheSerialize, OnlyTheSectionsThatExistAreWritten) {
  auto cache = hwcaps_cache();
  cache.extensions.hwcaps_subdirs.clear();
  cache.entries.erase(cache.entries.begin());
  auto bytes = serialized(cache);
  uint32_t ext = get<uint32_t>(bytes, 32);
  EXPECT_EQ(get<uint32_t>(bytes, ext + 4), 1u);
  EXPECT_EQ(get<uint32_t>(bytes, ext + 8), 0u);         // generator
  EXPECT_EQ(get<uint32_t>(bytes, ext + 16), ext + 24);  // right after the one-section directory
  EXPECT_EQ(bytes.size(), ext + 24 + cache.extensions.generator->size());

  cache = hwcaps_cache();
  cache.extensions.generator.reset();
  bytes = serialized(cache);
  ext = get<uint32_t>(bytes, 32);
  EXPECT_EQ(get<uint32_t>(bytes, ext + 4), 1u);
  EXPECT_EQ(get<uint32_t>(bytes, ext + 8), 1u);  // glibc-hwcaps
  EXPECT_EQ(get<uint32_t>(bytes, ext + 16), ext + 24);
  EXPECT_EQ(bytes.size(), ext + 24 + 8);
}

TEST(LdCacheSerialize, RoundTripsThroughTheParser) {
  const auto cache = hwcaps_cache();
  const auto bytes = serialized(cache);
  const auto parsed = parse_ld_cache(bytes);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, cache);
  EXPECT_EQ(serialized(*parsed), bytes);
}

TEST(LdCacheSerialize, OldAndCompatCachesAreWrittenInTheNewFormat) {
  auto cache = hwcaps_cache();
  cache.format = LdCacheFormat::compat;
  const auto parsed = parse_ld_cache(serialized(cache));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->format, LdCacheFormat::new_only);
  EXPECT_EQ(parsed->entries, cache.entries);
  EXPECT_EQ(parsed->extensions, cache.extensions);
}

TEST(LdCacheSerialize, Errors) {
  LdCache cache;
  cache.entries = {lib("libz.so.1", "/lib/libz.so.1"), lib(std::string("lib\0z", 5), "/x")};
  EXPECT_EQ(serialize_error(cache), "ld.so.cache: entry 1: key contains a NUL byte");
  cache.entries[1] = lib("libx", std::string(4097, 'x'));
  EXPECT_EQ(
      serialize_error(cache),
      "ld.so.cache: entry 1: value is 4097 bytes long, more than 4096 (what parse_ld_cache reads back)");
  cache.entries[1] = lib("libx", "/x", 0x0303, k_hwcaps_bit | 1);
  EXPECT_EQ(serialize_error(cache),
            "ld.so.cache: entry 1: glibc-hwcaps index 1 outside the 0 glibc-hwcaps subdirectories");
  cache.entries.resize(1);
  cache.extensions.generator = std::string("gen\0", 4);
  EXPECT_EQ(serialize_error(cache), "ld.so.cache: the generator contains a NUL byte");
  cache.extensions.generator = std::string(4097, 'g');
  EXPECT_EQ(serialize_error(cache),
            "ld.so.cache: the generator is 4097 bytes long, more than 4096 (what parse_ld_cache reads back)");
  cache.extensions.generator.reset();
  cache.extensions.hwcaps_subdirs = {"x86-64-v3", std::string("v\0", 2)};
  EXPECT_EQ(serialize_error(cache), "ld.so.cache: glibc-hwcaps subdirectory 1 contains a NUL byte");
  cache.extensions.hwcaps_subdirs.assign(4097, "x");
  EXPECT_EQ(serialize_error(cache), "ld.so.cache: 4097 glibc-hwcaps subdirectories exceed the limit of 4096");
  cache.extensions.hwcaps_subdirs.clear();
  cache.entries.assign(131073, lib("a", "/a"));
  EXPECT_EQ(serialize_error(cache), "ld.so.cache: 131073 entries exceed the limit of 131072");
  // Entries of 4096 + 1 bytes: over the 32 MiB of decoded strings with the 8191st (entry 8190).
  cache.entries.assign(8193, lib(std::string(4096, 'k'), "/"));
  EXPECT_EQ(serialize_error(cache),
            "ld.so.cache: entry 8190: the decoded keys and values exceed 33554432 bytes (the limit for a "
            "whole cache)");
}

// ---------------------------------------------------------------------------------------------------
// parse_ld_cache: the extension area

TEST(LdCacheExtensions, GlibcBefore233HasNone) {
  LdCache cache;
  cache.entries = {lib("libz.so.1", "/lib/libz.so.1")};
  const auto parsed = parse_ld_cache(serialized(cache));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->extensions, LdCacheExtensions{});
}

TEST(LdCacheExtensions, UnknownTagsAreIgnoredButMustLieInTheFile) {
  const auto cache = hwcaps_cache();
  auto bytes = serialized(cache);
  const uint32_t ext = get<uint32_t>(bytes, 32);
  put<uint32_t>(bytes, ext + 8, 7);  // the generator section becomes tag 7
  auto parsed = parse_ld_cache(bytes);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->extensions.generator, std::nullopt);
  EXPECT_EQ(parsed->extensions.hwcaps_subdirs, cache.extensions.hwcaps_subdirs);
  put<uint32_t>(bytes, ext + 8 + 12, static_cast<uint32_t>(bytes.size()));  // its size: past the end
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension section 0 (tag 7): " + std::to_string(bytes.size()) +
                                 " bytes at offset " + std::to_string(ext + 48) + " outside the file (size " +
                                 std::to_string(bytes.size()) + ")");
}

TEST(LdCacheExtensions, DirectoryErrors) {
  const auto good = serialized(hwcaps_cache());
  const uint32_t ext = get<uint32_t>(good, 32);
  const std::string size = std::to_string(good.size());
  auto bytes = good;
  put<uint32_t>(bytes, 32, ext + 2);
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension directory at offset " + std::to_string(ext + 2) +
                                 " is not a multiple of 4");
  put<uint32_t>(bytes, 32, static_cast<uint32_t>(good.size() - 4) / 4 * 4 + 4);
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension directory at offset " +
                                 std::to_string(get<uint32_t>(bytes, 32)) + " outside the file (size " +
                                 size + ")");
  bytes = good;
  put<uint32_t>(bytes, ext, 0x12345678);
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension directory at offset " + std::to_string(ext) +
                                 ": magic 0x12345678 instead of 0xeaa42174");
  bytes = good;
  put<uint32_t>(bytes, ext + 4, 0x10000000);
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension directory at offset " + std::to_string(ext) +
                                 ": 268435456 sections do not fit the file (size " + size + ")");
  bytes = good;
  put<uint32_t>(bytes, ext + 8 + 16, 0);  // two generator sections
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension section 1 (tag 0): the tag appears twice");
  bytes = good;
  put<uint32_t>(bytes, ext + 8 + 8, 0xfffffff0);  // generator offset: the sum must not wrap
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension section 0 (tag 0): " +
                                 std::to_string(hwcaps_cache().extensions.generator->size()) +
                                 " bytes at offset 4294967280 outside the file (size " + size + ")");
}

TEST(LdCacheExtensions, GeneratorErrors) {
  const auto good = serialized(hwcaps_cache());
  const uint32_t ext = get<uint32_t>(good, 32);
  auto bytes = good;
  bytes[ext + 48 + 3] = '\0';
  EXPECT_EQ(error_of(bytes), "ld.so.cache: extension section 0 (tag 0): the generator contains a NUL byte");
  bytes = good + std::string(5000, 'g');
  put<uint32_t>(bytes, ext + 8 + 12, 4097);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: extension section 0 (tag 0): a generator of 4097 bytes is longer than 4096 bytes");
  put<uint32_t>(bytes, ext + 8 + 12, 4096);
  ASSERT_EQ(error_of(bytes), "(parsed)");
  EXPECT_EQ(parse_ld_cache(bytes)->extensions.generator->size(), 4096u);
}

TEST(LdCacheExtensions, GlibcHwcapsErrors) {
  const auto good = serialized(hwcaps_cache());
  const uint32_t ext = get<uint32_t>(good, 32);
  const uint32_t section = ext + 8 + 16;
  auto bytes = good;
  put<uint32_t>(bytes, section + 12, 6);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: extension section 1 (tag 1): glibc-hwcaps section of 6 bytes at offset " +
                std::to_string(ext + 40) + " is not 4-byte aligned");
  bytes = good;
  put<uint32_t>(bytes, section + 8, ext + 42);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: extension section 1 (tag 1): glibc-hwcaps section of 8 bytes at offset " +
                std::to_string(ext + 42) + " is not 4-byte aligned");
  bytes = good;
  put<uint32_t>(bytes, ext + 40 + 4, 0x7fffffff);  // subdirectory 1's name
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: glibc-hwcaps subdirectory 1 offset 2147483647 outside the file (size " +
                std::to_string(good.size()) + ")");
  // An empty section is no section: then the entry that indexes it is an error of its own.
  bytes = good;
  put<uint32_t>(bytes, section + 12, 0);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: entry 0: glibc-hwcaps index 0 outside the 0 glibc-hwcaps subdirectories");
  bytes = good;
  put<uint64_t>(bytes, 48 + 16, k_hwcaps_bit | 2);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: entry 0: glibc-hwcaps index 2 outside the 2 glibc-hwcaps subdirectories");
  // More than 4096 names.
  LdCache many;
  many.extensions.hwcaps_subdirs.assign(4096, "v");
  bytes = serialized(many);
  const uint32_t many_ext = get<uint32_t>(bytes, 32);
  bytes.append(4, '\0');
  put<uint32_t>(bytes, many_ext + 8 + 12, 4 * 4097);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: extension section 0 (tag 1): 4097 glibc-hwcaps subdirectories exceed "
            "the limit of 4096");
}

// ---------------------------------------------------------------------------------------------------
// Byte for byte against glibc's ldconfig: fixture roots with real ELF libraries made by gcc, the cache
// ldconfig writes for each, and ours for the same entries: parsed and written again, and built anew
// entry by entry with insert_ld_cache_entry in a shuffled order.

namespace fs = std::filesystem;

using fixture::test::capture;
using fixture::test::shell_quote;

std::string first_executable(std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    if (fixture::test::is_executable(path)) {
      return path;
    }
  }
  return {};
}

// Where two byte strings first differ, for a readable failure instead of two dumps.
std::string first_difference(const std::string& ours, const std::string& theirs) {
  const size_t common = std::min(ours.size(), theirs.size());
  for (size_t i = 0; i < common; ++i) {
    if (ours[i] != theirs[i]) {
      return "first difference at byte " + std::to_string(i) + " of " + std::to_string(theirs.size());
    }
  }
  return ours.size() == theirs.size() ? "equal"
                                      : "sizes " + std::to_string(ours.size()) + " (ours) and " +
                                            std::to_string(theirs.size()) + " (ldconfig)";
}

// Whether ldconfig's comparison sees `a` and `b` as equal (then they stay in the order they were added).
bool ties(const LdCache& cache, const LdCacheEntry& a, const LdCacheEntry& b) {
  if (ld_cache_name_compare(a.key, b.key) != 0 || a.flags != b.flags) {
    return false;
  }
  const auto ia = a.glibc_hwcaps_index();
  const auto ib = b.glibc_hwcaps_index();
  if (ia.has_value() != ib.has_value()) {
    return false;
  }
  if (ia) {
    return cache.extensions.hwcaps_subdirs[*ia] == cache.extensions.hwcaps_subdirs[*ib];
  }
  return a.hwcap == b.hwcap;
}

class LdCacheLdconfig : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ldconfig = first_executable({"/sbin/ldconfig", "/usr/sbin/ldconfig"});
    m_gcc = first_executable({"/usr/bin/gcc", "/usr/bin/cc"});
    if (m_ldconfig.empty() || m_gcc.empty()) {
      GTEST_SKIP() << "needs ldconfig and gcc (found \"" << m_ldconfig << "\", \"" << m_gcc << "\")";
    }
    if (::geteuid() != 0) {
      GTEST_SKIP() << "ldconfig -r chroots, which needs root";
    }
    ASSERT_FALSE(m_tmp.path().empty());
    m_root = fs::path(m_tmp.path()) / "root";
    fs::create_directories(m_root / "etc");
    fs::create_directories(m_root / "var/cache/ldconfig");
  }

  // A shared library at `path` (inside the root) whose SONAME is `soname`; `flags` go to gcc.
  void library(const std::string& path, const std::string& soname, const std::string& flags = "") {
    const fs::path file = m_root / fs::path(path).relative_path();
    fs::create_directories(file.parent_path());
    const auto command = m_gcc + " -shared -fPIC " + flags + " -Wl,-soname," + soname +
                         " -x c /dev/null -o " + shell_quote(file.string());
    ASSERT_TRUE(capture(command + " 2>&1").has_value()) << "failed: " << command;
  }

  void write(const std::string& path, const std::string& content) {
    const fs::path file = m_root / fs::path(path).relative_path();
    fs::create_directories(file.parent_path());
    std::ofstream(file) << content;
  }

  // ldconfig's cache for the root (no links made, no auxiliary cache read), in `format` (new, old, compat).
  std::string ldconfig(const std::string& format = "new") {
    const auto command = m_ldconfig + " -X -i -c " + format + " -r " + shell_quote(m_root.string()) +
                         " -f /etc/ld.so.conf -C /etc/ld.so.cache 2>&1";
    EXPECT_TRUE(capture(command).has_value()) << "failed: " << command;
    auto bytes = read_file((m_root / "etc/ld.so.cache").string());
    EXPECT_TRUE(bytes) << bytes.error().message;
    return bytes ? *bytes : std::string();
  }

  // ldconfig's cache for the root is what we write for its entries, however they were added.
  void expect_reproduced(size_t at_least_entries, bool expect_hwcaps = false) {
    const auto bytes = ldconfig();
    const auto parsed = parse_ld_cache(bytes);
    ASSERT_TRUE(parsed) << parsed.error().message;
    m_parsed = *parsed;
    EXPECT_GE(parsed->entries.size(), at_least_entries);
    EXPECT_EQ(!parsed->extensions.hwcaps_subdirs.empty(), expect_hwcaps);
    ASSERT_TRUE(parsed->extensions.generator.has_value());
    EXPECT_TRUE(parsed->extensions.generator->starts_with("ldconfig ")) << *parsed->extensions.generator;

    const auto again = serialize_ld_cache(*parsed);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(*again == bytes) << "parsed and written again: " << first_difference(*again, bytes);

    for (uint32_t seed = 1; seed <= 5; ++seed) {
      SCOPED_TRACE("shuffle " + std::to_string(seed));
      std::vector<size_t> order(parsed->entries.size());
      for (size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
      }
      std::mt19937 random(seed);
      std::shuffle(order.begin(), order.end(), random);
      // Entries ldconfig sees as equal keep their relative order: within each such group, the places
      // the shuffle gave the group get its members in their original order.
      std::vector<bool> done(order.size(), false);
      for (size_t p = 0; p < order.size(); ++p) {
        if (done[p]) {
          continue;
        }
        std::vector<size_t> places;
        for (size_t q = p; q < order.size(); ++q) {
          if (!done[q] && ties(*parsed, parsed->entries[order[p]], parsed->entries[order[q]])) {
            places.push_back(q);
          }
        }
        std::vector<size_t> members;
        for (const auto q : places) {
          members.push_back(order[q]);
          done[q] = true;
        }
        std::sort(members.begin(), members.end());
        for (size_t k = 0; k < places.size(); ++k) {
          order[places[k]] = members[k];
        }
      }
      LdCache rebuilt;
      rebuilt.extensions = parsed->extensions;
      for (const auto i : order) {
        insert_ld_cache_entry(rebuilt, parsed->entries[i]);
      }
      EXPECT_EQ(rebuilt.entries, parsed->entries);
      const auto written = serialize_ld_cache(rebuilt);
      ASSERT_TRUE(written) << written.error().message;
      EXPECT_TRUE(*written == bytes) << "built entry by entry: " << first_difference(*written, bytes);
    }
  }

  // How many entries of m_parsed tie with an earlier one (ldconfig kept them in configuration order).
  [[nodiscard]] size_t tied_entries() const {
    size_t tied = 0;
    for (size_t i = 1; i < m_parsed.entries.size(); ++i) {
      tied += ties(m_parsed, m_parsed.entries[i - 1], m_parsed.entries[i]) ? 1 : 0;
    }
    return tied;
  }

  test::TempDir m_tmp{"gpuctk-ldcache-write"};
  LdCache m_parsed;  // ldconfig's cache, as parsed by expect_reproduced
  fs::path m_root;
  std::string m_ldconfig;
  std::string m_gcc;
};

TEST_F(LdCacheLdconfig, EmptyRootHasOnlyTheGenerator) {
  write("/etc/ld.so.conf", "");
  expect_reproduced(0);
}

TEST_F(LdCacheLdconfig, DebianMultiarch) {
  write("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  write("/etc/ld.so.conf.d/libc.conf", "/usr/local/lib\n");
  write("/etc/ld.so.conf.d/x86_64-linux-gnu.conf",
        "/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n");
  // A real library of the host, twice (the same SONAME in two directories: a tie).
  for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"}) {
    fs::create_directories(m_root / fs::path(dir).relative_path());
    fs::copy_file(fs::canonical("/lib/x86_64-linux-gnu/libz.so.1"),
                  m_root / fs::path(dir).relative_path() / "libz.so.1");
  }
  // Names whose digit runs decide the order.
  for (const char* name : {"libfoo.so.9", "libfoo.so.10", "libfoo.so.1.9", "libfoo.so.1.10", "libfoo2.so",
                           "libfoo10.so", "libfoo.so", "libFoo.so.1"}) {
    library(std::string("/usr/lib/x86_64-linux-gnu/") + name, name);
  }
  library("/usr/lib/x86_64-linux-gnu/libbar.so.1.2.3", "libbar.so.1");  // the file is not the SONAME
  library("/lib/x86_64-linux-gnu/libbar.so.1", "libbar.so.1");
  library("/usr/local/lib/libbar.so.1", "libbar.so.1");
  library("/usr/local/lib/x86_64-linux-gnu/libbaz.so.3", "libbaz.so.3");
  expect_reproduced(12);
  EXPECT_GE(tied_entries(), 3u);  // libz twice, libbar three times
}

TEST_F(LdCacheLdconfig, RhelLib64WithExtraDirectories) {
  // Debian's ldconfig (the one here) has no lib64 default directories: the image's configuration names them.
  write("/etc/ld.so.conf", "include ld.so.conf.d/*.conf\n/opt/vendor/lib64\n/usr/lib64\n/lib64\n");
  write("/etc/ld.so.conf.d/extra.conf", "/opt/extra/lib64\n/usr/lib64/mysql\n");
  for (const char* dir : {"/usr/lib64", "/lib64", "/opt/vendor/lib64", "/opt/extra/lib64"}) {
    library(std::string(dir) + "/libcommon.so.2", "libcommon.so.2");
  }
  library("/usr/lib64/libGL.so.1", "libGL.so.1");
  library("/usr/lib64/libEGL.so.1", "libEGL.so.1");
  library("/usr/lib64/libGLESv2.so.2", "libGLESv2.so.2");
  library("/usr/lib64/mysql/libmysqlclient.so.21", "libmysqlclient.so.21");
  library("/opt/vendor/lib64/libvendor.so.7.0.1", "libvendor.so.7");
  expect_reproduced(9);
}

TEST_F(LdCacheLdconfig, GlibcHwcapsSubdirectories) {
  write("/etc/ld.so.conf", "/usr/lib/x86_64-linux-gnu\n/opt/lib\n");
  const std::string dir = "/usr/lib/x86_64-linux-gnu";
  library(dir + "/libfoo.so.1", "libfoo.so.1");
  library(dir + "/glibc-hwcaps/x86-64-v3/libfoo.so.1", "libfoo.so.1", "-Wl,-z,x86-64-v3");
  library(dir + "/glibc-hwcaps/x86-64-v2/libfoo.so.1", "libfoo.so.1", "-Wl,-z,x86-64-v2");
  library(dir + "/glibc-hwcaps/x86-64-v4/libbar.so.1", "libbar.so.1", "-Wl,-z,x86-64-v4");
  library(dir + "/libbar.so.1", "libbar.so.1");
  library("/opt/lib/glibc-hwcaps/x86-64-v3/libfoo.so.1", "libfoo.so.1");  // no ISA level note
  library("/opt/lib/libfoo.so.1", "libfoo.so.1");
  expect_reproduced(7, true);
  EXPECT_EQ(m_parsed.extensions.hwcaps_subdirs,
            (std::vector<std::string>{"x86-64-v2", "x86-64-v3", "x86-64-v4"}));
  // ldconfig records the ISA level of the libraries built for one (bits 32-41 of hwcap).
  EXPECT_TRUE(std::any_of(m_parsed.entries.begin(), m_parsed.entries.end(), [](const LdCacheEntry& e) {
    return e.glibc_hwcaps_index() && (e.hwcap >> 32) != 0x40000000;
  }));
  EXPECT_GE(tied_entries(), 2u);  // libfoo.so.1 in x86-64-v3 of both directories, and plain in both
}

TEST_F(LdCacheLdconfig, AnEmptyGlibcHwcapsDirectoryIsTheOneDifference) {
  // ldconfig puts the name of every glibc-hwcaps directory it finds into its string table, also when it
  // takes no library from it; the file does not say so anywhere else, so our file lacks that name (the
  // limitation serialize_ld_cache's header states). Callers that must be byte-equal compare
  // serialize_ld_cache(parse_ld_cache(file)) with the file first.
  write("/etc/ld.so.conf", "/usr/lib/x86_64-linux-gnu\n");
  library("/usr/lib/x86_64-linux-gnu/libfoo.so.1", "libfoo.so.1");
  fs::create_directories(m_root / "usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3");
  const auto bytes = ldconfig();
  const auto parsed = parse_ld_cache(bytes);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->entries.size(), 1u);
  EXPECT_TRUE(parsed->extensions.hwcaps_subdirs.empty());
  const auto ours = serialize_ld_cache(*parsed);
  ASSERT_TRUE(ours) << ours.error().message;
  EXPECT_NE(bytes.find(std::string("x86-64-v3\0", 10)), std::string::npos);
  EXPECT_EQ(ours->find("x86-64-v3"), std::string::npos);
  const auto reread = parse_ld_cache(*ours);
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(reread->entries, parsed->entries);
  EXPECT_EQ(reread->extensions, parsed->extensions);
}

TEST_F(LdCacheLdconfig, CompatAndOldCachesAreWrittenInTheNewFormat) {
  write("/etc/ld.so.conf", "/usr/lib/x86_64-linux-gnu\n");
  const std::string dir = "/usr/lib/x86_64-linux-gnu";
  library(dir + "/libfoo.so.1", "libfoo.so.1");
  library(dir + "/libfoo.so.10", "libfoo.so.10");
  library(dir + "/glibc-hwcaps/x86-64-v3/libfoo.so.1", "libfoo.so.1", "-Wl,-z,x86-64-v3");
  library(dir + "/glibc-hwcaps/x86-64-v2/libfoo.so.1", "libfoo.so.1", "-Wl,-z,x86-64-v2");
  const auto new_bytes = ldconfig("new");
  const auto compat_bytes = ldconfig("compat");
  const auto old_bytes = ldconfig("old");
  ASSERT_NE(compat_bytes, new_bytes);

  // The compat file holds the new table and extension area: written again, it is the new file.
  const auto compat = parse_ld_cache(compat_bytes);
  ASSERT_TRUE(compat) << compat.error().message;
  EXPECT_EQ(compat->format, LdCacheFormat::compat);
  EXPECT_EQ(compat->extensions.hwcaps_subdirs, (std::vector<std::string>{"x86-64-v2", "x86-64-v3"}));
  const auto from_compat = serialize_ld_cache(*compat);
  ASSERT_TRUE(from_compat) << from_compat.error().message;
  EXPECT_TRUE(*from_compat == new_bytes) << first_difference(*from_compat, new_bytes);

  // The old file has no hwcap field and no extensions (ldconfig 2.36 lists the glibc-hwcaps libraries
  // there as plain entries: 4 of them): written in the new format, it reads back as the same entries.
  const auto old = parse_ld_cache(old_bytes);
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->format, LdCacheFormat::old_only);
  EXPECT_EQ(old->entries.size(), 4u);
  const auto from_old = serialize_ld_cache(*old);
  ASSERT_TRUE(from_old) << from_old.error().message;
  const auto reread = parse_ld_cache(*from_old);
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(reread->format, LdCacheFormat::new_only);
  EXPECT_EQ(reread->entries, old->entries);
  EXPECT_EQ(reread->extensions, LdCacheExtensions{});
}

TEST_F(LdCacheLdconfig, Multilib32Bit) {
  // 32-bit objects without the C runtime (gcc -m32 here has no 32-bit crt files or libgcc).
  if (!capture(m_gcc + " -m32 -shared -nostdlib -x c /dev/null -o /dev/null 2>&1")) {
    GTEST_SKIP() << "gcc -m32 cannot link a shared object here (no 32-bit support in the toolchain)";
  }
  write("/etc/ld.so.conf", "/usr/lib/i386-linux-gnu\n/lib/i386-linux-gnu\n/usr/lib/x86_64-linux-gnu\n");
  for (const char* name : {"libfoo.so.1", "libcuda.so.1", "libnvidia-ml.so.1"}) {
    library(std::string("/usr/lib/i386-linux-gnu/") + name, name, "-m32 -nostdlib");
    library(std::string("/usr/lib/x86_64-linux-gnu/") + name, name);
  }
  library("/lib/i386-linux-gnu/libfoo.so.1", "libfoo.so.1", "-m32 -nostdlib");
  library("/usr/lib/x86_64-linux-gnu/libnolibc.so.1", "libnolibc.so.1", "-nostdlib");
  expect_reproduced(8);
  EXPECT_TRUE(std::any_of(m_parsed.entries.begin(), m_parsed.entries.end(),
                          [](const LdCacheEntry& e) { return e.arch() == Arch::i386; }));
}

TEST_F(LdCacheLdconfig, ManyEntriesSharingStringTails) {
  write("/etc/ld.so.conf", "/usr/lib/x86_64-linux-gnu\n/a/lib\n/b/a/lib\n");
  // SONAMEs that end other SONAMEs and paths that end other paths, in 3 directories, and enough strings
  // for ldconfig's string hash table to grow twice.
  std::string prefix;
  for (int depth = 0; depth < 4; ++depth) {
    for (int n = 0; n < 12; ++n) {
      const std::string name = "lib" + prefix + "tail" + std::to_string(n) + ".so." + std::to_string(n % 3);
      library("/usr/lib/x86_64-linux-gnu/" + name, name);
      if (n % 2 == 0) {
        library("/a/lib/" + name, name);
        library("/b/a/lib/" + name, name);
      }
    }
    prefix += "lib";
  }
  expect_reproduced(4 * 24);
}

}  // namespace
}  // namespace gpuctk::ldcache
