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

// The id of the mount that `fd` is on: statx (Linux 5.8), else the fd's fdinfo.
Result<uint64_t> mount_id(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 &&
      (stx.stx_mask & STATX_MNT_ID) != 0) {
    return stx.stx_mnt_id;
  }
  GPUCTK_TRY_ASSIGN(const auto info, read_file("/proc/self/fdinfo/" + std::to_string(fd), 64 * 1024));
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

// A mountinfo field with its octal escapes (\040 for a space) decoded.
std::string unescape_mountinfo(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const auto digits = field.substr(i + 1, 3);
      unsigned value = 0;
      if (std::from_chars(digits.data(), digits.data() + 3, value, 8).ec == std::errc{} && value < 256) {
        out += static_cast<char>(value);
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
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
    return fail_errno(what + ": create the mount point", errno);
  }
  return {};
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

Result<void> enter_mount_namespace(int pid) {
  const std::string what = "enter the mount namespace of process " + std::to_string(pid);
  // A pidfd names this very process: a pid reused after it exited cannot be entered by mistake.
  UniqueFd target(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (target && ::setns(target.get(), CLONE_NEWNS) == 0) {
    return {};
  }
  if (target && errno != EINVAL) {
    return fail_errno(what, errno);
  }
  // Before Linux 5.8 setns takes only namespace files.
  UniqueFd ns(::open(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) {
    return fail_errno(what, errno);
  }
  if (::setns(ns.get(), CLONE_NEWNS) != 0) {
    return fail_errno(what, errno);
  }
  return {};
}

Result<bool> in_other_user_namespace(int pid) {
  struct stat self {};
  struct stat other {};
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/user";
  if (::stat("/proc/self/ns/user", &self) != 0) {
    return fail_errno("stat /proc/self/ns/user", errno);
  }
  if (::stat(path.c_str(), &other) != 0) {
    return fail_errno("stat " + path, errno);
  }
  return self.st_dev != other.st_dev || self.st_ino != other.st_ino;
}

Result<MountTable> MountTable::read() {
  GPUCTK_TRY_ASSIGN(const auto text, read_file("/proc/self/mountinfo", 64 << 20));
  GPUCTK_TRY_ASSIGN(auto table, parse(text));
  table.m_live = true;
  return table;
}

Result<MountTable> MountTable::parse(std::string_view mountinfo_text) {
  MountTable table;
  for (const auto line : split(mountinfo_text, '\n')) {
    if (line.empty()) {
      continue;
    }
    // id parent major:minor root mount-point options [optional fields...] - fstype source super-options
    const auto fields = split(line, ' ');
    if (fields.size() < 10 || std::ranges::find(fields, std::string_view("-")) == fields.end()) {
      return fail("mountinfo: malformed line " + quote(line));
    }
    uint64_t id = 0;
    if (std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), id).ec != std::errc{}) {
      return fail("mountinfo: malformed mount id in " + quote(line));
    }
    Entry entry{unescape_mountinfo(fields[4]), {}};
    for (size_t i = 6; i < fields.size() && fields[i] != "-"; ++i) {
      if (fields[i].starts_with("shared:")) {
        entry.peer_group = std::string(fields[i].substr(7));
      }
    }
    table.m_mounts.insert_or_assign(id, std::move(entry));
  }
  return table;
}

Result<void> MountTable::check_private(int fd, std::string_view what) {
  GPUCTK_TRY_ASSIGN(const uint64_t id, mount_id(fd));
  auto it = m_mounts.find(id);
  if (it == m_mounts.end() && m_live) {
    GPUCTK_TRY_ASSIGN(*this, read());
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
  GPUCTK_TRY(attach_detached(tree.fd.get(), target.get(), tree.options, what));
  return result;
}

Result<NodeResult> make_device_node(const Root& root, const NodeSpec& node, const HostTree* host,
                                    MountTable& mounts) {
  const std::string what = "device node " + node.path + " in container root " + root.path();
  const mode_t type = node.type == 'b' ? S_IFBLK : S_IFCHR;
  const dev_t rdev = makedev(node.major, node.minor);
  GPUCTK_TRY_ASSIGN(auto parent, open_parent(root, node.path, 0755));
  const int dir = parent.dir.get();
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
      return fail_errno(what + ": chown", errno);
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
  UniqueFd target(::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!target) {
    return fail_errno(what, errno);
  }
  GPUCTK_TRY(mounts.check_private(target.get(), what));
  GPUCTK_TRY(
      attach_detached(host->fd.get(), target.get(), host->options, what + ": bind " + host->host_path));
  return NodeResult::bound;
}

}  // namespace gpuctk::rootfs
