#pragma once
// glibc's dynamic linker cache (/etc/ld.so.cache): which SONAME lives at which path, per architecture.
// The binary layout is described at the top of cache_file.cpp.
//
// Contract: parse_ld_cache() accepts the three layouts ldconfig writes (new, old, and old+new
// "compat"); every count and offset is checked against the input size, so any byte string gives
// either a cache or an Error, never undefined behaviour. The cache is read in the host's byte order
// (ld.so.cache is always written native-endian; all our targets are little-endian); a cache whose
// header says it was written for the other byte order is rejected.
//
// Writing: serialize_ld_cache() writes the new layout only (whatever `format` says; a parsed old or
// compat cache comes back as a new-format file with the same entries), byte for byte as glibc's
// ldconfig (2.33 and later, checked against 2.36) writes the same entries and extensions.
// insert_ld_cache_entry() puts an entry where ldconfig would, so a cache built entry by entry in
// ldconfig's configuration order serializes to ldconfig's file.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::ldcache {

// How a cache starts: the new format's magic and version, and the old format's (a compat cache starts
// with the old table).
inline constexpr std::string_view k_new_format_magic = "glibc-ld.so.cache1.1";
inline constexpr std::string_view k_old_format_magic = "ld.so-1.7.0";

// The bit of an entry's hwcap that marks a glibc-hwcaps entry (DL_CACHE_HWCAP_EXTENSION); its low 32 bits
// index the glibc-hwcaps subdirectories (LdCacheEntry::glibc_hwcaps_index).
inline constexpr uint64_t k_hwcap_extension = uint64_t{1} << 62;

// Architecture of an entry: the bits of `flags & 0xff00`, as glibc's ldconfig sets them.
// A value outside this list can still occur in a cache (a newer glibc); it is kept as is.
enum class Arch : uint32_t {
  i386 = 0x0000,                // no arch bits: 32-bit x86 (and every arch without a 64-bit flag)
  sparc64 = 0x0100,             // SPARC 64-bit
  ia64 = 0x0200,                // Itanium
  x86_64 = 0x0300,              // x86-64
  s390x = 0x0400,               // s390 64-bit
  ppc64 = 0x0500,               // POWER 64-bit (ppc64 and ppc64le)
  mips64_n32 = 0x0600,          // MIPS64 n32 ABI
  mips64_n64 = 0x0700,          // MIPS64 n64 ABI
  x32 = 0x0800,                 // x86-64 x32 ABI
  armhf = 0x0900,               // 32-bit ARM, hard-float
  aarch64 = 0x0a00,             // 64-bit ARM
  armel = 0x0b00,               // 32-bit ARM, soft-float
  mips32_nan2008 = 0x0c00,      // MIPS o32, NaN-2008
  mips64_n32_nan2008 = 0x0d00,  // MIPS64 n32, NaN-2008
  mips64_n64_nan2008 = 0x0e00,  // MIPS64 n64, NaN-2008
  riscv_soft = 0x0f00,          // RISC-V, soft-float ABI
  riscv_double = 0x1000,        // RISC-V, double-float ABI (lp64d)
  loongarch_soft = 0x1100,      // LoongArch, soft-float ABI
  loongarch_double = 0x1200,    // LoongArch, double-float ABI
};

// Kind of library: the bits of `flags & 0x00ff`.
enum class LibType : uint32_t {
  libc4 = 0,      // a.out libc4 (historic)
  elf = 1,        // ELF, libc unknown
  elf_libc5 = 2,  // ELF linked against libc5 (historic)
  elf_libc6 = 3,  // ELF linked against glibc: the only kind we use
};

// Which layout the file had.
enum class LdCacheFormat {
  old_only,  // "ld.so-1.7.0" table alone (legacy)
  new_only,  // "glibc-ld.so.cache1.1" alone (glibc >= 2.32 default)
  compat,    // old table followed by the new one; the entries come from the new table
};

struct LdCacheEntry {
  std::string key;         // the SONAME, e.g. "libcuda.so.1"
  std::string value;       // the path, e.g. "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  uint32_t flags = 0;      // LibType | Arch
  uint32_t osversion = 0;  // minimum kernel version (new table only; 0 otherwise)
  uint64_t hwcap = 0;      // hardware-capability bits (new table only); non-zero for glibc-hwcaps
                           // and legacy hwcap subdirectory entries

  [[nodiscard]] Arch arch() const { return static_cast<Arch>(flags & 0xff00u); }
  [[nodiscard]] LibType type() const { return static_cast<LibType>(flags & 0x00ffu); }
  // For an entry of a glibc-hwcaps subdirectory (bit 62 of hwcap set, and of the upper 32 bits nothing
  // else but the 10 ISA-level bits, as glibc's loader tests it): the index of its subdirectory in
  // LdCacheExtensions::hwcaps_subdirs (the low 32 bits of hwcap). Nothing for every other entry.
  [[nodiscard]] std::optional<uint32_t> glibc_hwcaps_index() const;
  bool operator==(const LdCacheEntry&) const = default;
};

// What follows the string table in a new-format cache written by glibc >= 2.33 (none in older ones,
// none in the old format). Only the two tags glibc defines are kept: a section with another tag is
// checked to lie within the file and then ignored, as glibc's loader ignores it, so it is not written
// back by serialize_ld_cache().
struct LdCacheExtensions {
  // Tag 0: who wrote the file, e.g. "ldconfig (GNU libc) stable release version 2.36" (stored without a
  // NUL; one containing a NUL byte is refused).
  std::optional<std::string> generator;
  // Tag 1: glibc-hwcaps subdirectory names ("x86-64-v3"); an entry's glibc_hwcaps_index() indexes this.
  // ldconfig lists them sorted by strcmp and only those some entry uses; a parsed file keeps its order.
  std::vector<std::string> hwcaps_subdirs;
  bool operator==(const LdCacheExtensions&) const = default;
};

struct LdCache {
  LdCacheFormat format = LdCacheFormat::new_only;
  std::vector<LdCacheEntry> entries;  // in file order (ldconfig sorts them; we keep its order)
  LdCacheExtensions extensions;       // empty for old-format files and new ones without the area

  // The entries of `arch` that are ELF libc6 libraries, in file order.
  [[nodiscard]] std::vector<LdCacheEntry> libc6_entries(Arch arch) const;
  bool operator==(const LdCache&) const = default;
};

// The enumerator's name ("x86_64", "aarch64", "armhf", …); "arch 0x1300" for values not listed.
std::string arch_name(Arch arch);

// The architecture whose libraries this build of gpuctk loads, or nothing on an unlisted target.
std::optional<Arch> native_arch();

// The 32-bit architecture that runs beside `native` (x86_64 -> i386, aarch64 -> armhf), if any.
std::optional<Arch> compat32_arch(Arch native);

// Parses the bytes of an ld.so.cache. Errors start with "ld.so.cache: " and say what is wrong and
// where, e.g. "ld.so.cache: entry 12: key offset 99999 outside the file (size 4096)". Entries are
// numbered from 0 in table order. What a cache may decode to is bounded, each bound with its own error:
// a key or value longer than 4096 bytes (PATH_MAX), more than 131072 entries, more than 32 MiB of keys
// and values together (glibc-hwcaps names and the generator count too), a generator longer than 4096
// bytes, more than 4096 glibc-hwcaps subdirectories. The extension area is checked as glibc's loader
// checks it (offset a multiple of 4, directory magic, every section inside the file), and more strictly:
// a glibc-hwcaps section that is misaligned or not a multiple of 4 bytes long, a known tag twice, a
// generator with a NUL byte, and an entry whose glibc_hwcaps_index() is not below the number of
// subdirectories are errors (glibc would ignore the section or the entry; we would rather not guess).
// In a compat file the glibc-hwcaps names are read relative to the new header, where ldconfig writes
// them (glibc 2.36's loader reads them relative to the file start, which only agrees for new files).
Result<LdCache> parse_ld_cache(std::string_view bytes);

// glibc's order of library names (_dl_cache_libcmp): runs of ASCII digits compare as numbers (as glibc
// computes them: 32-bit, wrapping), a digit sorts after any other byte, other bytes compare as `char`
// (signed on x86, as in the ldconfig of the same host), and a string ends at its first NUL. Returns <0,
// 0 or >0. So "libfoo.so.10" > "libfoo.so.9" and "libfoo2" < "libfoo10".
int ld_cache_name_compare(std::string_view a, std::string_view b);

// Inserts `entry` into `cache.entries` where glibc's ldconfig puts it: by key descending
// (ld_cache_name_compare), then flags descending (as a signed 32-bit number), then glibc-hwcaps entries
// before the others, those by subdirectory name (strcmp; the name is looked up in
// cache.extensions.hwcaps_subdirs; an index outside it sorts after every name, by index) and
// otherwise unordered (ldconfig does not compare their ISA level), the others by the number of hwcap
// bits set, then hwcap, both descending; and after every entry it compares equal to (ldconfig inserts in
// configuration order and the loader takes the first match). Assumes `cache.entries` is in this order.
void insert_ld_cache_entry(LdCache& cache, LdCacheEntry entry);

// The bytes of `cache` in the new layout, as glibc's ldconfig writes the same entries and extensions:
// header flags "little-endian" (the host's order), osversion and hwcap as given, the entries in
// `cache.entries` order (keep them sorted with insert_ld_cache_entry), the string table holding every
// key, value and glibc-hwcaps name once, ordered and tail-shared as ldconfig's string table does it, and
// the extension area (see cache_file.cpp) when there is a generator or a glibc-hwcaps name. Not
// reproduced: a glibc-hwcaps directory ldconfig found but took no library from (its name is in
// ldconfig's string table, unused, and nowhere else in the file); a caller that must match ldconfig
// byte for byte checks that serialize_ld_cache(parse_ld_cache(file)) is `file` first. Errors start with
// "ld.so.cache: " and name the entry or field: a string containing a NUL byte, an entry whose
// glibc_hwcaps_index() is outside extensions.hwcaps_subdirs, and anything parse_ld_cache() would refuse to
// read back (its bounds above).
Result<std::string> serialize_ld_cache(const LdCache& cache);

// Reads and parses the cache at `path`, a regular file of at most 64 MiB whose last component is not
// followed (resolve it inside its root first); errors start with the path instead of "ld.so.cache".
Result<LdCache> read_ld_cache(const std::string& path);

}  // namespace gpuctk::ldcache
