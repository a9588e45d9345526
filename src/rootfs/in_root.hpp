#pragma once
// Safe file operations inside a container's root filesystem. Knows nothing of GPUs.
//
// Everything under a container root is attacker-controlled: any directory may be a symlink to "/", to
// "../../..", to a host directory or to /proc/self/root, and may be swapped while we work. So a path
// inside the root is never handed to the kernel as a host path string. Each path is resolved from an
// O_PATH fd of the root, with the root acting as "/" for absolute symlinks and ".." (clamped there):
//   - openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) where the kernel has it (Linux >= 5.6);
//   - else a component-by-component walk: every component opened with O_NOFOLLOW from the fd of its
//     parent, symlinks read with readlinkat and expanded by us inside the root (a magic link's text,
//     e.g. "/" for /proc/self/root, is then just a path inside the root), ".." popped from our own
//     stack of directory fds, never looked up by the kernel.
// The last component of a path that is created or replaced is never followed: files are created with
// O_EXCL | O_NOFOLLOW under a temporary name and renamed into place inside the resolved parent.
//
// Container paths given to these functions must be absolute, without "." or ".." components: a spec
// or argument that names "/a/../b" is refused, since no legitimate caller writes one.

#include <sys/types.h>

#include <compare>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rootfs/image_budget.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::rootfs {

// How paths are resolved. `automatic` uses openat2 when the kernel has it; `walk` forces the portable
// walk (tests run every case both ways).
enum class Resolver { automatic, walk };

// Whether the last component of a path may be a symlink that is followed (inside the root).
enum class FollowLast { yes, no };

// An open container root: an O_PATH directory fd and the host path it was opened from (for messages).
class Root {
 public:
  // Opens `host_path` (absolute, an existing directory). Refuses "/" or anything that is the host's root
  // directory ("container root \"/\": refusing the host's root"; a hook must never treat the host's own
  // root as a container's) and a relative or empty path ("container root \"\": not an absolute path").
  static Result<Root> open(const std::string& host_path, Resolver resolver = Resolver::automatic);

  [[nodiscard]] int fd() const { return m_fd.get(); }
  [[nodiscard]] const std::string& path() const { return m_path; }
  [[nodiscard]] Resolver resolver() const { return m_resolver; }

 private:
  UniqueFd m_fd;
  std::string m_path;
  Resolver m_resolver = Resolver::automatic;
};

// The components of a container path: "/usr/lib/x" -> {"usr", "lib", "x"}; "/" -> {}. Empty
// components ("//") are skipped. Errors: not absolute, or a "." or ".." component, or longer than PATH_MAX.
Result<std::vector<std::string_view>> split_container_path(std::string_view path);

// `path` resolved inside `root` and opened with `flags` (O_CLOEXEC is always added). With
// FollowLast::no and a symlink as the last component, an O_PATH open returns the link itself and any
// other open fails with ELOOP. Errors name the container path and the root:
// "/etc/x in container root /b/rootfs: No such file or directory".
// Trust: none. Of gpuctk's three resolvers (discover::resolve_in_host_root_strict and
// install::resolve_in_node_root_clamped resolve trusted host trees to a string), this is the one for a
// tree someone else controls and may change while gpuctk works: a container's root.
Result<UniqueFd> open_in_root(const Root& root, std::string_view path, int flags, FollowLast follow);

// `path`, as the image names it, opened inside `root` (O_CLOEXEC added) the way a program whose root
// directory is the container root and whose working directory is "/" opens it (ldconfig in its
// sandbox): a relative path starts at "/", "." and ".." are allowed, and the whole path is ONE
// resolution, as the kernel makes it (openat2 with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, or the walk
// above): at most 40 symlinks for the whole path (a 41st is ELOOP), ".." the parent of the directory
// reached so far (after the links that led there; ".." of "/" is "/"), an absolute link from the root,
// nothing ever outside it. Spends one resolution and the path's components of `budget` (the walk: also
// every component of every link it expands). Errors: a spent budget (its line), a path with a NUL byte
// or longer than PATH_MAX, else open_in_root's, naming `path`. Trust: none, as open_in_root.
Result<UniqueFd> open_image_path(const Root& root, std::string_view path, int flags, ImageBudget& budget);

// The directory `dir` inside `root`, created (with `mode`, and any missing parents) as needed; returns
// an O_PATH directory fd. An existing non-directory, or a dangling symlink, is an error.
Result<UniqueFd> make_dirs(const Root& root, std::string_view dir, mode_t mode);

// `path` split into its parent directory ("/" for a top-level name) and its last component (empty for
// "/" itself: callers say what the root means to them); an error for an invalid container path.
struct PathParts {
  std::string dir;
  std::string name;
};
Result<PathParts> split_parent(std::string_view path);

// The parent directory of `path` (created as needed with `mode`) and the last component's name.
struct Parent {
  UniqueFd dir;      // O_PATH directory fd, usable as the dirfd of *at() calls
  std::string name;  // the last component; never "", "." or ".."
};
Result<Parent> open_parent(const Root& root, std::string_view path, mode_t dir_mode);

// Replaces the file at `path` with `content` (mode `mode`) atomically: a temporary file created with
// O_EXCL | O_NOFOLLOW beside it, then renamed over it. A symlink, a device node, a FIFO or a socket at
// `path` is replaced, never followed nor opened; a directory there is an error. A regular file that
// already holds `content` with `mode` is left alone. No fsync: the file lives as long as the container.
// On error nothing is left behind.
Result<void> write_file(const Root& root, std::string_view path, std::string_view content, mode_t mode);

// Removes the file `path` inside `root` (never following a symlink as its last component). Missing is fine.
Result<void> remove_file(const Root& root, std::string_view path);

// What identifies a file or directory of an image: two paths to one directory are one directory.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  auto operator<=>(const FileId&) const = default;
};

// The identity of the directory `path` (open_image_path, following links), or nullopt when there is no
// directory there or `budget` is spent (the caller asks budget.error() before it decides on nullopt).
std::optional<FileId> directory_id(const Root& root, std::string_view path, ImageBudget& budget);

// One file of the image read for its configuration, with open_image_path.
enum class FileKind { missing, directory, regular };
struct ImageFile {
  FileKind kind = FileKind::missing;  // missing: nothing there, a dangling link, a link loop
  std::string text;                   // a regular file's bytes
  FileId id;                          // a regular file's or directory's identity
};
// Reads the regular file `path` (at most `max_size` bytes) without opening anything else: the type is
// checked on an O_PATH fd first; its size is spent from `budget`. Errors: "/etc/x.conf in container root
// /r: not a regular file" (a FIFO, a device, a socket), "read /etc/x.conf in container root /r: larger
// than 65536 bytes", a spent budget.
Result<ImageFile> read_image_file(const Root& root, std::string_view path, size_t max_size,
                                  ImageBudget& budget);

// What create_symlink did.
enum class LinkResult { created, unchanged };

// Makes `link` a symlink whose text is exactly `target` (stored verbatim, never resolved). A link that
// already reads `target` is left alone; anything else at `link` that is not a directory is replaced
// atomically (temporary link + rename); parent directories are created with mode 0755.
Result<LinkResult> create_symlink(const Root& root, std::string_view target, std::string_view link);

// create_symlink for many links, each parent directory resolved once; returns how many were created
// or replaced. Stops at the first error (links made before it stay: each is complete on its own).
struct LinkSpec {
  std::string_view target;
  std::string_view link;
};
Result<size_t> create_symlinks(const Root& root, std::span<const LinkSpec> links);

// A name for a temporary file beside `name`: ".<name>.gpuctk-<random>".
std::string temporary_name(std::string_view name);

}  // namespace gpuctk::rootfs
