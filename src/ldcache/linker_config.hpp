#pragma once
// Reading an image's dynamic linker configuration inside its root: glibc's /etc/ld.so.conf with its
// `include`s expanded as glibc's ldconfig expands them, and musl's path file. Everything here is the
// image's, so hostile: paths resolve inside the root only, every file, count and size is bounded, and a
// configuration file that is neither a regular file nor a directory (a FIFO that would block ldconfig
// forever, a device) is an error. Knows nothing of GPUs.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rootfs/in_root.hpp"
#include "util/error.hpp"

namespace gpuctk::ldcache {

// Bounds on an image's linker configuration (a Debian or Ubuntu image has three files of under 200
// bytes). Beyond them update-ldcache fails with one line instead of reading on.
inline constexpr size_t k_max_conf_files = 256;      // files ldconfig opens for an ld.so.conf
inline constexpr size_t k_max_conf_size = 64 << 10;  // bytes of one configuration or path file
inline constexpr size_t k_max_conf_dirs = 4096;      // directory lines of all of them together
inline constexpr size_t k_max_glob_entries = 65536;  // directory entries the include patterns scan

// The lines of one ld.so.conf file that mean something, in order, as glibc's ldconfig reads them: from
// '#' on a line is a comment; leading blanks go; "include" and a blank start a list of glob patterns
// separated by blanks (one entry each); "hwcap" and a blank (any case) is a directive ldconfig ignores;
// any other non-empty line is one directory (blanks inside it included), "=TYPE" cut off and trailing
// blanks and slashes removed ("/" alone names nothing).
enum class LdSoConfKind { directory, include };
struct LdSoConfEntry {
  LdSoConfKind kind;
  std::string value;
  bool operator==(const LdSoConfEntry&) const = default;
};
std::vector<LdSoConfEntry> parse_ld_so_conf(std::string_view text);

// The library directories the image's configuration file `conf` (its /etc/ld.so.conf) names, in the
// order ldconfig meets them, with every include expanded where it stands: a relative pattern is relative
// to the directory of the file naming it; patterns are glob(3)'s (`*`, `?`, `[...]`, backslash escapes;
// a leading '.' matched only by a '.'), matched inside the root and sorted bytewise, as ldconfig's C
// collation sorts them. Each file is read once however often it is included, but counted as often as
// ldconfig opens it. Files whose identity is one of `skip` are left out. A missing file, a dangling link
// or a directory names nothing, as for ldconfig; a relative directory line is relative to "/".
// Errors, prefixed with "the image's linker configuration: ": the bounds above, a file that is not a
// regular file, and an include loop ("\"/etc/a.conf\" is included while it is read (an include loop)"),
// on which glibc's ldconfig recurses until it runs out of file descriptors or for ever, and a spent
// `budget` (every file and folder it opens, every byte and directory entry it reads is spent from it).
// `files`, when given, gets the path of every regular file read, once each, in the order read.
Result<std::vector<std::string>> configured_library_dirs(const rootfs::Root& root, std::string_view conf,
                                                         std::span<const rootfs::FileId> skip,
                                                         rootfs::ImageBudget& budget,
                                                         std::vector<std::string>* files = nullptr);

// The directories of musl's path file text: separated by ':' or newlines, empty ones skipped, nothing
// after a NUL byte (musl reads the file as one C string). Blanks are part of a directory, as for musl.
std::vector<std::string_view> parse_musl_path(std::string_view text);

}  // namespace gpuctk::ldcache
