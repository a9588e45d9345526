#pragma once
// Changing a container that already exists: its mount namespace entered, host files bind-mounted and
// device nodes created inside its root. Used by the prestart hook. Knows nothing of GPUs.
//
// Order of work and why:
//  1. Everything taken from the host is opened first, in the caller's (the runtime's) mount namespace:
//     each source becomes a detached copy of its mount (open_tree OPEN_TREE_CLONE) with its flags
//     (read-only, nosuid, nodev, noexec) set before it is attached anywhere, so it is never visible
//     writable and no host path is looked up from inside the container's namespace.
//  2. enter_mount_namespace(process, host root): setns into the container's mount namespace, and a check
//     that its root is still the host's (no pivot_root yet), so that host paths mean the host's files.
//     The process must be single-threaded (gpuctk is: NVML is never loaded on this path).
//  3. Each target is resolved inside the container root (rootfs/in_root.hpp: the image cannot redirect
//     it out of the root), the mount point created if missing, and the copy attached there by fd
//     (move_mount), never through a path string.
// A mount is only ever made inside the container's namespace. To make sure it stays there, a mount point
// whose mount is shared (it has peers, e.g. a root with rootfsPropagation "shared") is refused: a mount
// made there would propagate to the peers, which may be in the host's namespace.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rootfs/in_root.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/process.hpp"

namespace gpuctk::rootfs {

// How a bind mount is made, from OCI/CDI mount options.
struct BindOptions {
  bool recursive = false;   // "rbind"
  uint64_t attributes = 0;  // MOUNT_ATTR_* to set: RDONLY, NOSUID, NODEV, NOEXEC, NODIRATIME, an atime mode
  uint64_t cleared = 0;     // MOUNT_ATTR_* to clear ("rw", "suid", "dev", "exec"; MOUNT_ATTR__ATIME when an
                            // access-time word was given, so that "relatime", whose value is 0, is set)
};

// Parses the options of a bind mount: "bind" or "rbind" (one is required), "ro"/"rw", "nosuid"/"suid",
// "nodev"/"dev", "noexec"/"exec", "noatime", "nodiratime", "relatime", "strictatime", and the propagation
// words ("private", "rprivate", "slave", "rslave"; the copy is always private). `type` must be empty,
// "bind" or "none". Anything else is an error naming it: a prestart hook cannot make a new filesystem
// for a spec, and silently leaving an option out would give the container a mount it did not ask for.
Result<BindOptions> parse_bind_options(const std::vector<std::string>& options, std::string_view type);

// A detached copy of the mount at a host path, and how it is to be attached.
struct HostTree {
  UniqueFd fd;
  bool directory = false;
  BindOptions options;
  std::string host_path;  // for messages
};

// open_tree(OPEN_TREE_CLONE) of `host_path` (symlinks in it followed, as a runtime does for a mount
// source). Errors name the path: "bind source /x: No such file or directory".
// Linux < 5.2 (no open_tree): "bind source /x: open_tree: Function not implemented (Linux 5.2 or later is
// needed to mount into a running container)".
Result<HostTree> clone_host_path(const std::string& host_path, const BindOptions& options);

// A root directory's identity, to tell the host's root from a container's.
struct RootId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const RootId&) const = default;
};

// The identity of this process's root directory ("/"): taken before a container's namespace is entered.
Result<RootId> this_root();

// Refused unless the root directory of `process` (/proc/<pid>/root) is `host`: a process whose container
// has already pivoted into its own root would make every host path name the container's file.
//   the root directory of process 42 is not the host's: its container has already pivoted into its own
//   root (a prestart hook runs before pivot_root); refused
Result<void> check_process_root(const Process& process, const RootId& host);

// setns into the mount namespace of `process` (its pidfd, or /proc/<pid>/ns/mnt through its directory
// before Linux 5.8: never another process that got the same pid), then refused unless "/" there, the
// namespace's root, is still `host` (this_root() before): in a namespace whose root is a container's own
// (pivot_root done: a hook run late, or a namespace joined from another container), a host path would
// name the container's file. Afterwards "/" and the working directory are that namespace's root; after
// the refusal this process is still in that namespace and must do nothing there.
//   enter the mount namespace of process 42: its root is not the host's: its container has already
//   pivoted into its own root (a prestart hook runs before pivot_root); refused
Result<void> enter_mount_namespace(const Process& process, const RootId& host);

// Whether `process` is in another user namespace than this one (then mknod is refused in it and device
// nodes are bind-mounted from the host instead).
Result<bool> in_other_user_namespace(const Process& process);

// The mounts of this process's mount namespace that are shared (have a peer group), by mount id, from
// /proc/self/mountinfo (`mountinfo_text`, for tests).
class MountTable {
 public:
  // `proc_dir`: a directory fd of the host's /proc, opened before this process entered a container's
  // mount namespace, so that "self/mountinfo" is read through it and never through a /proc of the
  // container's; -1: "/proc". It must stay open as long as the table is used.
  static Result<MountTable> read(int proc_dir = -1);
  static Result<MountTable> parse(std::string_view mountinfo_text);
  // An error when the mount holding the object `fd` refers to is shared: "<what>: the mount at <point> is
  // shared (peer group N): a mount made there would appear in other mount namespaces; refused". A mount
  // the table does not know (one made since it was read, e.g. by an earlier bind of the same plan) makes
  // a table from read() read /proc/self/mountinfo again, once per call.
  [[nodiscard]] Result<void> check_private(int fd, std::string_view what);

 private:
  bool m_live = false;  // from read(): may be read again
  int m_proc_dir = -1;  // from read()
  struct Entry {
    std::string mount_point;
    std::string peer_group;  // "" when not shared
  };
  std::map<uint64_t, Entry> m_mounts;
};

// What attach_tree did.
enum class Attached : uint8_t { created_mount_point, existing_mount_point };

// Attaches `tree` at `path` inside `root`: an existing target is resolved inside the root (a symlink is
// followed there, as a runtime does for a mount destination) and must be of the same kind (directory or
// not); a missing one is created (directory 0755, or an empty file 0644, parents 0755). Refused when the
// target's mount is shared (see MountTable); for a missing target that is known before anything is
// created, from the mount of the directory where the first new entry would go (a shared volume's
// directory is a host directory: nothing is left in it), and a mount point made here is removed again
// when the attach fails.
Result<Attached> attach_tree(const Root& root, std::string_view path, const HostTree& tree,
                             MountTable& mounts);

// A device node to create.
struct NodeSpec {
  std::string path;  // in the container
  char type = 'c';   // 'c' or 'b'
  uint32_t major = 0;
  uint32_t minor = 0;
  mode_t mode = 0666;  // permission bits
  uid_t uid = 0;
  gid_t gid = 0;
};

enum class NodeResult : uint8_t { created, existed, bound };

// The parent directories of a run of make_device_node calls, each resolved once (the prestart hook's node
// loop: a GPU container's nodes are nearly all in /dev and /dev/dri, and every in-root resolution walks its
// path from the root, component by component). The caller owns it; it is keyed by the parent's container
// path. Each fd came from in-root resolution (make_dirs), so it never leads out of the root; a directory
// the container swaps for a symlink after it was resolved is not resolved again: the next node still goes
// into the directory resolved first. Valid only while nothing is mounted on a directory of the root between
// the calls (a mount on a cached directory or above it would leave the fd on the directory it covers; the
// host nodes make_device_node binds over files in a user namespace cover no directory): make every node
// before the first attach_tree, and let the cache go before that.
class ParentDirCache {
 public:
  struct Parent {
    int dir = -1;      // O_PATH directory fd, owned by the cache
    std::string name;  // the last component; never "", "." or ".."
  };
  // As open_parent (rootfs/in_root.hpp), the directory taken from the cache when it holds it.
  Result<Parent> open(const Root& root, std::string_view path, mode_t dir_mode);

 private:
  std::map<std::string, UniqueFd, std::less<>> m_dirs;
};

// Creates the node at `path` in `root` (parents 0755) with exactly `mode` and owner uid:gid. An existing
// node of the same type and numbers is left as it is; anything else there is an error. With `host` (a
// clone of the host's node, for a container in a user namespace where mknod is refused) an empty file is
// made instead and the host node bind-mounted over it; its type and numbers must match `node`, and, as
// for attach_tree, a shared mount is refused before that file (or a parent) is made, and the file is
// removed again when the bind fails. With `parents`, the node's parent directory is looked up there first
// (see ParentDirCache for when that is valid).
Result<NodeResult> make_device_node(const Root& root, const NodeSpec& node, const HostTree* host,
                                    MountTable& mounts, ParentDirCache* parents = nullptr);

// Attaches the detached tree `tree` on `target` (O_PATH fds) with `options` (attributes set and cleared)
// and private propagation: set on the detached copy before it is attached (mount_setattr, Linux 5.12) or,
// on 5.2 to 5.11, by a remount through /proc/self/fd right after. `options.recursive` applies them to the
// whole tree. Errors name `what`.
Result<void> attach_detached(int tree, int target, const BindOptions& options, const std::string& what);

}  // namespace gpuctk::rootfs
