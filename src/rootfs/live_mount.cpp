#include "rootfs/live_mount.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "util/file.hpp"
#include "util/mountinfo.hpp"
#include "util/strings.hpp"

namespace gpuctk::rootfs {

namespace {

struct OptionWord {
  std::string_view word;
  uint64_t set;    // MOUNT_ATTR_* turned on
  uint64_t clear;  // MOUNT_ATTR_* turned off
};

constexpr OptionWord k_option_words[] = {
    {"ro", MOUNT_ATTR_RDONLY, 0},
    {"rw", 0, MOUNT_ATTR_RDONLY},
    {"nosuid", MOUNT_ATTR_NOSUID, 0},
    {"suid", 0, MOUNT_ATTR_NOSUID},
    {"nodev", MOUNT_ATTR_NODEV, 0},
    {"dev", 0, MOUNT_ATTR_NODEV},
    {"noexec", MOUNT_ATTR_NOEXEC, 0},
    {"exec", 0, MOUNT_ATTR_NOEXEC},
    {"nodiratime", MOUNT_ATTR_NODIRATIME, 0},
    // The access-time mode is one field: each word clears it (and relatime, whose value is 0, is only that).
    {"noatime", MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME},
    {"relatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
    {"strictatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME},
};

// The copy gpuctk attaches is always private (attach_detached), so these ask for nothing more.
constexpr std::string_view k_private_words[] = {"private", "rprivate", "slave", "rslave"};

// The MS_* flags of a remount that gives a mount `attributes` (Linux 5.2 to 5.11, no mount_setattr).
unsigned long remount_flags(uint64_t attributes) {
  unsigned long flags = MS_REMOUNT | MS_BIND;
  const std::pair<uint64_t, unsigned long> map[] = {{MOUNT_ATTR_RDONLY, MS_RDONLY},
                                                    {MOUNT_ATTR_NOSUID, MS_NOSUID},
                                                    {MOUNT_ATTR_NODEV, MS_NODEV},
                                                    {MOUNT_ATTR_NOEXEC, MS_NOEXEC},
                                                    {MOUNT_ATTR_NODIRATIME, MS_NODIRATIME},
                                                    {MOUNT_ATTR_NOATIME, MS_NOATIME},
                                                    {MOUNT_ATTR_STRICTATIME, MS_STRICTATIME}};
  for (const auto& [attribute, flag] : map) {
    if ((attributes & attribute) == attribute && attribute != 0) {
      flags |= flag;
    }
  }
  return flags;
}

// `name` ("self/mountinfo") of /proc: through `proc_dir` when there is one, at most `max_size` bytes.
Result<std::string> read_proc(int proc_dir, const std::string& name, size_t max_size) {
  if (proc_dir < 0) {
    return read_file("/proc/" + name, max_size);
  }
  UniqueFd fd(::openat(proc_dir, name.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return fail_errno("read /proc/" + name, errno);
  }
  return read_fd(fd.get(), "/proc/" + name, max_size);
}

// The id of the mount that `fd` is on: statx (Linux 5.8), else the fd's fdinfo.
Result<uint64_t> mount_id(int fd, int proc_dir) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 &&
      (stx.stx_mask & STATX_MNT_ID) != 0) {
    return stx.stx_mnt_id;
  }
  GPUCTK_TRY_ASSIGN(const auto info, read_proc(proc_dir, "self/fdinfo/" + std::to_string(fd), 64 * 1024));
  for (const auto line : split(info, '\n')) {
    if (line.starts_with("mnt_id:")) {
      uint64_t id = 0;
      const auto value = trim(line.substr(7));
      if (std::from_chars(value.data(), value.data() + value.size(), id).ec == std::errc{}) {
        return id;
      }
    }
  }
  return fail("/proc/self/fdinfo/" + std::to_string(fd) + ": no mnt_id");
}

// What `st` is, for messages: "a directory", "a regular file", "a character device 195:0".
std::string describe_stat(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) {
    return "a directory";
  }
  if (S_ISREG(st.st_mode)) {
    return "a regular file";
  }
  if (S_ISLNK(st.st_mode)) {
    return "a symbolic link";
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    return std::string(S_ISCHR(st.st_mode) ? "a character device " : "a block device ") +
           std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
  }
  return "a special file";
}

// Why a container root was refused: its process, or its namespace, is past pivot_root.
constexpr const char* k_pivoted =
    "its container has already pivoted into its own root (a prestart hook runs before pivot_root); refused";

RootId root_id(const struct stat& st) {
  return RootId{st.st_dev, st.st_ino};
}

// Removes the mount point `name` that attach_tree or make_device_node made in `dir`, after a failure: a
// mount point left behind would be an empty entry in the image (or, on a volume, a host directory).
void remove_mount_point(int dir, const char* name, bool directory) {
  ::unlinkat(dir, name, directory ? AT_REMOVEDIR : 0);
}

// A new mount point `name` in `dir`: a directory (0755) or an empty file (0644), exactly those modes
// whatever the umask (a container user must be able to reach what is mounted there).
Result<void> create_mount_point(int dir, const char* name, bool directory, const std::string& what) {
  const mode_t mode = directory ? 0755 : 0644;
  if (directory && ::mkdirat(dir, name, mode) != 0) {
    return fail_errno(what + ": create the mount point", errno);
  }
  UniqueFd fd(::openat(dir, name,
                       directory ? (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                 : (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC),
                       mode));
  if (!fd || ::fchmod(fd.get(), mode) != 0) {
    const int err = errno;
    remove_mount_point(dir, name, directory);
    return fail_errno(what + ": create the mount point", err);
  }
  return {};
}

// Before anything is created for `path` in `root` (parents, mount point): refused when the directory
// that would hold the first new entry, the deepest existing directory on the way (resolved inside the
// root), is on a shared mount. What is made there is made in whatever that mount shows, e.g. the host
// directory behind a volume with Bidirectional propagation, and would be left there by the refusal that
// follows. An error resolving the way is left to the resolution that creates it (open_parent).
Result<void> check_where_created(const Root& root, std::string_view path, MountTable& mounts,
                                 const std::string& what) {
  auto parts = split_parent(path);
  if (!parts) {
    return {};
  }
  std::string dir = parts->dir;
  for (;;) {
    if (auto fd = open_in_root(root, dir, O_PATH | O_DIRECTORY, FollowLast::yes)) {
      return mounts.check_private(fd->get(), what);
    }
    if (dir == "/") {
      return {};
    }
    auto up = split_parent(dir);
    if (!up) {
      return {};
    }
    dir = up->dir;
  }
}

}  // namespace

Result<BindOptions> parse_bind_options(const std::vector<std::string>& options, std::string_view type) {
  if (!type.empty() && type != "bind" && type != "none") {
    return fail("mount type " + quote(type) + " is not supported at prestart (only bind mounts)");
  }
  BindOptions out;
  bool bind = false;
  for (const auto& option : options) {
    if (option == "bind" || option == "rbind") {
      bind = true;
      out.recursive = out.recursive || option == "rbind";
      continue;
    }
    if (std::ranges::find(k_private_words, option) != std::end(k_private_words)) {
      continue;
    }
    const auto* word = std::ranges::find(k_option_words, std::string_view(option), &OptionWord::word);
    if (word == std::end(k_option_words)) {
      return fail("mount option " + quote(option) + " is not supported at prestart");
    }
    // A later word wins over an earlier one ("ro,rw" is rw).
    out.attributes = (out.attributes & ~word->clear) | word->set;
    out.cleared = (out.cleared & ~word->set) | word->clear;
  }
  if (!bind) {
    return fail("mount options " + quote(join(options, ",")) +
                " name no bind or rbind (only bind mounts can be made at prestart)");
  }
  return out;
}

Result<HostTree> clone_host_path(const std::string& host_path, const BindOptions& options) {
  const std::string what = "bind source " + host_path;
  const unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (options.recursive ? AT_RECURSIVE : 0U);
  UniqueFd fd(::open_tree(AT_FDCWD, host_path.c_str(), flags));
  if (!fd) {
    const int err = errno;
    if (err == ENOSYS) {
      return fail(what + ": open_tree: " + std::strerror(err) +
                  " (Linux 5.2 or later is needed to mount into a running container)");
    }
    return fail_errno(what, err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail_errno(what, errno);
  }
  return HostTree{std::move(fd), S_ISDIR(st.st_mode), options, host_path};
}

Result<RootId> this_root() {
  struct stat st {};
  if (::stat("/", &st) != 0) {
    return fail_errno("stat /", errno);
  }
  return root_id(st);
}

Result<void> check_process_root(const Process& process, const RootId& host) {
  struct stat st {};
  if (::fstatat(process.proc_dir(), "root", &st, 0) != 0) {
    return fail_errno("stat " + process.proc_path("root"), process.errno_for(errno));
  }
  if (root_id(st) != host) {
    return fail("the root directory of process " + std::to_string(process.pid()) +
                " is not the host's: " + k_pivoted);
  }
  return {};
}

Result<void> enter_mount_namespace(const Process& process, const RootId& host) {
  const std::string what = "enter the mount namespace of process " + std::to_string(process.pid());
  // Through the pidfd (Linux 5.8), else the namespace file read through the process's own directory.
  if (process.pidfd() < 0 || ::setns(process.pidfd(), CLONE_NEWNS) != 0) {
    if (process.pidfd() >= 0 && errno != EINVAL) {
      return fail_errno(what, errno);
    }
    UniqueFd ns(::openat(process.proc_dir(), "ns/mnt", O_RDONLY | O_CLOEXEC));
    if (!ns) {
      return fail_errno(what, process.errno_for(errno));
    }
    if (::setns(ns.get(), CLONE_NEWNS) != 0) {
      return fail_errno(what, errno);
    }
  }
  GPUCTK_TRY_ASSIGN(const RootId root, this_root());
  if (root != host) {
    return fail(what + ": its root is not the host's: " + k_pivoted);
  }
  return {};
}

Result<bool> in_other_user_namespace(const Process& process) {
  struct stat self {};
  struct stat other {};
  if (::stat("/proc/self/ns/user", &self) != 0) {
    return fail_errno("stat /proc/self/ns/user", errno);
  }
  if (::fstatat(process.proc_dir(), "ns/user", &other, 0) != 0) {
    return fail_errno("stat " + process.proc_path("ns/user"), process.errno_for(errno));
  }
  return self.st_dev != other.st_dev || self.st_ino != other.st_ino;
}

Result<MountTable> MountTable::read(int proc_dir) {
  GPUCTK_TRY_ASSIGN(const auto text, read_proc(proc_dir, "self/mountinfo", k_max_mountinfo_size));
  GPUCTK_TRY_ASSIGN(auto table, parse(text));
  table.m_live = true;
  table.m_proc_dir = proc_dir;
  return table;
}

Result<MountTable> MountTable::parse(std::string_view mountinfo_text) {
  GPUCTK_TRY_ASSIGN(auto mounts, parse_mountinfo(mountinfo_text, "/proc/self/mountinfo"));
  MountTable table;
  for (auto& mount : mounts) {
    table.m_mounts.insert_or_assign(mount.id,
                                    Entry{std::move(mount.mount_point), std::move(mount.peer_group)});
  }
  return table;
}

Result<void> MountTable::check_private(int fd, std::string_view what) {
  GPUCTK_TRY_ASSIGN(const uint64_t id, mount_id(fd, m_proc_dir));
  auto it = m_mounts.find(id);
  if (it == m_mounts.end() && m_live) {
    GPUCTK_TRY_ASSIGN(*this, read(m_proc_dir));
    it = m_mounts.find(id);
  }
  if (it == m_mounts.end()) {
    return fail(std::string(what) + ": mount " + std::to_string(id) +
                " is not in this namespace's mountinfo");
  }
  if (!it->second.peer_group.empty()) {
    return fail(std::string(what) + ": the mount at " + it->second.mount_point + " is shared (peer group " +
                it->second.peer_group +
                "): a mount made there would appear in other mount namespaces; refused");
  }
  return {};
}

Result<void> attach_detached(int tree, int target, const BindOptions& options, const std::string& what) {
  // Flags and private propagation before the copy is attached: it is never visible writable, and no
  // mount event travels between it and its source afterwards.
  mount_attr attr{};
  attr.attr_set = options.attributes;
  // An access-time word sets the whole field; its other bits must not be cleared as well.
  attr.attr_clr = options.cleared & ~(options.attributes & ~static_cast<uint64_t>(MOUNT_ATTR__ATIME));
  attr.propagation = MS_PRIVATE;
  const unsigned at_flags = AT_EMPTY_PATH | (options.recursive ? AT_RECURSIVE : 0U);
  const bool attr_set = ::mount_setattr(tree, "", at_flags, &attr, sizeof attr) == 0;
  if (!attr_set && errno != ENOSYS) {
    return fail_errno(what + ": mount_setattr", errno);
  }
  if (::move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    return fail_errno(what + ": move_mount", errno);
  }
  if (!attr_set) {
    // Linux 5.2 to 5.11: remount the attached copy through its fd (top mount only, as MS_REMOUNT does).
    const std::string self = "/proc/self/fd/" + std::to_string(tree);
    if (::mount(nullptr, self.c_str(), nullptr, (options.recursive ? MS_REC : 0) | MS_PRIVATE, nullptr) !=
            0 ||
        ::mount(nullptr, self.c_str(), nullptr, remount_flags(options.attributes), nullptr) != 0) {
      const int err = errno;
      ::umount2(self.c_str(), MNT_DETACH);
      return fail_errno(what + ": remount", err);
    }
  }
  return {};
}

Result<Attached> attach_tree(const Root& root, std::string_view path, const HostTree& tree,
                             MountTable& mounts) {
  const std::string what =
      "mount " + tree.host_path + " on " + std::string(path) + " in container root " + root.path();
  if (!open_in_root(root, path, O_PATH, FollowLast::no)) {
    GPUCTK_TRY(check_where_created(root, path, mounts, what));
  }
  GPUCTK_TRY_ASSIGN(auto parent, open_parent(root, path, 0755));
  const int dir = parent.dir.get();
  const char* name = parent.name.c_str();
  Attached result = Attached::existing_mount_point;
  UniqueFd target;
  struct stat st {};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) {
      return fail_errno(what, errno);
    }
    GPUCTK_TRY(create_mount_point(dir, name, tree.directory, what));
    result = Attached::created_mount_point;
    target.reset(::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  } else if (S_ISLNK(st.st_mode)) {
    // Followed inside the root, as a runtime follows a destination that is a link.
    auto resolved = open_in_root(root, path, O_PATH, FollowLast::yes);
    if (!resolved) {
      return fail_with(what, resolved.error());
    }
    target = std::move(*resolved);
  } else {
    target.reset(::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  }
  auto attached = [&]() -> Result<void> {
    if (!target) {
      return fail_errno(what, errno);
    }
    if (::fstat(target.get(), &st) != 0) {
      return fail_errno(what, errno);
    }
    if (S_ISDIR(st.st_mode) != tree.directory) {
      return fail(what + ": the mount point is " + describe_stat(st) + ", the source " +
                  (tree.directory ? "a directory" : "not a directory"));
    }
    GPUCTK_TRY(mounts.check_private(target.get(), what));
    return attach_detached(tree.fd.get(), target.get(), tree.options, what);
  }();
  if (!attached && result == Attached::created_mount_point) {
    remove_mount_point(dir, name, tree.directory);
  }
  GPUCTK_TRY(attached);
  return result;
}

Result<ParentDirCache::Parent> ParentDirCache::open(const Root& root, std::string_view path,
                                                    mode_t dir_mode) {
  GPUCTK_TRY_ASSIGN(auto parts, split_parent(path));
  if (parts.name.empty()) {
    GPUCTK_TRY(open_parent(root, path, dir_mode));  // its error: the root itself is no node's place
  }
  auto at = m_dirs.find(parts.dir);
  if (at == m_dirs.end()) {
    GPUCTK_TRY_ASSIGN(auto dir, make_dirs(root, parts.dir, dir_mode));
    at = m_dirs.emplace(std::move(parts.dir), std::move(dir)).first;
  }
  return Parent{at->second.get(), std::move(parts.name)};
}

Result<NodeResult> make_device_node(const Root& root, const NodeSpec& node, const HostTree* host,
                                    MountTable& mounts, ParentDirCache* parents) {
  const std::string what = "device node " + node.path + " in container root " + root.path();
  const mode_t type = node.type == 'b' ? S_IFBLK : S_IFCHR;
  const dev_t rdev = makedev(node.major, node.minor);
  if (host != nullptr && !open_in_root(root, node.path, O_PATH, FollowLast::no)) {
    GPUCTK_TRY(check_where_created(root, node.path, mounts, what));
  }
  UniqueFd own_dir;  // without a cache
  ParentDirCache::Parent parent;
  if (parents != nullptr) {
    GPUCTK_TRY_ASSIGN(parent, parents->open(root, node.path, 0755));
  } else {
    GPUCTK_TRY_ASSIGN(auto opened, open_parent(root, node.path, 0755));
    own_dir = std::move(opened.dir);
    parent = {own_dir.get(), std::move(opened.name)};
  }
  const int dir = parent.dir;
  const char* name = parent.name.c_str();
  struct stat st {};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if ((st.st_mode & S_IFMT) == type && st.st_rdev == rdev) {
      return NodeResult::existed;
    }
    return fail(what + ": exists and is " + describe_stat(st) + ", not " + (node.type == 'b' ? "b " : "c ") +
                std::to_string(node.major) + ":" + std::to_string(node.minor));
  }
  if (errno != ENOENT) {
    return fail_errno(what, errno);
  }
  if (host == nullptr) {
    const mode_t old_mask = ::umask(0);
    const int made = ::mknodat(dir, name, type | (node.mode & 07777), rdev);
    const int err = errno;
    ::umask(old_mask);
    if (made != 0) {
      return fail_errno(what + ": mknod", err);
    }
    if (::fchownat(dir, name, node.uid, node.gid, AT_SYMLINK_NOFOLLOW) != 0) {
      const int chown_err = errno;
      ::unlinkat(dir, name, 0);  // not left with an owner the spec did not ask for
      return fail_errno(what + ": chown", chown_err);
    }
    return NodeResult::created;
  }
  struct stat host_st {};
  if (::fstat(host->fd.get(), &host_st) != 0) {
    return fail_errno(what + ": stat host node " + host->host_path, errno);
  }
  if ((host_st.st_mode & S_IFMT) != type || host_st.st_rdev != rdev) {
    return fail(what + ": host node " + host->host_path + " is " + describe_stat(host_st));
  }
  GPUCTK_TRY(create_mount_point(dir, name, false, what));
  const auto bound = [&]() -> Result<void> {
    UniqueFd target(::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!target) {
      return fail_errno(what, errno);
    }
    GPUCTK_TRY(mounts.check_private(target.get(), what));
    return attach_detached(host->fd.get(), target.get(), host->options, what + ": bind " + host->host_path);
  }();
  if (!bound) {
    remove_mount_point(dir, name, false);
  }
  GPUCTK_TRY(bound);
  return NodeResult::bound;
}

}  // namespace gpuctk::rootfs
