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
//   then the NUL-terminated strings (len_strings bytes). key and value are offsets from the start of
//   this header. hwcap: bit 62 set and nothing else in the upper half but the ISA level (bits 32-41)
//   marks a glibc-hwcaps entry, whose low 32 bits index the glibc-hwcaps section below.
//   Extension area (glibc >= 2.33; at extension_offset, a file offset, a multiple of 4; ldconfig puts it
//   right after the strings, rounded up to 4 with zero bytes):
//     0  u32 magic 0xeaa42174           4  u32 count
//     8  count sections of 16 bytes: u32 tag, u32 flags (0), u32 offset (a file offset), u32 size
//   tag 0: the generator, `size` bytes without a NUL ("ldconfig (GNU libc) stable release version
//   2.36"); tag 1: glibc-hwcaps subdirectory names, size/4 u32 offsets of NUL-terminated strings in the
//   string table (relative to the new header, like key and value), sorted by strcmp. Other tags are
//   ignored. ldconfig writes the directory with the generator section first and the glibc-hwcaps one
//   second (only when some entry uses a subdirectory), then the u32 array, then the generator bytes:
//   nothing follows them.
//
// The string table as ldconfig builds it: every distinct string once (keys, values, glibc-hwcaps
// names), sorted by their reversed bytes (unsigned) in descending order, a string that is a suffix of
// another after it; each string then either lies at the end of the one before it in that order (if it
// is a suffix of it: "tail sharing") or follows it after its NUL. The first string is at offset 0.
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

#include "ldcache/cache_file.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::ldcache {
namespace {

constexpr std::string_view k_old_magic = k_old_format_magic;
constexpr std::string_view k_new_magic = k_new_format_magic;
constexpr uint64_t k_old_header_size = 16;
constexpr uint64_t k_old_entry_size = 12;
constexpr uint64_t k_new_header_size = 48;
constexpr uint64_t k_new_entry_size = 24;
constexpr uint64_t k_new_header_alignment = 8;
constexpr uint64_t k_new_nlibs_at = 20;
constexpr uint64_t k_new_len_strings_at = 24;
constexpr uint64_t k_new_flags_at = 28;
constexpr uint64_t k_new_extension_at = 32;
constexpr uint8_t k_endian_mask = 0x3;
constexpr uint8_t k_endian_little = 2;
constexpr uint8_t k_endian_big = 3;

constexpr uint32_t k_extension_magic = 0xeaa42174;  // glibc's cache_extension_magic, (uint32_t)-358342284
constexpr uint64_t k_extension_header_size = 8;     // magic, count
constexpr uint64_t k_extension_section_size = 16;   // tag, flags, offset, size
constexpr uint64_t k_extension_alignment = 4;
constexpr uint32_t k_tag_generator = 0;
constexpr uint32_t k_tag_glibc_hwcaps = 1;
constexpr uint64_t k_hwcap_isa_level_mask = 0x3ff;  // the 10 ISA-level bits above bit 31

constexpr size_t k_max_file_size = size_t{64} << 20;          // bytes read from disk
constexpr uint64_t k_max_string_length = 4096;                // PATH_MAX: no SONAME or path is longer
constexpr uint64_t k_max_entries = uint64_t{1} << 17;         // 131072 entries in one table
constexpr uint64_t k_max_decoded_bytes = uint64_t{32} << 20;  // keys and values of all entries together
constexpr uint64_t k_max_generator_length = 4096;             // ldconfig's is about 50 bytes
constexpr uint64_t k_max_hwcaps_subdirs = 4096;               // glibc 2.36 knows 4 per architecture

// A native-endian integer at `pos`; the caller has checked that it lies within `bytes`.
template <class T>
T load(std::string_view bytes, uint64_t pos) {
  T value;
  std::memcpy(&value, bytes.data() + pos, sizeof value);
  return value;
}

// The NUL-terminated string at `base + offset`; `what` ("entry 3: key") names it in errors.
Result<std::string> string_at(std::string_view bytes, uint64_t base, uint32_t offset, std::string_view what) {
  const uint64_t pos = base + offset;
  if (pos >= bytes.size()) {
    const std::string at = base == 0 ? std::string() : " (file offset " + std::to_string(pos) + ")";
    return fail(std::string(what) + " offset " + std::to_string(offset) + at + " outside the file (size " +
                std::to_string(bytes.size()) + ")");
  }
  // The NUL is looked for within the longest string allowed, not through the rest of the file.
  const auto window = bytes.substr(pos, k_max_string_length + 1);
  const auto nul = window.find('\0');
  if (nul == std::string_view::npos) {
    if (window.size() > k_max_string_length) {
      return fail(std::string(what) + " at file offset " + std::to_string(pos) + " is longer than " +
                  std::to_string(k_max_string_length) + " bytes (the limit for a path)");
    }
    return fail(std::string(what) + " at file offset " + std::to_string(pos) +
                " is not NUL-terminated within the file");
  }
  return std::string(window.substr(0, nul));
}

std::string entry_what(uint64_t index, std::string_view field) {
  return "entry " + std::to_string(index) + ": " + std::string(field);
}

// Counts `size` more decoded bytes, those of `what` ("entry 3"), against the limit for the whole cache.
Result<void> count_decoded(uint64_t size, std::string_view what, uint64_t& decoded) {
  decoded += size;
  if (decoded > k_max_decoded_bytes) {
    return fail(std::string(what) + ": the decoded keys and values exceed " +
                std::to_string(k_max_decoded_bytes) + " bytes (the limit for a whole cache)");
  }
  return {};
}

// Counts the strings of `entry` against the limit for the whole cache.
Result<void> count_decoded(const LdCacheEntry& entry, uint64_t index, uint64_t& decoded) {
  return count_decoded(entry.key.size() + entry.value.size(), "entry " + std::to_string(index), decoded);
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
  GPUCTK_TRY_ASSIGN(auto key,
                    string_at(bytes, strings, load<uint32_t>(bytes, at + 4), entry_what(index, "key")));
  GPUCTK_TRY_ASSIGN(auto value,
                    string_at(bytes, strings, load<uint32_t>(bytes, at + 8), entry_what(index, "value")));
  return LdCacheEntry{.key = std::move(key),
                      .value = std::move(value),
                      .flags = static_cast<uint32_t>(load<int32_t>(bytes, at)),
                      .osversion = 0,
                      .hwcap = 0};
}

std::string hex32(uint32_t value) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) {
    out.push_back(k_hex[(value >> shift) & 0xf]);
  }
  return out;
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

// The extension area of the new-format table whose header starts at `base` (see the top of this file).
Result<LdCacheExtensions> parse_extensions(std::string_view bytes, uint64_t base, uint64_t& decoded) {
  LdCacheExtensions extensions;
  const uint64_t at = load<uint32_t>(bytes, base + k_new_extension_at);
  if (at == 0) {
    return extensions;  // none (glibc < 2.33 left the field zero)
  }
  const std::string where = "extension directory at offset " + std::to_string(at);
  if (at % k_extension_alignment != 0) {
    return fail(where + " is not a multiple of 4");
  }
  if (at + k_extension_header_size > bytes.size()) {
    return fail(where + " outside the file (size " + std::to_string(bytes.size()) + ")");
  }
  const auto magic = load<uint32_t>(bytes, at);
  if (magic != k_extension_magic) {
    return fail(where + ": magic " + hex32(magic) + " instead of " + hex32(k_extension_magic));
  }
  const auto count = load<uint32_t>(bytes, at + 4);
  if (at + k_extension_header_size + count * k_extension_section_size > bytes.size()) {
    return fail(where + ": " + std::to_string(count) + " sections do not fit the file (size " +
                std::to_string(bytes.size()) + ")");
  }
  std::array<bool, 2> seen{};
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t section = at + k_extension_header_size + i * k_extension_section_size;
    const auto tag = load<uint32_t>(bytes, section);
    const uint64_t offset = load<uint32_t>(bytes, section + 8);
    const uint64_t size = load<uint32_t>(bytes, section + 12);
    const std::string what = "extension section " + std::to_string(i) + " (tag " + std::to_string(tag) + ")";
    if (offset + size > bytes.size()) {
      return fail(what + ": " + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                  " outside the file (size " + std::to_string(bytes.size()) + ")");
    }
    if (tag >= seen.size()) {
      continue;  // a tag this glibc does not know: ignored, as its loader does
    }
    if (seen[tag]) {
      return fail(what + ": the tag appears twice");
    }
    seen[tag] = true;
    if (tag == k_tag_generator) {
      if (size > k_max_generator_length) {
        return fail(what + ": a generator of " + std::to_string(size) + " bytes is longer than " +
                    std::to_string(k_max_generator_length) + " bytes");
      }
      const auto generator = bytes.substr(offset, size);
      if (generator.find('\0') != std::string_view::npos) {
        return fail(what + ": the generator contains a NUL byte");
      }
      GPUCTK_TRY(count_decoded(size, what, decoded));
      extensions.generator = std::string(generator);
      continue;
    }
    // k_tag_glibc_hwcaps. An empty section is no section (glibc's loader treats it so).
    if (offset % 4 != 0 || size % 4 != 0) {
      return fail(what + ": glibc-hwcaps section of " + std::to_string(size) + " bytes at offset " +
                  std::to_string(offset) + " is not 4-byte aligned");
    }
    if (size / 4 > k_max_hwcaps_subdirs) {
      return fail(what + ": " + std::to_string(size / 4) +
                  " glibc-hwcaps subdirectories exceed the limit of " + std::to_string(k_max_hwcaps_subdirs));
    }
    for (uint64_t j = 0; j < size / 4; ++j) {
      const std::string name_what = "glibc-hwcaps subdirectory " + std::to_string(j);
      GPUCTK_TRY_ASSIGN(auto name, string_at(bytes, base, load<uint32_t>(bytes, offset + 4 * j), name_what));
      GPUCTK_TRY(count_decoded(name.size(), name_what, decoded));
      extensions.hwcaps_subdirs.push_back(std::move(name));
    }
  }
  return extensions;
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
  LdCache cache{.format = format, .entries = {}, .extensions = {}};
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
  GPUCTK_TRY_ASSIGN(cache.extensions, parse_extensions(bytes, base, decoded));
  for (uint64_t i = 0; i < cache.entries.size(); ++i) {
    const auto index = cache.entries[i].glibc_hwcaps_index();
    if (index && *index >= cache.extensions.hwcaps_subdirs.size()) {
      return fail("entry " + std::to_string(i) + ": glibc-hwcaps index " + std::to_string(*index) +
                  " outside the " + std::to_string(cache.extensions.hwcaps_subdirs.size()) +
                  " glibc-hwcaps subdirectories");
    }
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
  LdCache cache{.format = LdCacheFormat::old_only, .entries = {}, .extensions = {}};
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

// ---- Writing -------------------------------------------------------------------------------------

template <class T>
void store(std::string& out, uint64_t pos, T value) {
  std::memcpy(out.data() + pos, &value, sizeof value);
}

// ldconfig's string-table order: by the bytes read backwards (unsigned), descending; of two strings one
// of which ends the other, the longer first. A strict order on distinct strings.
bool string_table_before(std::string_view left, std::string_view right) {
  const size_t common = std::min(left.size(), right.size());
  for (size_t i = 1; i <= common; ++i) {
    const auto l = static_cast<unsigned char>(left[left.size() - i]);
    const auto r = static_cast<unsigned char>(right[right.size() - i]);
    if (l != r) {
      return l > r;
    }
  }
  return left.size() > right.size();
}

// The string table of `strings` (any order, repeats allowed) as ldconfig lays it out, and each string's
// offset in it (same order as `strings`). Sorted so, equal strings are neighbours and share one place.
std::string string_table(const std::vector<std::string_view>& strings, std::vector<uint32_t>& offsets) {
  std::vector<size_t> order(strings.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return string_table_before(strings[a], strings[b]); });
  offsets.assign(strings.size(), 0);
  std::string table;
  for (size_t j = 0; j < order.size(); ++j) {
    const auto current = strings[order[j]];
    if (j > 0 && strings[order[j - 1]].ends_with(current)) {
      // The previous string again, or a tail of it: shares its bytes (and its NUL).
      const auto previous = strings[order[j - 1]];
      offsets[order[j]] = static_cast<uint32_t>(offsets[order[j - 1]] + previous.size() - current.size());
      continue;
    }
    offsets[order[j]] = static_cast<uint32_t>(table.size());
    table.append(current).push_back('\0');
  }
  return table;
}

// Checks one string the writer is given; `what` names it ("entry 3: key").
Result<void> check_string(std::string_view text, std::string_view what, uint64_t limit) {
  if (text.find('\0') != std::string_view::npos) {
    return fail(std::string(what) + " contains a NUL byte");
  }
  if (text.size() > limit) {
    return fail(std::string(what) + " is " + std::to_string(text.size()) + " bytes long, more than " +
                std::to_string(limit) + " (what parse_ld_cache reads back)");
  }
  return {};
}

// Everything serialize_ld_cache refuses, checked before a byte is written.
Result<void> check_writable(const LdCache& cache) {
  const auto& ext = cache.extensions;
  if (cache.entries.size() > k_max_entries) {
    return fail(std::to_string(cache.entries.size()) + " entries exceed the limit of " +
                std::to_string(k_max_entries));
  }
  if (ext.hwcaps_subdirs.size() > k_max_hwcaps_subdirs) {
    return fail(std::to_string(ext.hwcaps_subdirs.size()) +
                " glibc-hwcaps subdirectories exceed the limit of " + std::to_string(k_max_hwcaps_subdirs));
  }
  uint64_t decoded = 0;
  for (size_t i = 0; i < cache.entries.size(); ++i) {
    const auto& entry = cache.entries[i];
    GPUCTK_TRY(check_string(entry.key, entry_what(i, "key"), k_max_string_length));
    GPUCTK_TRY(check_string(entry.value, entry_what(i, "value"), k_max_string_length));
    GPUCTK_TRY(count_decoded(entry, i, decoded));
    const auto index = entry.glibc_hwcaps_index();
    if (index && *index >= ext.hwcaps_subdirs.size()) {
      return fail("entry " + std::to_string(i) + ": glibc-hwcaps index " + std::to_string(*index) +
                  " outside the " + std::to_string(ext.hwcaps_subdirs.size()) +
                  " glibc-hwcaps subdirectories");
    }
  }
  if (ext.generator) {
    GPUCTK_TRY(check_string(*ext.generator, "the generator", k_max_generator_length));
    GPUCTK_TRY(count_decoded(ext.generator->size(), "the generator", decoded));
  }
  for (size_t j = 0; j < ext.hwcaps_subdirs.size(); ++j) {
    const std::string what = "glibc-hwcaps subdirectory " + std::to_string(j);
    GPUCTK_TRY(check_string(ext.hwcaps_subdirs[j], what, k_max_string_length));
    GPUCTK_TRY(count_decoded(ext.hwcaps_subdirs[j].size(), what, decoded));
  }
  return {};
}

// Appends the extension area to `out`, which ends at the 4-byte boundary after the strings: the
// directory (generator section first, glibc-hwcaps second, each only when present), the glibc-hwcaps
// string offsets (`hwcaps_offsets`), the generator bytes. The order and offsets are ldconfig's.
void write_extensions(std::string& out, const LdCacheExtensions& ext,
                      const std::vector<uint32_t>& hwcaps_offsets) {
  const uint32_t sections = (ext.generator ? 1 : 0) + (ext.hwcaps_subdirs.empty() ? 0 : 1);
  const uint64_t directory = out.size();
  const uint64_t hwcaps_at = directory + k_extension_header_size + sections * k_extension_section_size;
  const uint64_t hwcaps_size = 4 * ext.hwcaps_subdirs.size();
  const uint64_t generator_at = hwcaps_at + hwcaps_size;
  const uint64_t generator_size = ext.generator ? ext.generator->size() : 0;
  out.resize(generator_at + generator_size);
  store(out, directory, k_extension_magic);
  store(out, directory + 4, sections);
  uint64_t section = directory + k_extension_header_size;
  const auto add_section = [&](uint32_t tag, uint64_t offset, uint64_t size) {
    store(out, section, tag);
    store(out, section + 4, uint32_t{0});
    store(out, section + 8, static_cast<uint32_t>(offset));
    store(out, section + 12, static_cast<uint32_t>(size));
    section += k_extension_section_size;
  };
  if (ext.generator) {
    add_section(k_tag_generator, generator_at, generator_size);
  }
  if (!ext.hwcaps_subdirs.empty()) {
    add_section(k_tag_glibc_hwcaps, hwcaps_at, hwcaps_size);
  }
  for (size_t j = 0; j < hwcaps_offsets.size(); ++j) {
    store(out, hwcaps_at + 4 * j, hwcaps_offsets[j]);
  }
  if (ext.generator) {
    std::memcpy(out.data() + generator_at, ext.generator->data(), generator_size);
  }
}

// The part of ldconfig's entry order below the name (see insert_ld_cache_entry): <0 when `a` goes first.
int entry_order(const LdCache& cache, const LdCacheEntry& a, const LdCacheEntry& b) {
  if (const int names = ld_cache_name_compare(b.key, a.key); names != 0) {
    return names;
  }
  const auto flags_a = static_cast<int32_t>(a.flags);
  const auto flags_b = static_cast<int32_t>(b.flags);
  if (flags_a != flags_b) {
    return flags_a > flags_b ? -1 : 1;
  }
  const auto index_a = a.glibc_hwcaps_index();
  const auto index_b = b.glibc_hwcaps_index();
  if (index_a.has_value() != index_b.has_value()) {
    return index_a ? -1 : 1;
  }
  if (index_a) {
    // By subdirectory name; an index with no name (an invalid cache) after every name, by index.
    const auto& names = cache.extensions.hwcaps_subdirs;
    const bool named_a = *index_a < names.size();
    const bool named_b = *index_b < names.size();
    if (named_a && named_b) {
      const int cmp = names[*index_a].compare(names[*index_b]);
      return cmp < 0 ? -1 : (cmp > 0 ? 1 : 0);
    }
    if (named_a != named_b) {
      return named_a ? -1 : 1;
    }
    return *index_a < *index_b ? -1 : (*index_a > *index_b ? 1 : 0);
  }
  const int bits_a = std::popcount(a.hwcap);
  const int bits_b = std::popcount(b.hwcap);
  if (bits_a != bits_b) {
    return bits_a > bits_b ? -1 : 1;
  }
  if (a.hwcap != b.hwcap) {
    return a.hwcap > b.hwcap ? -1 : 1;
  }
  return 0;
}

}  // namespace

std::optional<uint32_t> LdCacheEntry::glibc_hwcaps_index() const {
  if (((hwcap >> 32) & ~k_hwcap_isa_level_mask) != (k_hwcap_extension >> 32)) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(hwcap);
}

int ld_cache_name_compare(std::string_view a, std::string_view b) {
  // As C reads the two strings: the first NUL (or the end) ends each; `char` keeps the host's sign.
  const auto at = [](std::string_view s, size_t i) { return i < s.size() ? s[i] : '\0'; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0;
  size_t j = 0;
  while (at(a, i) != '\0') {
    if (digit(at(a, i))) {
      if (!digit(at(b, j))) {
        return 1;
      }
      // Numbers as glibc computes them in an int; unsigned here, so that a long run wraps as it does there.
      uint32_t value_a = 0;
      uint32_t value_b = 0;
      for (; digit(at(a, i)); ++i) {
        value_a = value_a * 10 + static_cast<uint32_t>(at(a, i) - '0');
      }
      for (; digit(at(b, j)); ++j) {
        value_b = value_b * 10 + static_cast<uint32_t>(at(b, j) - '0');
      }
      if (value_a != value_b) {
        return static_cast<int32_t>(value_a - value_b);
      }
    } else if (digit(at(b, j))) {
      return -1;
    } else if (at(a, i) != at(b, j)) {
      return static_cast<int>(at(a, i)) - static_cast<int>(at(b, j));
    } else {
      ++i;
      ++j;
    }
  }
  return static_cast<int>(at(a, i)) - static_cast<int>(at(b, j));
}

void insert_ld_cache_entry(LdCache& cache, LdCacheEntry entry) {
  auto it = cache.entries.begin();
  while (it != cache.entries.end() && entry_order(cache, *it, entry) <= 0) {
    ++it;
  }
  cache.entries.insert(it, std::move(entry));
}

Result<std::string> serialize_ld_cache(const LdCache& cache) {
  if (auto ok = check_writable(cache); !ok) {
    return fail_with("ld.so.cache", ok.error());
  }
  const auto& ext = cache.extensions;
  // Every string the file refers to: entry i's key at 2i, its value at 2i + 1, then the glibc-hwcaps names.
  std::vector<std::string_view> strings;
  strings.reserve(2 * cache.entries.size() + ext.hwcaps_subdirs.size());
  for (const auto& entry : cache.entries) {
    strings.push_back(entry.key);
    strings.push_back(entry.value);
  }
  for (const auto& name : ext.hwcaps_subdirs) {
    strings.push_back(name);
  }
  std::vector<uint32_t> offsets;
  const std::string table = string_table(strings, offsets);
  const size_t hwcaps_first = 2 * cache.entries.size();

  const uint64_t strings_start = k_new_header_size + k_new_entry_size * cache.entries.size();
  std::string out(strings_start, '\0');
  std::memcpy(out.data(), k_new_magic.data(), k_new_magic.size());
  store(out, k_new_nlibs_at, static_cast<uint32_t>(cache.entries.size()));
  store(out, k_new_len_strings_at, static_cast<uint32_t>(table.size()));
  store(out, k_new_flags_at, std::endian::native == std::endian::little ? k_endian_little : k_endian_big);
  for (size_t i = 0; i < cache.entries.size(); ++i) {
    const auto& entry = cache.entries[i];
    const uint64_t at = k_new_header_size + i * k_new_entry_size;
    store(out, at, entry.flags);
    store(out, at + 4, static_cast<uint32_t>(strings_start + offsets[2 * i]));
    store(out, at + 8, static_cast<uint32_t>(strings_start + offsets[2 * i + 1]));
    store(out, at + 12, entry.osversion);
    store(out, at + 16, entry.hwcap);
  }
  out += table;
  if (ext.generator || !ext.hwcaps_subdirs.empty()) {
    out.resize((out.size() + k_extension_alignment - 1) & ~(k_extension_alignment - 1), '\0');
    store(out, k_new_extension_at, static_cast<uint32_t>(out.size()));
    std::vector<uint32_t> hwcaps_offsets;
    for (size_t j = hwcaps_first; j < strings.size(); ++j) {
      hwcaps_offsets.push_back(static_cast<uint32_t>(strings_start + offsets[j]));
    }
    write_extensions(out, ext, hwcaps_offsets);
  }
  if (out.size() > k_max_file_size) {
    return fail("ld.so.cache: " + std::to_string(out.size()) + " bytes exceed the limit of " +
                std::to_string(k_max_file_size) + " for a cache file");
  }
  return out;
}

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

}  // namespace gpuctk::ldcache
