#include "rootfs/sandbox_child.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/fd.hpp"

namespace gpuctk::rootfs {

namespace {

// In the sandbox child: "sandbox: <what><detail>: <errno text>" on stderr (the caller's pipe), then exit
// 126. Built in a fixed buffer: no allocation.
[[noreturn]] void child_fail(const char* what, const char* detail, int err, const char* hint = "") {
  char line[1024];
  size_t used = 0;
  for (const char* piece :
       {"sandbox: ", what, detail, err != 0 ? ": " : "", err != 0 ? ::strerrordesc_np(err) : "", hint}) {
    for (; piece != nullptr && *piece != '\0' && used < sizeof line - 1; ++piece) {
      line[used++] = *piece;
    }
  }
  line[used++] = '\n';
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line, used);
  ::_exit(126);
}

// A read-only, empty tmpfs attached over the directory `target` (an fd): what the sandbox has instead
// of a procfs.
void cover_with_empty_tmpfs(int target, const char* path) {
  const UniqueFd fs(static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)));
  if (!fs || ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, "size", "4k", 0) != 0 ||
      ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, "mode", "0555", 0) != 0 ||
      ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    child_fail("make the tmpfs that covers /", path, errno);
  }
  const UniqueFd mount(static_cast<int>(
      ::syscall(SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)));
  if (!mount || ::syscall(SYS_move_mount, mount.get(), "", target, "",
                          MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    child_fail("cover the procfs at /", path, errno);
  }
}

// `path` (relative) opened from `dir` as an O_PATH directory with `resolve` (RESOLVE_*), or -1.
int open_dir(int dir, const char* path, uint64_t resolve) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = resolve;
  return static_cast<int>(::syscall(SYS_openat2, dir, path, &how, sizeof how));
}

// The child's mounts: its "/" becomes the copy of the container root, the host's tree is detached, the
// procfs mounts are covered, the scratch tmpfs attached.
void enter_root(const ChildPlan& plan) {
  // Back to the namespace's own root first (setns into the mount namespace it is in already): a caller
  // that runs chrooted (a runtime started with chroot instead of pivot_root) has a root that is not a
  // mount, where pivot_root fails, and the kernel makes no user namespace for a chrooted process.
  const UniqueFd self(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  if (!self || ::setns(self.get(), CLONE_NEWNS) != 0) {
    child_fail("return to the root of its mount namespace", "", errno);
  }
  // Nothing mounted from here on reaches the caller's namespace, nor any other.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    child_fail("make its mounts private", "", errno);
  }
  if (::syscall(SYS_move_mount, plan.tree, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) != 0 ||
      ::fchdir(plan.tree) != 0) {
    child_fail("attach the copy of the container root", "", errno);
  }
  if (::syscall(SYS_pivot_root, ".", ".") != 0 || ::umount2(".", MNT_DETACH) != 0 || ::chdir("/") != 0) {
    child_fail("pivot_root into the container root", "", errno);
  }
  const UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (const char* const* point = plan.procfs; *point != nullptr; ++point) {
    // A mount point as mountinfo gave it: canonical, so no symlink on the way.
    const UniqueFd target(open_dir(root.get(), *point, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH));
    if (!target) {
      child_fail("find the procfs at /", *point, errno);
    }
    cover_with_empty_tmpfs(target.get(), *point);
  }
  if (plan.scratch >= 0) {
    // Resolved as the program will resolve its path: inside the root, no magic link.
    const UniqueFd target(open_dir(root.get(), plan.scratch_path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS));
    if (!target || ::syscall(SYS_move_mount, plan.scratch, "", target.get(), "",
                             MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
      child_fail("attach its scratch directory at /", plan.scratch_path, errno);
    }
  }
}

// The child's identity: root of a new user namespace whose maps the caller writes (uid and gid 0 there
// are k_sandbox_host_id outside), no supplementary groups.
void become_unprivileged(const ChildPlan& plan) {
  if (::unshare(CLONE_NEWUSER) != 0) {
    const int err = errno;
    child_fail("create its user namespace", "", err,
               err == ENOSPC ? " (user.max_user_namespaces is 0 or used up; the program is never run as root "
                               "instead)"
                             : " (the program is never run as root instead)");
  }
  char byte = 1;
  if (::write(plan.ready, &byte, 1) != 1) {
    child_fail("report its user namespace", "", errno);
  }
  ssize_t got = 0;
  do {
    got = ::read(plan.go, &byte, 1);
  } while (got < 0 && errno == EINTR);
  if (got != 1) {
    child_fail("wait for its identity maps", "", got < 0 ? errno : EPIPE);
  }
  if (::setgroups(0, nullptr) != 0 || ::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0) {
    child_fail("take its identity in its user namespace", "", errno);
  }
}

}  // namespace

void child_main(const ChildPlan& plan) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    child_fail("PR_SET_PDEATHSIG", "", errno);
  }
  if (::dup2(plan.input, STDIN_FILENO) < 0 || ::dup2(plan.output, STDOUT_FILENO) < 0 ||
      ::dup2(plan.output, STDERR_FILENO) < 0) {
    ::_exit(126);
  }
  // Default signal handling and an empty mask for the program (the caller blocked everything around the
  // clone so that none of its handlers runs here).
  struct sigaction deflt {};
  deflt.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    ::sigaction(sig, &deflt, nullptr);  // SIGKILL, SIGSTOP and glibc's own signals refuse: fine
  }
  enter_root(plan);
  become_unprivileged(plan);
  // Nothing of the caller's crosses into the program but the standard streams and the program itself
  // (close-on-exec now, closed by the exec, which still runs it from its fd).
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    child_fail("close the inherited descriptors", "", errno);
  }
  if (const char* step = apply_confinement(*plan.confinement); step != nullptr) {
    child_fail(step, "", errno);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  char* env[] = {nullptr};
  ::syscall(SYS_execveat, plan.program, "", plan.argv, env, AT_EMPTY_PATH);
  child_fail("execute ", plan.argv[0] != nullptr ? plan.argv[0] : "the program", errno);
}

}  // namespace gpuctk::rootfs
