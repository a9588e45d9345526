#include "rootfs/confinement.hpp"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "util/fd.hpp"

namespace gpuctk::rootfs {

namespace {

// System calls a static glibc program that reads and writes files needs (ldconfig: directory scans,
// ld.so.cache written to a temporary file, fsync'ed and renamed). Everything else, including mount,
// ptrace, bpf, keyctl, kexec, module loading, sockets, clone/unshare/setns, chroot and mknod, fails with
// EPERM.
constexpr const char* k_allowed_syscalls[] = {
    // files and directories
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "lseek",
    "open",
    "openat",
    "close",
    "close_range",
    "fstat",
    "stat",
    "lstat",
    "newfstatat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "getdents",
    "getdents64",
    "readlink",
    "readlinkat",
    "symlink",
    "symlinkat",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "chmod",
    "fchmod",
    "fchmodat",
    "fsync",
    "fdatasync",
    "ftruncate",
    "fcntl",
    "dup",
    "dup2",
    "dup3",
    "getcwd",
    "chdir",
    "fchdir",
    "umask",
    "utimensat",
    // memory
    "mmap",
    "munmap",
    "mprotect",
    "mremap",
    "madvise",
    "brk",
    // process start-up and exit of a static glibc program
    "execve",
    "execveat",
    "arch_prctl",
    "set_tid_address",
    "set_robust_list",
    "rseq",
    "prlimit64",
    "getrlimit",
    "uname",
    "getrandom",
    "futex",
    "exit",
    "exit_group",
    // signals, identity and time
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "getpid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "clock_gettime",
    "gettimeofday",
    "time",
    "nanosleep",
    "clock_nanosleep",
    "sched_yield",
};

// The seccomp allow-list as a BPF program, built (libseccomp) before the sandbox child exists: the child
// loads it with one prctl and allocates nothing between clone and exec.
Result<std::vector<sock_filter>> build_filter() {
  const std::unique_ptr<void, decltype(&seccomp_release)> ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)),
                                                              &seccomp_release);
  if (!ctx) {
    return fail("seccomp: cannot create a filter");
  }
  for (const char* name : k_allowed_syscalls) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
      continue;  // not a system call of this architecture (e.g. open on arm64)
    }
    if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0); rc != 0) {
      return fail_errno(std::string("seccomp: allow ") + name, -rc);
    }
  }
  // isatty(3) only: TCGETS. No other ioctl (TIOCSTI could type into the caller's terminal).
  if (const int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                      SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(TCGETS)));
      rc != 0) {
    return fail_errno("seccomp: allow ioctl", -rc);
  }
  UniqueFd memory(::memfd_create("gpuctk-seccomp", MFD_CLOEXEC));
  if (!memory) {
    return fail_errno("seccomp: memfd_create", errno);
  }
  if (const int rc = seccomp_export_bpf(ctx.get(), memory.get()); rc != 0) {
    return fail_errno("seccomp: export the filter", -rc);
  }
  struct stat st {};
  if (::fstat(memory.get(), &st) != 0 || st.st_size <= 0 ||
      static_cast<size_t>(st.st_size) % sizeof(sock_filter) != 0) {
    return fail("seccomp: the exported filter has an unexpected size");
  }
  std::vector<sock_filter> filter(static_cast<size_t>(st.st_size) / sizeof(sock_filter));
  if (::pread(memory.get(), filter.data(), static_cast<size_t>(st.st_size), 0) != st.st_size) {
    return fail_errno("seccomp: read the exported filter", errno);
  }
  return filter;
}

}  // namespace

Result<Confinement> make_confinement(std::span<const cap_value_t> keep) {
  Confinement c;
  GPUCTK_TRY_ASSIGN(c.filter, build_filter());
  for (const cap_value_t cap : keep) {
    c.keep |= uint64_t{1} << cap;
  }
  return c;
}

const char* apply_confinement(const Confinement& c) {
  // In this order: no_new_privs (the filter needs it), the bounding set (so that no exec gives anything
  // back), the ambient set, the process's own sets, then the filter, which forbids the calls before it.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return "set no_new_privs";
  }
  for (unsigned long cap = 0; cap < 64; ++cap) {
    // EINVAL: past the kernel's last capability.
    if ((c.keep >> cap & 1) == 0 && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      return "drop a capability from the bounding set";
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return "clear the ambient capabilities";
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  for (int i = 0; i < 2; ++i) {
    data[i].effective = data[i].permitted = static_cast<uint32_t>(c.keep >> (32 * i));
  }
  if (::syscall(SYS_capset, &header, data) != 0) {
    return "set the capabilities";
  }
  const sock_fprog program{static_cast<unsigned short>(c.filter.size()),
                           const_cast<sock_filter*>(c.filter.data())};
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) {
    return "load the seccomp filter";
  }
  return nullptr;
}

Result<void> restrict_self(std::span<const cap_value_t> keep) {
  GPUCTK_TRY_ASSIGN(const auto confinement, make_confinement(keep));
  if (const char* step = apply_confinement(confinement); step != nullptr) {
    return fail_errno(step, errno);
  }
  return {};
}

}  // namespace gpuctk::rootfs
