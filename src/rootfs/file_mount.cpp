#include "rootfs/file_mount.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "rootfs/live_mount.hpp"
#include "util/file.hpp"

namespace gpuctk::rootfs {

namespace {

constexpr unsigned long k_readonly_flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;

// The pre-5.2 path: see the header.
Result<void> mount_with_legacy_api(int target_fd, std::string_view content, const std::string& what) {
  const std::string source = "/dev/shm/" + temporary_name("params");
  {
    UniqueFd file(::open(source.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
    if (!file) {
      return fail_errno(what + ": create " + source, errno);
    }
    if (const int err = write_all(file.get(), content); err != 0) {
      ::unlink(source.c_str());
      return fail_errno(what + ": write " + source, err);
    }
  }
  const std::string target = "/proc/self/fd/" + std::to_string(target_fd);
  int err = 0;
  std::string step;
  if (::mount(source.c_str(), source.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    err = errno;
    step = "bind " + source;
  } else {
    if (::mount(nullptr, source.c_str(), nullptr, MS_PRIVATE, nullptr) != 0 ||
        ::mount(nullptr, source.c_str(), nullptr, MS_REMOUNT | MS_BIND | k_readonly_flags, nullptr) != 0) {
      err = errno;
      step = "remount " + source + " read-only";
    } else if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      err = errno;  // the bind copies the read-only flags of the mount it is made from
      step = "bind";
    }
    ::umount2(source.c_str(), MNT_DETACH);
  }
  ::unlink(source.c_str());
  if (err != 0) {
    return fail_errno(what + ": " + step, err);
  }
  return {};
}

}  // namespace

Result<void> mount_readonly_file(const Root& root, std::string_view path, std::string_view content,
                                 MountApi api) {
  const std::string what = "mount over " + std::string(path) + " in container root " + root.path();
  GPUCTK_TRY_ASSIGN(auto target, open_in_root(root, path, O_PATH, FollowLast::no));
  struct stat st {};
  if (::fstat(target.get(), &st) != 0) {
    return fail_errno(what, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(what + ": not a regular file");
  }
  const auto failed = [&](std::string_view step) {
    const int err = errno;
    return fail_errno(what + ": " + std::string(step), err);
  };
  UniqueFd fs(api == MountApi::legacy ? -1 : ::fsopen("tmpfs", FSOPEN_CLOEXEC));
  if (!fs && (api == MountApi::legacy || errno == ENOSYS)) {
    return mount_with_legacy_api(target.get(), content, what);
  }
  if (!fs) {
    return failed("fsopen tmpfs");
  }
  if (::fsconfig(fs.get(), FSCONFIG_SET_STRING, "size", "1m", 0) != 0 ||
      ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
      ::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return failed("create tmpfs");
  }
  UniqueFd tmpfs(
      ::fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  if (!tmpfs) {
    return failed("fsmount");
  }
  {
    UniqueFd file(::openat(tmpfs.get(), "file", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           st.st_mode & 0444));
    if (!file) {
      return failed("create the file");
    }
    if (const int err = write_all(file.get(), content); err != 0) {
      errno = err;
      return failed("write the file");
    }
  }
  UniqueFd tree(::open_tree(tmpfs.get(), "file", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (!tree) {
    return failed("open_tree");
  }
  return attach_detached(
      tree.get(), target.get(),
      BindOptions{.attributes = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC},
      what);
}

}  // namespace gpuctk::rootfs
