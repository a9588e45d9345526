#pragma once
// The few filesystem questions discovery asks of a host tree, all relative to a root directory
// (the driver root or the dev root). Missing paths are answers, not errors.

#include <sys/stat.h>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::discover {

// `root` + `path` for an absolute `path`; a root of "/" or "" adds nothing.
std::string under_root(std::string_view root, std::string_view path);

// `path` with the `root` prefix removed (the container path of a host path); `path` itself when it does
// not start with `root`.
std::string strip_root(std::string_view root, std::string_view path);

// lstat(2) of `path`; nothing when it does not exist or cannot be reached.
std::optional<struct stat> lstat_path(const std::string& path);

// stat(2) of `path` (symlinks followed); nothing when it does not exist or cannot be reached.
std::optional<struct stat> stat_path(const std::string& path);

struct DirEntry {
  std::string name;
  unsigned char type;  // DT_* from readdir (DT_UNKNOWN resolved with lstat)
};

// The entries of directory `path` (without "." and ".."), sorted by name. A missing directory is an
// empty list; any other failure (EACCES, ENOTDIR on a component) is an error naming the path.
Result<std::vector<DirEntry>> list_dir(const std::string& path);

// The target of symlink `path`, verbatim; nothing if `path` is not a symlink.
std::optional<std::string> read_link(const std::string& path);

// Resolves `path` (absolute, inside `root`) to the host path it names, following symlinks as if `root`
// were "/": absolute link targets restart at `root`, ".." never climbs above it. Nothing if a component is
// missing or the chain is longer than 40 links. Used for ld.so.cache values and library links of driver
// roots such as /run/nvidia/driver, whose absolute links point inside the driver root.
std::optional<std::string> resolve_in_root(std::string_view root, std::string_view path);

// resolve_in_root for many paths in one root: a directory it has once found to be a real directory (not
// a link) is not examined again, so the prefix that library paths share costs one lstat, not one per
// path. For the span of one discovery pass, which reads the host as a snapshot anyway.
class RootResolver {
 public:
  explicit RootResolver(std::string_view root);
  std::optional<std::string> resolve(std::string_view path);

 private:
  std::string m_root;                      // without a trailing slash; "" for "/"
  std::unordered_set<std::string> m_dirs;  // host paths seen to be real directories
};

}  // namespace gpuctk::discover
