#pragma once
// The few filesystem questions discovery asks of a host tree, all relative to a root directory
// (the driver root or the dev root). Missing paths are answers, not errors.

#include <sys/stat.h>

#include <expected>
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

// lstat(2) of `path`; nothing when it does not exist (ENOENT, ENOTDIR). Any other failure is an error
// with its errno text ("lstat /dev/nvidia0: Permission denied"): unreachable is not missing.
Result<std::optional<struct stat>> lstat_path(const std::string& path);

// stat(2) of `path` (symlinks followed); as lstat_path.
Result<std::optional<struct stat>> stat_path(const std::string& path);

struct DirEntry {
  std::string name;
  unsigned char type;  // DT_* from readdir (DT_UNKNOWN resolved with lstat)
};

// The entries of directory `path` (without "." and ".."), sorted by name. A missing directory is an
// empty list; any other failure (EACCES, ENOTDIR on a component) is an error naming the path.
Result<std::vector<DirEntry>> list_dir(const std::string& path);

// The target of symlink `path`, verbatim; nothing if `path` is not a symlink.
std::optional<std::string> read_link(const std::string& path);

// Why a path has no host path inside a root (see resolve_in_host_root_strict).
struct Unresolved {
  enum class Reason {
    missing,     // a component does not exist (ENOENT, ENOTDIR)
    unreadable,  // lstat or readlink failed otherwise (`error`, e.g. EACCES)
    escapes,     // ".." (in the path or in a link's target) climbs above a root other than "/"
    loop,        // more than 40 links
  };
  Reason reason = Reason::missing;
  // The link whose target the failing component came from, as a host path, and that target verbatim;
  // both empty when the component came from `path` itself. A missing component with a link here is a
  // dangling link; one without is a plain absence.
  std::string link;
  std::string target;
  std::string failed;  // the host path whose lstat or readlink failed (unreadable only)
  int error = 0;       // its errno (unreadable only)
};

// One line for a path that did not resolve: "<root>/etc/x.json -> /etc/shadow: no such file inside
// <root>", "<root>/etc/x.json -> ../../../etc/shadow: leads out of <root>",
// "<root>/etc/x.json: lstat <root>/etc: Permission denied". Empty for a plain absence (nothing to say).
std::string describe_unresolved(std::string_view root, std::string_view path, const Unresolved& why);

// Resolves `path` (absolute, inside `root`) to the host path it names, following symlinks as if `root`
// were "/": absolute link targets restart at `root`. ".." that would climb above a root other than "/"
// (in `path` or in a link target) is refused, not clamped: no driver tree needs it, and a link that tries
// it is hostile or broken. Nothing if a component is missing or unreadable, the chain is longer than 40
// links, or it escapes. Used for every file discovery takes from a driver root such as
// /run/nvidia/driver, whose absolute links point inside the driver root.
// Trust: one of gpuctk's three resolvers (the others: install::resolve_in_node_root_clamped, and
// rootfs/in_root.hpp's fd walk). This one trusts that the tree does not change under it (the answer is a
// string the kernel resolves again later), so it is only for host trees that root owns: a driver root, a
// dev root. It does not trust the tree's links (a driver container's): one that leads out is refused.
// Never for a container's root, which is hostile and changes: that is rootfs/in_root.hpp's alone.
std::optional<std::string> resolve_in_host_root_strict(std::string_view root, std::string_view path);

// resolve_in_host_root_strict for many paths in one root: a directory it has once found to be a real
// directory (not a link) is not examined again, so the prefix that library paths share costs one lstat, not
// one per path. For the span of one discovery pass, which reads the host as a snapshot anyway.
class RootResolver {
 public:
  explicit RootResolver(std::string_view root);
  std::optional<std::string> resolve(std::string_view path);
  // resolve() with the reason when there is no answer.
  std::expected<std::string, Unresolved> resolve_or_why(std::string_view path);
  // The root as given to the constructor, without a trailing slash; "/" for the host's root.
  [[nodiscard]] std::string root() const { return m_root.empty() ? std::string("/") : m_root; }

 private:
  std::string m_root;                      // without a trailing slash; "" for "/"
  std::unordered_set<std::string> m_dirs;  // host paths seen to be real directories
};

}  // namespace gpuctk::discover
