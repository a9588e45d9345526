#include "ldcache/cache_file.hpp"

#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "support/spawn_capture.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::ldcache {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------------
// A small test-side writer of the three layouts (see the format comment in ldcache/cache_file.cpp), so that
// every field can be set and corrupted on purpose. The real ldconfig checks it below.

struct RawEntry {
  int32_t flags = 0x0303;
  std::string key;
  std::string value;
  uint32_t osversion = 0;
  uint64_t hwcap = 0;
};

template <class T>
void put(std::string& bytes, size_t pos, T value) {
  std::memcpy(bytes.data() + pos, &value, sizeof value);
}

template <class T>
void append(std::string& bytes, T value) {
  bytes.append(sizeof value, '\0');
  put(bytes, bytes.size() - sizeof value, value);
}

// The string table for `entries` (each value, then its key) and each entry's {key, value} offsets in it.
std::string string_table(const std::vector<RawEntry>& entries,
                         std::vector<std::pair<uint32_t, uint32_t>>& at) {
  std::string table;
  for (const auto& entry : entries) {
    const auto value = static_cast<uint32_t>(table.size());
    table.append(entry.value).push_back('\0');
    const auto key = static_cast<uint32_t>(table.size());
    table.append(entry.key).push_back('\0');
    at.emplace_back(key, value);
  }
  return table;
}

constexpr uint8_t k_little_endian_flags = 2;

std::string write_new(const std::vector<RawEntry>& entries, uint8_t header_flags = k_little_endian_flags) {
  std::vector<std::pair<uint32_t, uint32_t>> at;
  const auto table = string_table(entries, at);
  const auto strings = static_cast<uint32_t>(48 + 24 * entries.size());
  std::string out = "glibc-ld.so.cache1.1";
  append(out, static_cast<uint32_t>(entries.size()));
  append(out, static_cast<uint32_t>(table.size()));
  append(out, header_flags);
  out.append(19, '\0');  // padding, extension offset (none), unused
  for (size_t i = 0; i < entries.size(); ++i) {
    append(out, entries[i].flags);
    append(out, strings + at[i].first);
    append(out, strings + at[i].second);
    append(out, entries[i].osversion);
    append(out, entries[i].hwcap);
  }
  return out + table;
}

// The old header and table; string offsets are `bias` + the offset in `entries`' own string table.
std::string write_old_table(const std::vector<RawEntry>& entries, uint32_t bias) {
  std::vector<std::pair<uint32_t, uint32_t>> at;
  string_table(entries, at);
  std::string out("ld.so-1.7.0\0", 12);
  append(out, static_cast<uint32_t>(entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    append(out, entries[i].flags);
    append(out, bias + at[i].first);
    append(out, bias + at[i].second);
  }
  return out;
}

std::string write_old(const std::vector<RawEntry>& entries) {
  std::vector<std::pair<uint32_t, uint32_t>> at;
  return write_old_table(entries, 0) + string_table(entries, at);
}

// Old table, zero padding to 8 bytes, new header and table; old offsets point into the new strings.
std::string write_compat(const std::vector<RawEntry>& old_entries, const std::vector<RawEntry>& new_entries) {
  const auto old_size = 16 + 12 * old_entries.size();
  const auto pad = static_cast<uint32_t>((8 - old_size % 8) % 8);
  const auto new_strings = static_cast<uint32_t>(48 + 24 * new_entries.size());
  return write_old_table(old_entries, pad + new_strings) + std::string(pad, '\0') + write_new(new_entries);
}

std::vector<LdCacheEntry> as_entries(const std::vector<RawEntry>& raw, bool new_table) {
  std::vector<LdCacheEntry> out;
  for (const auto& entry : raw) {
    out.push_back({.key = entry.key,
                   .value = entry.value,
                   .flags = static_cast<uint32_t>(entry.flags),
                   .osversion = new_table ? entry.osversion : 0,
                   .hwcap = new_table ? entry.hwcap : 0});
  }
  return out;
}

const std::vector<RawEntry> k_driver_entries{
    {.flags = 0x0303, .key = "libcuda.so.1", .value = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
    {.flags = 0x0303, .key = "libcuda.so", .value = "/usr/lib/x86_64-linux-gnu/libcuda.so"},
    {.flags = 0x0003, .key = "libcuda.so.1", .value = "/usr/lib/i386-linux-gnu/libcuda.so.1"},
    {.flags = 0x0a03, .key = "libcuda.so.1", .value = "/usr/lib/aarch64-linux-gnu/libcuda.so.1"},
    {.flags = 0x0903, .key = "libcuda.so.1", .value = "/usr/lib/arm-linux-gnueabihf/libcuda.so.1"},
    {.flags = 0x0302, .key = "libold.so.5", .value = "/usr/lib/libold.so.5"},
    {.flags = 0x0303,
     .key = "libnvidia-ml.so.1",
     .value = "/usr/lib/x86_64-linux-gnu/tls/libnvidia-ml.so.1",
     .osversion = 0x030200,
     .hwcap =
         uint64_t{1} << 63},  // a legacy hwcap subdirectory ("tls"); cache_file_write_test has glibc-hwcaps
};

// Parsing every prefix of `bytes` gives an error or, once every string is complete, the whole cache;
// every prefix that cuts the headers or the entry table is an error.
void expect_truncations_fail(const std::string& bytes) {
  const auto full = parse_ld_cache(bytes);
  ASSERT_TRUE(full) << full.error().message;
  const auto n = full->entries.size();
  size_t tables_end = 0;
  switch (full->format) {
    case LdCacheFormat::new_only:
      tables_end = 48 + 24 * n;
      break;
    case LdCacheFormat::old_only:
      tables_end = 16 + 12 * n;
      break;
    case LdCacheFormat::compat:
      tables_end = bytes.find("glibc-ld.so.cache") + 48 + 24 * n;
      break;
  }
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const auto result = parse_ld_cache(std::string_view(bytes).substr(0, cut));
    if (cut < tables_end) {
      EXPECT_FALSE(result) << "cut at " << cut;
    }
    if (result) {
      EXPECT_EQ(*result, *full) << "cut at " << cut;
    } else {
      EXPECT_TRUE(result.error().message.starts_with("ld.so.cache: ")) << result.error().message;
    }
  }
}

// Flips 1-4 random bytes of `bytes` `rounds` times; the parser must return (ok or error), never crash.
// Returns how many of the mutants parsed.
size_t fuzz(const std::string& bytes, uint32_t seed, int rounds = 1000) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<size_t> position(0, bytes.size() - 1);
  std::uniform_int_distribution<int> count(1, 4);
  std::uniform_int_distribution<int> byte(0, 255);
  size_t parsed = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string mutant = bytes;
    for (int i = count(random); i > 0; --i) {
      mutant[position(random)] = static_cast<char>(byte(random));
    }
    const auto result = parse_ld_cache(mutant);
    if (result) {
      ++parsed;
      for (const auto& entry : result->entries) {
        EXPECT_LE(entry.key.size() + entry.value.size(), mutant.size());
      }
    }
  }
  return parsed;
}

// ---------------------------------------------------------------------------------------------------
// The layouts

TEST(LdCache, NewFormatKeepsEntriesInFileOrderWithAllFields) {
  const auto cache = parse_ld_cache(write_new(k_driver_entries));
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->format, LdCacheFormat::new_only);
  EXPECT_EQ(cache->entries, as_entries(k_driver_entries, true));
}

TEST(LdCache, OldFormatAloneReadsStringsAfterTheTable) {
  const auto cache = parse_ld_cache(write_old(k_driver_entries));
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->format, LdCacheFormat::old_only);
  EXPECT_EQ(cache->entries, as_entries(k_driver_entries, false));
}

TEST(LdCache, CompatFormatReadsTheNewTableAfterAnAlignedOldTable) {
  // Seven old entries end at 16 + 84 = 100, so the new header sits at 104 after 4 bytes of padding.
  const auto bytes = write_compat(k_driver_entries, k_driver_entries);
  ASSERT_EQ(bytes.find("glibc-ld.so.cache"), 104u);
  const auto cache = parse_ld_cache(bytes);
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->format, LdCacheFormat::compat);
  EXPECT_EQ(cache->entries, as_entries(k_driver_entries, true));
}

TEST(LdCache, CompatFormatTakesTheNewTableWhenTheTablesDisagree) {
  const std::vector<RawEntry> old_entries{k_driver_entries[0], k_driver_entries[1]};
  const auto cache = parse_ld_cache(write_compat(old_entries, k_driver_entries));
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->format, LdCacheFormat::compat);
  EXPECT_EQ(cache->entries.size(), k_driver_entries.size());
}

TEST(LdCache, OldHeaderWithSomethingElseAfterTheTableIsOldFormat) {
  auto bytes = write_old(k_driver_entries);
  bytes += std::string(8, '\0') + "glibc-ld.so.cache1.1";  // not at the aligned end of the table
  const auto cache = parse_ld_cache(bytes);
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->format, LdCacheFormat::old_only);
}

TEST(LdCache, EmptyTablesAreValid) {
  for (const auto& bytes : {write_new({}), write_old({}), write_compat({}, {})}) {
    const auto cache = parse_ld_cache(bytes);
    ASSERT_TRUE(cache) << cache.error().message;
    EXPECT_TRUE(cache->entries.empty());
  }
}

TEST(LdCache, HeaderWithoutByteOrderFlagFromOldGlibcIsAccepted) {
  const auto cache = parse_ld_cache(write_new(k_driver_entries, 0));
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->entries.size(), k_driver_entries.size());
}

TEST(LdCache, NegativeFlagsAreKeptBitForBit) {
  const auto cache = parse_ld_cache(write_new({{.flags = -1, .key = "a", .value = "/a"}}));
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_EQ(cache->entries[0].flags, 0xffffffffu);
  EXPECT_EQ(arch_name(cache->entries[0].arch()), "arch 0xff00");
  EXPECT_EQ(static_cast<uint32_t>(cache->entries[0].type()), 0xffu);
}

// ---------------------------------------------------------------------------------------------------
// Helpers on the parsed cache

TEST(LdCache, Libc6EntriesFilterByArchAndTypeInFileOrder) {
  const auto cache = parse_ld_cache(write_new(k_driver_entries));
  ASSERT_TRUE(cache) << cache.error().message;
  const auto values = [&](Arch arch) {
    std::vector<std::string> out;
    for (const auto& entry : cache->libc6_entries(arch)) {
      out.push_back(entry.value);
    }
    return out;
  };
  EXPECT_EQ(values(Arch::x86_64), (std::vector<std::string>{
                                      "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                      "/usr/lib/x86_64-linux-gnu/libcuda.so",
                                      "/usr/lib/x86_64-linux-gnu/tls/libnvidia-ml.so.1",
                                  }));  // not the libc5 entry
  EXPECT_EQ(values(Arch::i386), (std::vector<std::string>{"/usr/lib/i386-linux-gnu/libcuda.so.1"}));
  EXPECT_EQ(values(Arch::aarch64), (std::vector<std::string>{"/usr/lib/aarch64-linux-gnu/libcuda.so.1"}));
  EXPECT_EQ(values(Arch::armhf), (std::vector<std::string>{"/usr/lib/arm-linux-gnueabihf/libcuda.so.1"}));
  EXPECT_TRUE(values(Arch::ppc64).empty());
}

TEST(LdCache, EntryArchAndType) {
  const LdCacheEntry entry{.key = "k", .value = "v", .flags = 0x0a03};
  EXPECT_EQ(entry.arch(), Arch::aarch64);
  EXPECT_EQ(entry.type(), LibType::elf_libc6);
  EXPECT_EQ((LdCacheEntry{.key = "k", .value = "v", .flags = 0x0302}.type()), LibType::elf_libc5);
}

TEST(LdCache, ArchNames) {
  EXPECT_EQ(arch_name(Arch::i386), "i386");
  EXPECT_EQ(arch_name(Arch::x86_64), "x86_64");
  EXPECT_EQ(arch_name(Arch::ppc64), "ppc64");
  EXPECT_EQ(arch_name(Arch::armhf), "armhf");
  EXPECT_EQ(arch_name(Arch::aarch64), "aarch64");
  EXPECT_EQ(arch_name(Arch::loongarch_double), "loongarch_double");
  EXPECT_EQ(arch_name(static_cast<Arch>(0x1300)), "arch 0x1300");
  EXPECT_EQ(static_cast<uint32_t>(Arch::x86_64), 0x0300u);
  EXPECT_EQ(static_cast<uint32_t>(Arch::aarch64), 0x0a00u);
  EXPECT_EQ(static_cast<uint32_t>(Arch::armhf), 0x0900u);
  EXPECT_EQ(static_cast<uint32_t>(Arch::ppc64), 0x0500u);
}

TEST(LdCache, NativeAndCompat32Arch) {
#if defined(__x86_64__) && !defined(__ILP32__)
  EXPECT_EQ(native_arch(), Arch::x86_64);
#elif defined(__aarch64__)
  EXPECT_EQ(native_arch(), Arch::aarch64);
#endif
  EXPECT_EQ(compat32_arch(Arch::x86_64), Arch::i386);
  EXPECT_EQ(compat32_arch(Arch::aarch64), Arch::armhf);
  EXPECT_EQ(compat32_arch(Arch::ppc64), std::nullopt);
}

// ---------------------------------------------------------------------------------------------------
// Malformed input: exact errors

std::string error_of(std::string_view bytes) {
  const auto result = parse_ld_cache(bytes);
  return result ? "(parsed)" : result.error().message;
}

TEST(LdCacheErrors, EmptyInput) {
  EXPECT_EQ(error_of(""), "ld.so.cache: empty file");
}

TEST(LdCacheErrors, UnknownMagic) {
  EXPECT_EQ(error_of("hello world, this is not a cache"),
            "ld.so.cache: unsupported format (magic \"hello world, this is\")");
  EXPECT_EQ(error_of(std::string("\177ELF\2\1\1", 7)),
            "ld.so.cache: unsupported format (magic \"\\x7fELF\\x02\\x01\\x01\")");
  auto next_version = write_new(k_driver_entries);
  next_version[19] = '2';
  EXPECT_EQ(error_of(next_version), "ld.so.cache: unsupported format (magic \"glibc-ld.so.cache1.2\")");
}

TEST(LdCacheErrors, TruncatedHeaders) {
  EXPECT_EQ(error_of("glibc-ld.so"), "ld.so.cache: truncated header at offset 0 (11 bytes)");
  EXPECT_EQ(error_of("ld.so-1.7"), "ld.so.cache: truncated header at offset 0 (9 bytes)");
  EXPECT_EQ(error_of(write_new(k_driver_entries).substr(0, 30)),
            "ld.so.cache: truncated header at offset 0 (30 of 48 bytes)");
  EXPECT_EQ(error_of(write_old(k_driver_entries).substr(0, 14)),
            "ld.so.cache: truncated header at offset 0 (14 of 16 bytes)");
  // A compat file cut inside its new header: 8 old entries end at 112.
  const std::vector<RawEntry> eight(8, k_driver_entries[0]);
  EXPECT_EQ(error_of(write_compat(eight, eight).substr(0, 112 + 40)),
            "ld.so.cache: truncated header at offset 112 (40 of 48 bytes)");
}

TEST(LdCacheErrors, CountsThatDoNotFitTheFile) {
  auto bytes = write_new(k_driver_entries);
  put<uint32_t>(bytes, 20, 0xffffffff);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: 4294967295 entries of 24 bytes at offset 48 do not fit the file (size " +
                std::to_string(bytes.size()) + ")");
  put<uint32_t>(bytes, 20, 8);  // one more than there are: runs into the strings, then past the end
  bytes.resize(48 + 24 * 8 - 1);
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: 8 entries of 24 bytes at offset 48 do not fit the file (size 239)");

  auto old = write_old(k_driver_entries);
  put<uint32_t>(old, 12, 0x80000000);
  EXPECT_EQ(error_of(old),
            "ld.so.cache: 2147483648 old-format entries of 12 bytes at offset 16 do not fit the "
            "file (size " +
                std::to_string(old.size()) + ")");
}

TEST(LdCacheErrors, OffsetsOutsideTheFile) {
  auto bytes = write_new(k_driver_entries);
  const auto size = std::to_string(bytes.size());
  put<uint32_t>(bytes, 48 + 24 * 1 + 4, 99999);  // entry 1 key
  EXPECT_EQ(error_of(bytes), "ld.so.cache: entry 1: key offset 99999 outside the file (size " + size + ")");
  put<uint32_t>(bytes, 48 + 24 * 1 + 4, static_cast<uint32_t>(bytes.size()));  // one past the end
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: entry 1: key offset " + size + " outside the file (size " + size + ")");
  bytes = write_new(k_driver_entries);
  put<uint32_t>(bytes, 48 + 24 * 6 + 8, 0xffffffff);  // entry 6 value: must not wrap around
  EXPECT_EQ(error_of(bytes),
            "ld.so.cache: entry 6: value offset 4294967295 outside the file (size " + size + ")");

  auto old = write_old(k_driver_entries);
  put<uint32_t>(old, 16 + 12 * 2 + 8, 5000);  // entry 2 value, relative to the end of the table (100)
  EXPECT_EQ(error_of(old),
            "ld.so.cache: entry 2: value offset 5000 (file offset 5100) outside the file (size " +
                std::to_string(old.size()) + ")");

  auto compat = write_compat(k_driver_entries, k_driver_entries);
  put<uint32_t>(compat, 104 + 48 + 4, static_cast<uint32_t>(compat.size() - 104));  // entry 0 key, new table
  EXPECT_EQ(error_of(compat), "ld.so.cache: entry 0: key offset " + std::to_string(compat.size() - 104) +
                                  " (file offset " + std::to_string(compat.size()) +
                                  ") outside the file (size " + std::to_string(compat.size()) + ")");
}

TEST(LdCacheErrors, StringWithoutNulBeforeTheEnd) {
  auto bytes = write_new(k_driver_entries);
  bytes.pop_back();  // the last string is entry 6's key
  const auto key_at = bytes.size() - k_driver_entries[6].key.size();
  EXPECT_EQ(error_of(bytes), "ld.so.cache: entry 6: key at file offset " + std::to_string(key_at) +
                                 " is not NUL-terminated within the file");
  auto old = write_old(k_driver_entries);
  old.back() = 'x';
  EXPECT_EQ(error_of(old), "ld.so.cache: entry 6: key at file offset " +
                               std::to_string(old.size() - k_driver_entries[6].key.size() - 1) +
                               " is not NUL-terminated within the file");
}

TEST(LdCacheErrors, ForeignByteOrder) {
  EXPECT_EQ(error_of(write_new(k_driver_entries, 3)), "ld.so.cache: written for a big-endian host");
  EXPECT_EQ(error_of(write_new(k_driver_entries, 1)), "ld.so.cache: invalid byte-order flags 1");
}

// ---------------------------------------------------------------------------------------------------
// Limits: a small file must not decode into an unbounded amount of memory.

// A new-format cache of `count` entries whose keys and values all point at one string of `length` bytes.
std::string shared_string_cache(uint32_t count, size_t length) {
  const auto strings = static_cast<uint32_t>(48 + 24 * uint64_t{count});
  std::string out = "glibc-ld.so.cache1.1";
  append(out, count);
  append(out, static_cast<uint32_t>(length + 1));
  append(out, k_little_endian_flags);
  out.append(19, '\0');
  for (uint32_t i = 0; i < count; ++i) {
    append(out, int32_t{0x0303});
    append(out, strings);  // key
    append(out, strings);  // value
    append(out, uint32_t{0});
    append(out, uint64_t{0});
  }
  return out + std::string(length, 'x') + '\0';
}

TEST(LdCacheLimits, OneHugeStringSharedByEveryEntryIsRefusedAtTheFirstEntry) {
  // 100000 entries, one 1 MiB string: 3.4 MB of file that would decode to 200 GB.
  const auto bytes = shared_string_cache(100000, 1 << 20);
  EXPECT_EQ(error_of(bytes), "ld.so.cache: entry 0: key at file offset " + std::to_string(48 + 24 * 100000) +
                                 " is longer than 4096 bytes (the limit for a path)");
}

TEST(LdCacheLimits, StringsUpToPathMaxAreAccepted) {
  const auto cache = parse_ld_cache(shared_string_cache(3, 4096));
  ASSERT_TRUE(cache) << cache.error().message;
  ASSERT_EQ(cache->entries.size(), 3u);
  EXPECT_EQ(cache->entries[2].value, std::string(4096, 'x'));
  EXPECT_EQ(error_of(shared_string_cache(3, 4097)),
            "ld.so.cache: entry 0: key at file offset 120 is longer than 4096 bytes (the limit for a path)");
  // The old format reads its strings the same way.
  auto old = write_old({{.flags = 0x0303, .key = std::string(5000, 'k'), .value = "/v"}});
  EXPECT_EQ(error_of(old),
            "ld.so.cache: entry 0: key at file offset 31 is longer than 4096 bytes "
            "(the limit for a path)");
}

TEST(LdCacheLimits, DecodedBytesOfTheWholeCacheAreBounded) {
  // Each entry decodes to 2 x 4000 bytes; 32 MiB are reached within entry 4194.
  EXPECT_EQ(error_of(shared_string_cache(5000, 4000)),
            "ld.so.cache: entry 4194: the decoded keys and values exceed 33554432 bytes (the limit for a "
            "whole cache)");
  EXPECT_TRUE(parse_ld_cache(shared_string_cache(4194, 4000)));
}

TEST(LdCacheLimits, EntryCountIsBounded) {
  EXPECT_TRUE(parse_ld_cache(shared_string_cache(131072, 1)));
  EXPECT_EQ(error_of(shared_string_cache(131073, 1)),
            "ld.so.cache: 131073 entries exceed the limit of 131072");
  std::vector<RawEntry> many(131073, RawEntry{.flags = 0x0303, .key = "k", .value = "v"});
  EXPECT_EQ(error_of(write_old(many)), "ld.so.cache: 131073 old-format entries exceed the limit of 131072");
}

TEST(LdCacheErrors, EveryTruncationOfEveryLayoutFails) {
  expect_truncations_fail(write_new(k_driver_entries));
  expect_truncations_fail(write_old(k_driver_entries));
  expect_truncations_fail(write_compat(k_driver_entries, k_driver_entries));
  // The old layout ends with its last string's NUL: dropping only that byte must fail too.
  const auto old = write_old(k_driver_entries);
  EXPECT_FALSE(parse_ld_cache(std::string_view(old).substr(0, old.size() - 1)));
}

TEST(LdCacheErrors, RandomByteFlipsNeverCrash) {
  // Fixed seeds: a failure reproduces. Some mutants must still parse (flips in unused header bytes or
  // string text), most must not.
  for (const auto& bytes : {write_new(k_driver_entries), write_old(k_driver_entries),
                            write_compat(k_driver_entries, k_driver_entries)}) {
    const auto parsed = fuzz(bytes, 20240501);
    EXPECT_GT(parsed, 0u);
    EXPECT_LT(parsed, 1000u);
  }
}

// ---------------------------------------------------------------------------------------------------
// Real caches written by the real ldconfig

// Exit status and standard output of a shell command.
std::pair<int, std::string> run(const std::string& command) {
  auto done = test::run_shell(command);
  return {done.exit_code, std::move(done.out)};
}

std::string find_ldconfig() {
  for (const char* path : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
    if (::access(path, X_OK) == 0) {
      return path;
    }
  }
  return {};
}

// (key, value) of every entry `ldconfig -p` prints for `cache`, in its order.
std::vector<std::pair<std::string, std::string>> ldconfig_print(const std::string& ldconfig,
                                                                const fs::path& cache) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto [status, text] = run(ldconfig + " -p -C '" + cache.string() + "' 2>/dev/null");
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto open = line.find(" (");
    const auto arrow = line.find(") => ");
    if (line.starts_with('\t') && open != std::string::npos && arrow != std::string::npos) {
      out.emplace_back(line.substr(1, open - 1), line.substr(arrow + 5));
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> key_values(const LdCache& cache) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& entry : cache.entries) {
    out.emplace_back(entry.key, entry.value);
  }
  return out;
}

// Paths of the loaded shared objects whose file name starts with one of `prefixes`.
std::vector<std::string> loaded_libraries(std::vector<std::string> prefixes) {
  struct Search {
    std::vector<std::string> prefixes;
    std::vector<std::string> found;
  } search{std::move(prefixes), {}};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const auto name = fs::path(path).filename().string();
        for (const auto& prefix : s->prefixes) {
          if (name.starts_with(prefix) && fs::is_regular_file(path)) {
            s->found.push_back(path);
          }
        }
        return 0;
      },
      &search);
  return search.found;
}

TEST(LdCacheReal, CachesWrittenByLdconfigInEveryFormat) {
  const auto ldconfig = find_ldconfig();
  if (ldconfig.empty()) {
    GTEST_SKIP() << "no ldconfig on this machine";
  }
  if (::geteuid() != 0) {
    GTEST_SKIP() << "ldconfig -r chroots, which needs root";
  }
  // Real libraries with SONAMEs: the C++ runtime this test binary runs on (libm.so.6, libgcc_s.so.1).
  const auto libraries = loaded_libraries({"libm.so.", "libgcc_s.so."});
  ASSERT_EQ(libraries.size(), 2u) << "expected libm and libgcc_s to be loaded";
  const test::TempDir tmp{"gpuctk-ldcache"};
  ASSERT_FALSE(tmp.path().empty());
  const fs::path root = tmp.path();
  fs::create_directories(root / "lib");
  fs::create_directories(root / "etc");
  std::ofstream(root / "etc/ld.so.conf") << "";
  std::vector<std::string> sonames;
  for (const auto& library : libraries) {
    const auto soname = fs::path(library).filename();
    fs::copy_file(fs::canonical(library), root / "lib" / soname);
    sonames.push_back(soname.string());
  }
  const auto native = native_arch();
  ASSERT_TRUE(native.has_value());

  const std::array<std::pair<const char*, LdCacheFormat>, 3> formats{{
      {"new", LdCacheFormat::new_only},
      {"old", LdCacheFormat::old_only},
      {"compat", LdCacheFormat::compat},
  }};
  for (const auto& [name, format] : formats) {
    SCOPED_TRACE(name);
    const std::string file = std::string("/ld.so.cache.") + name;
    const auto [status, output] =
        run(ldconfig + " -r '" + root.string() + "' -C " + file + " -c " + name + " -X /lib 2>&1");
    ASSERT_EQ(status, 0) << output;
    const auto path = (root / file.substr(1)).string();
    const auto cache = read_ld_cache(path);
    ASSERT_TRUE(cache) << cache.error().message;
    EXPECT_EQ(cache->format, format);

    // Every library, with its SONAME, its path under the scanned directory and our arch, libc6.
    auto found = cache->libc6_entries(*native);
    std::vector<std::string> keys;
    for (const auto& entry : found) {
      EXPECT_EQ(entry.value, "/lib/" + entry.key);
      EXPECT_EQ(entry.flags, static_cast<uint32_t>(*native) | 3u);
      EXPECT_EQ(entry.hwcap, 0u);
      keys.push_back(entry.key);
    }
    std::sort(keys.begin(), keys.end());
    std::sort(sonames.begin(), sonames.end());
    EXPECT_EQ(keys, sonames);
    EXPECT_EQ(cache->entries.size(), found.size());
    // ldconfig's own reading of the file agrees, entry for entry and in order.
    EXPECT_EQ(key_values(*cache), ldconfig_print(ldconfig, path));

    const auto bytes = read_file(path);
    ASSERT_TRUE(bytes);
    expect_truncations_fail(*bytes);
    fuzz(*bytes, 7);
  }
}

TEST(LdCacheReal, SystemCacheAgreesWithLdconfig) {
  const auto ldconfig = find_ldconfig();
  if (ldconfig.empty() || !fs::exists("/etc/ld.so.cache")) {
    GTEST_SKIP() << "no ldconfig or /etc/ld.so.cache on this machine";
  }
  const auto cache = read_ld_cache("/etc/ld.so.cache");
  ASSERT_TRUE(cache) << cache.error().message;
  EXPECT_FALSE(cache->entries.empty());
  EXPECT_EQ(key_values(*cache), ldconfig_print(ldconfig, "/etc/ld.so.cache"));
  // libc itself is in every system cache.
  const auto native = native_arch();
  ASSERT_TRUE(native.has_value());
  const auto libc6 = cache->libc6_entries(*native);
  EXPECT_TRUE(std::any_of(libc6.begin(), libc6.end(), [](const auto& e) { return e.key == "libc.so.6"; }));

  // Random cut points of a real, large cache.
  const auto bytes = read_file("/etc/ld.so.cache");
  ASSERT_TRUE(bytes);
  std::mt19937 random(99);
  std::uniform_int_distribution<size_t> cut(0, bytes->size() - 1);
  for (int i = 0; i < 300; ++i) {
    const auto at = cut(random);
    const auto result = parse_ld_cache(std::string_view(*bytes).substr(0, at));
    if (result) {
      EXPECT_EQ(*result, *cache) << "cut at " << at;
    }
  }
  fuzz(*bytes, 11, 200);
}

TEST(LdCacheReal, ReadErrorsNameThePath) {
  const test::TempDir tmp{"gpuctk-ldcache"};
  ASSERT_FALSE(tmp.path().empty());
  const fs::path dir = tmp.path();
  const auto missing = (dir / "nope").string();
  const auto result = read_ld_cache(missing);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "read " + missing + ": No such file or directory");

  const auto garbage = (dir / "ld.so.cache").string();
  std::ofstream(garbage) << "garbage";
  const auto bad = read_ld_cache(garbage);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, garbage + ": unsupported format (magic \"garbage\")");
}

TEST(LdCacheLimits, TheFileIsReadBoundedAndNotThroughALink) {
  const test::TempDir tmp{"gpuctk-ldcache"};
  ASSERT_FALSE(tmp.path().empty());
  const fs::path dir = tmp.path();
  const auto big = (dir / "big.cache").string();
  { std::ofstream out(big); }
  fs::resize_file(big, (size_t{64} << 20) + 1);  // sparse: costs nothing on disk
  auto result = read_ld_cache(big);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "read " + big + ": larger than 67108864 bytes");

  const auto link = (dir / "ld.so.cache").string();
  fs::create_symlink(big, link);
  result = read_ld_cache(link);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "read " + link + ": Too many levels of symbolic links");

  result = read_ld_cache(dir.string());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "read " + dir.string() + ": not a regular file");
}

}  // namespace
}  // namespace gpuctk::ldcache
