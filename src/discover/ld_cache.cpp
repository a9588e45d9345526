// ld.so.cache layouts, as written by glibc's ldconfig (all integers in the writing host's byte order):
//
// New format ("glibc-ld.so.cache1.1", the only one glibc >= 2.32 writes by default):
//   header, 48 bytes:
//     0  char[17] "glibc-ld.so.cache"   17  char[3] "1.1"
//    20  u32 nlibs                      24  u32 len_strings (size of the string table)
//    28  u8  flags (glibc >= 2.33; bits 0-1: 0 unset, 1 invalid, 2 little-endian, 3 big-endian)
//    29  u8[3] unused                   32  u32 extension_offset (glibc >= 2.33; 0 = none)
//    36  u32[3] unused
//   then nlibs entries of 24 bytes:
//     0  i32 flags (LibType | Arch)     4  u32 key     8  u32 value
//    12  u32 osversion                 16  u64 hwcap
//   then the NUL-terminated strings. key and value are offsets from the start of this header. The
//   extension area (generator string, glibc-hwcaps names) follows the strings; it is not read here.
//
// Old format ("ld.so-1.7.0", libc5 era; `ldconfig -c old` still writes it):
//   header, 16 bytes: char[11] "ld.so-1.7.0", 1 byte padding, u32 nlibs;
//   then nlibs entries of 12 bytes: i32 flags, u32 key, u32 value;
//   then the strings. key and value are offsets from the end of the entry table.
//
// Compat format (`ldconfig -c compat`, the default of glibc < 2.32): the old header and table, then
// the new header at the next 8-byte boundary (the alignment of the new header, which holds u64s; the
// writer pads the old table with a duplicate entry so that no gap remains), its entries and the one
// string table. Old entries point into that table relative to the end of the old table. Like the
// dynamic linker, we read the new table and ignore the old one.
//
// Every position below is computed in 64 bits from 32-bit fields, so nothing can wrap.
//
// Limits. A cache is untrusted input (a driver container's root is someone else's image), and a small
// file can describe a huge decoded cache: 100000 entries whose keys all point at one 1 MiB string decode
// to 200 GB. So the file (k_max_file_size), each string (k_max_string_length), the entry count
// (k_max_entries) and the sum of all decoded strings (k_max_decoded_bytes) are bounded; each limit is
// orders of magnitude above real caches (a full desktop: ~5000 entries, ~500 KB) and each has its own
// error.

#include "discover/ld_cache.hpp"

#include <array>
#include <bit>
#include <cstring>

#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

constexpr std::string_view k_old_magic = "ld.so-1.7.0";
constexpr std::string_view k_new_magic = "glibc-ld.so.cache1.1";  // magic and version
constexpr uint64_t k_old_header_size = 16;
constexpr uint64_t k_old_entry_size = 12;
constexpr uint64_t k_new_header_size = 48;
constexpr uint64_t k_new_entry_size = 24;
constexpr uint64_t k_new_header_alignment = 8;
constexpr uint64_t k_new_nlibs_at = 20;
constexpr uint64_t k_new_flags_at = 28;
constexpr uint8_t k_endian_mask = 0x3;
constexpr uint8_t k_endian_little = 2;
constexpr uint8_t k_endian_big = 3;

constexpr size_t k_max_file_size = size_t{64} << 20;          // bytes read from disk
constexpr uint64_t k_max_string_length = 4096;                // PATH_MAX: no SONAME or path is longer
constexpr uint64_t k_max_entries = uint64_t{1} << 17;         // 131072 entries in one table
constexpr uint64_t k_max_decoded_bytes = uint64_t{32} << 20;  // keys and values of all entries together

// A native-endian integer at `pos`; the caller has checked that it lies within `bytes`.
template <class T>
T load(std::string_view bytes, uint64_t pos) {
  T value;
  std::memcpy(&value, bytes.data() + pos, sizeof value);
  return value;
}

// The NUL-terminated string at `base + offset`; `index` and `what` ("key", "value") name it in errors.
Result<std::string> string_at(std::string_view bytes, uint64_t base, uint32_t offset, uint64_t index,
                              std::string_view what) {
  const uint64_t pos = base + offset;
  if (pos >= bytes.size()) {
    const std::string at = base == 0 ? std::string() : " (file offset " + std::to_string(pos) + ")";
    return fail("entry " + std::to_string(index) + ": " + std::string(what) + " offset " +
                std::to_string(offset) + at + " outside the file (size " + std::to_string(bytes.size()) +
                ")");
  }
  // The NUL is looked for within the longest string allowed, not through the rest of the file.
  const auto window = bytes.substr(pos, k_max_string_length + 1);
  const auto nul = window.find('\0');
  if (nul == std::string_view::npos) {
    if (window.size() > k_max_string_length) {
      return fail("entry " + std::to_string(index) + ": " + std::string(what) + " at file offset " +
                  std::to_string(pos) + " is longer than " + std::to_string(k_max_string_length) +
                  " bytes (the limit for a path)");
    }
    return fail("entry " + std::to_string(index) + ": " + std::string(what) + " at file offset " +
                std::to_string(pos) + " is not NUL-terminated within the file");
  }
  return std::string(window.substr(0, nul));
}

// Counts the strings of `entry` against the limit for the whole cache.
Result<void> count_decoded(const LdCacheEntry& entry, uint64_t index, uint64_t& decoded) {
  decoded += entry.key.size() + entry.value.size();
  if (decoded > k_max_decoded_bytes) {
    return fail("entry " + std::to_string(index) + ": the decoded keys and values exceed " +
                std::to_string(k_max_decoded_bytes) + " bytes (the limit for a whole cache)");
  }
  return {};
}

Result<void> check_entry_count(uint32_t count, std::string_view kind) {
  if (count > k_max_entries) {
    return fail(std::to_string(count) + " " + std::string(kind) + "entries exceed the limit of " +
                std::to_string(k_max_entries));
  }
  return {};
}

// The flags, key and value that old and new entries start with; entry `index` is at `at` and its
// strings are relative to `strings`.
Result<LdCacheEntry> read_entry(std::string_view bytes, uint64_t at, uint64_t strings, uint64_t index) {
  GPUCTK_TRY_ASSIGN(auto key, string_at(bytes, strings, load<uint32_t>(bytes, at + 4), index, "key"));
  GPUCTK_TRY_ASSIGN(auto value, string_at(bytes, strings, load<uint32_t>(bytes, at + 8), index, "value"));
  return LdCacheEntry{.key = std::move(key),
                      .value = std::move(value),
                      .flags = static_cast<uint32_t>(load<int32_t>(bytes, at)),
                      .osversion = 0,
                      .hwcap = 0};
}

// Checks that `count` entries of `size` bytes starting at `start` fit in the file.
Result<void> check_table(std::string_view bytes, uint64_t start, uint32_t count, uint64_t size,
                         std::string_view kind) {
  if (start + count * size > bytes.size()) {
    return fail(std::to_string(count) + " " + std::string(kind) + "entries of " + std::to_string(size) +
                " bytes at offset " + std::to_string(start) + " do not fit the file (size " +
                std::to_string(bytes.size()) + ")");
  }
  return {};
}

Result<void> check_byte_order(uint8_t flags) {
  const uint8_t endian = flags & k_endian_mask;
  const uint8_t native = std::endian::native == std::endian::little ? k_endian_little : k_endian_big;
  if (endian == 0 || endian == native) {
    return {};  // 0: written by glibc < 2.33, which did not record it
  }
  if (endian == k_endian_little || endian == k_endian_big) {
    return fail(std::string("written for a ") + (endian == k_endian_little ? "little" : "big") +
                "-endian host");
  }
  return fail("invalid byte-order flags " + std::to_string(flags));
}

// The new-format table whose header starts at `base`.
Result<LdCache> parse_new(std::string_view bytes, uint64_t base, LdCacheFormat format) {
  if (bytes.size() - base < k_new_header_size) {
    return fail("truncated header at offset " + std::to_string(base) + " (" +
                std::to_string(bytes.size() - base) + " of " + std::to_string(k_new_header_size) + " bytes)");
  }
  GPUCTK_TRY(check_byte_order(load<uint8_t>(bytes, base + k_new_flags_at)));
  const auto nlibs = load<uint32_t>(bytes, base + k_new_nlibs_at);
  const uint64_t table = base + k_new_header_size;
  GPUCTK_TRY(check_table(bytes, table, nlibs, k_new_entry_size, ""));
  GPUCTK_TRY(check_entry_count(nlibs, ""));
  LdCache cache{.format = format, .entries = {}};
  cache.entries.reserve(nlibs);
  uint64_t decoded = 0;
  for (uint64_t i = 0; i < nlibs; ++i) {
    const uint64_t at = table + i * k_new_entry_size;
    GPUCTK_TRY_ASSIGN(LdCacheEntry entry, read_entry(bytes, at, base, i));
    GPUCTK_TRY(count_decoded(entry, i, decoded));
    entry.osversion = load<uint32_t>(bytes, at + 12);
    entry.hwcap = load<uint64_t>(bytes, at + 16);
    cache.entries.push_back(std::move(entry));
  }
  return cache;
}

// The old-format table (header at 0); a new-format header may follow it.
Result<LdCache> parse_old(std::string_view bytes) {
  if (bytes.size() < k_old_header_size) {
    return fail("truncated header at offset 0 (" + std::to_string(bytes.size()) + " of " +
                std::to_string(k_old_header_size) + " bytes)");
  }
  const auto nlibs = load<uint32_t>(bytes, k_old_magic.size() + 1);
  GPUCTK_TRY(check_table(bytes, k_old_header_size, nlibs, k_old_entry_size, "old-format "));
  const uint64_t strings = k_old_header_size + nlibs * k_old_entry_size;
  const uint64_t new_header = (strings + k_new_header_alignment - 1) & ~(k_new_header_alignment - 1);
  if (new_header <= bytes.size() && bytes.substr(new_header).starts_with(k_new_magic)) {
    return parse_new(bytes, new_header, LdCacheFormat::compat);
  }
  GPUCTK_TRY(check_entry_count(nlibs, "old-format "));
  LdCache cache{.format = LdCacheFormat::old_only, .entries = {}};
  cache.entries.reserve(nlibs);
  uint64_t decoded = 0;
  for (uint64_t i = 0; i < nlibs; ++i) {
    GPUCTK_TRY_ASSIGN(LdCacheEntry entry,
                      read_entry(bytes, k_old_header_size + i * k_old_entry_size, strings, i));
    GPUCTK_TRY(count_decoded(entry, i, decoded));
    cache.entries.push_back(std::move(entry));
  }
  return cache;
}

Result<LdCache> parse(std::string_view bytes) {
  if (bytes.empty()) {
    return fail("empty file");
  }
  if (bytes.starts_with(k_new_magic)) {
    return parse_new(bytes, 0, LdCacheFormat::new_only);
  }
  if (bytes.starts_with(k_old_magic)) {
    return parse_old(bytes);
  }
  const auto head = bytes.substr(0, k_new_magic.size());
  if (k_new_magic.starts_with(head) || k_old_magic.starts_with(head)) {
    return fail("truncated header at offset 0 (" + std::to_string(bytes.size()) + " bytes)");
  }
  return fail("unsupported format (magic " + quote(head) + ")");
}

struct ArchName {
  Arch arch;
  std::string_view name;
};

constexpr std::array k_arch_names{
    ArchName{Arch::i386, "i386"},
    ArchName{Arch::sparc64, "sparc64"},
    ArchName{Arch::ia64, "ia64"},
    ArchName{Arch::x86_64, "x86_64"},
    ArchName{Arch::s390x, "s390x"},
    ArchName{Arch::ppc64, "ppc64"},
    ArchName{Arch::mips64_n32, "mips64_n32"},
    ArchName{Arch::mips64_n64, "mips64_n64"},
    ArchName{Arch::x32, "x32"},
    ArchName{Arch::armhf, "armhf"},
    ArchName{Arch::aarch64, "aarch64"},
    ArchName{Arch::armel, "armel"},
    ArchName{Arch::mips32_nan2008, "mips32_nan2008"},
    ArchName{Arch::mips64_n32_nan2008, "mips64_n32_nan2008"},
    ArchName{Arch::mips64_n64_nan2008, "mips64_n64_nan2008"},
    ArchName{Arch::riscv_soft, "riscv_soft"},
    ArchName{Arch::riscv_double, "riscv_double"},
    ArchName{Arch::loongarch_soft, "loongarch_soft"},
    ArchName{Arch::loongarch_double, "loongarch_double"},
};

}  // namespace

std::vector<LdCacheEntry> LdCache::libc6_entries(Arch arch) const {
  std::vector<LdCacheEntry> out;
  for (const auto& entry : entries) {
    if (entry.arch() == arch && entry.type() == LibType::elf_libc6) {
      out.push_back(entry);
    }
  }
  return out;
}

std::string arch_name(Arch arch) {
  for (const auto& row : k_arch_names) {
    if (row.arch == arch) {
      return std::string(row.name);
    }
  }
  static constexpr char k_hex[] = "0123456789abcdef";
  const auto bits = static_cast<uint32_t>(arch);
  std::string name = "arch 0x";
  for (int shift = 12; shift >= 0; shift -= 4) {
    name.push_back(k_hex[(bits >> shift) & 0xf]);
  }
  return name;
}

std::optional<Arch> native_arch() {
#if defined(__x86_64__) && defined(__ILP32__)
  return Arch::x32;
#elif defined(__x86_64__)
  return Arch::x86_64;
#elif defined(__aarch64__)
  return Arch::aarch64;
#elif defined(__powerpc64__)
  return Arch::ppc64;
#elif defined(__i386__)
  return Arch::i386;
#else
  return std::nullopt;
#endif
}

std::optional<Arch> compat32_arch(Arch native) {
  switch (native) {
    case Arch::x86_64:
      return Arch::i386;  // multilib i386 beside x86-64
    case Arch::aarch64:
      return Arch::armhf;  // 32-bit ARM hard-float beside AArch64
    default:
      return std::nullopt;  // ppc64le and the rest have no 32-bit userland we use
  }
}

Result<LdCache> parse_ld_cache(std::string_view bytes) {
  auto cache = parse(bytes);
  if (!cache) {
    return fail_with("ld.so.cache", cache.error());
  }
  return cache;
}

Result<LdCache> read_ld_cache(const std::string& path) {
  GPUCTK_TRY_ASSIGN(const std::string bytes, read_file_nofollow(path, k_max_file_size));
  auto cache = parse(bytes);
  if (!cache) {
    return fail_with(path, cache.error());
  }
  return cache;
}

}  // namespace gpuctk::discover
