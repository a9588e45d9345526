#pragma once
// /proc/<pid>/mountinfo (proc(5)): the one parser of it, bounded, for the cgroup reader, the live-mount
// checks and the ldconfig sandbox. A line is
//   ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL-FIELDS...] - FSTYPE SOURCE SUPER-OPTIONS
// with space, tab, newline and backslash in the paths written as octal escapes (\040, \011, \012, \134).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk {

// Bounds: a whole table (thousands of mounts on a busy node are a few MiB) and one line (a path of
// PATH_MAX bytes, every byte escaped, is 16 KiB).
inline constexpr size_t k_max_mountinfo_size = size_t{64} << 20;
inline constexpr size_t k_max_mountinfo_line = size_t{64} << 10;

struct MountInfo {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  std::string root;           // the directory of the filesystem the mount shows ("/" for all of it)
  std::string mount_point;    // where, in the reader's mount namespace
  std::string peer_group;     // N of an optional field "shared:N"; "" when the mount is not shared
  std::string fstype;         // "cgroup2", "proc", ...
  std::string super_options;  // "rw,devices"
  bool operator==(const MountInfo&) const = default;
};

// The mounts of `text`, in its order; `name` ("/proc/self/mountinfo") starts every error:
//   <name>: larger than 67108864 bytes
//   <name> line 3: longer than 65536 bytes
//   <name> line 3: not a mountinfo line: "garbage"     (too few fields, or an empty path, fstype or
//                                                        super options)
//   <name> line 3: bad mount id in "x22 1 0:21 / /proc rw - proc proc rw"
// Empty lines are skipped.
Result<std::vector<MountInfo>> parse_mountinfo(std::string_view text, std::string_view name);

// A path field with its octal escapes (a backslash and exactly three octal digits) decoded; anything
// else is kept as written.
std::string unescape_mountinfo(std::string_view field);

}  // namespace gpuctk
