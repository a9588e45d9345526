#pragma once
// Runs a piece of a test in a forked child under a seccomp filter that kills the process on chosen system
// calls. It proves that a code path never makes a kind of call, whatever function it goes through (libc, a
// raw syscall, a helper added later), unlike a hook that a future call could bypass:
//   forbid_sync():        fsync, fdatasync, syncfs, sync, sync_file_range, openat with O_SYNC or O_DSYNC
//   forbid_path_chown():  chown, lchown, fchownat, chmod, fchmodat - changing a file's owner or mode by path
//                         (fchown and fchmod on an fd stay allowed)
// or makes chosen calls fail with an errno (`failing`), as a seccomp profile that does not know them does.

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace gpuctk::test {

struct SyscallFilter {
  std::vector<long> killed;      // system call numbers that kill the process
  bool kill_sync_opens = false;  // openat with O_DSYNC (O_SYNC includes it): every write a flush
  // System call numbers that fail with an errno instead, as a profile that does not know them answers.
  std::vector<std::pair<long, int>> failing{};
};

inline SyscallFilter forbid_sync() {
  return {{SYS_fsync, SYS_fdatasync, SYS_syncfs, SYS_sync, SYS_sync_file_range}, true};
}

inline SyscallFilter forbid_path_chown() {
  SyscallFilter filter{{SYS_fchownat, SYS_fchmodat}, false};
#ifdef SYS_chown
  filter.killed.push_back(SYS_chown);
  filter.killed.push_back(SYS_lchown);
  filter.killed.push_back(SYS_chmod);
#endif
#ifdef SYS_fchmodat2
  filter.killed.push_back(SYS_fchmodat2);
#endif
  return filter;
}

enum class FilterOutcome {
  clean,        // `body` returned 0 and made none of the forbidden calls
  killed,       // killed by the filter (SIGSYS): `body` made a forbidden call
  failed,       // `body` returned non-zero or died otherwise
  unavailable,  // no seccomp here (architecture or kernel): the check cannot be made
};

inline const char* to_string(FilterOutcome outcome) {
  switch (outcome) {
    case FilterOutcome::clean:
      return "clean";
    case FilterOutcome::killed:
      return "killed by SIGSYS: a forbidden system call";
    case FilterOutcome::failed:
      return "failed";
    case FilterOutcome::unavailable:
      return "seccomp unavailable";
  }
  return "?";
}

// Runs `body` (returning 0 on success) in a child process under `filter`.
inline FilterOutcome run_under_filter(const SyscallFilter& filter, const std::function<int()>& body) {
#if defined(__x86_64__)
  constexpr unsigned k_arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr unsigned k_arch = AUDIT_ARCH_AARCH64;
#else
  constexpr unsigned k_arch = 0;
#endif
  if (k_arch == 0) {
    return FilterOutcome::unavailable;
  }
  constexpr int k_no_seccomp = 125;
  const pid_t pid = ::fork();
  if (pid < 0) {
    return FilterOutcome::failed;
  }
  if (pid == 0) {
    // Low 32 bits of the openat flags argument.
    constexpr unsigned k_flags_low =
        offsetof(struct seccomp_data, args[2]) + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
    std::vector<sock_filter> program{
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    };
    for (const auto& [nr, err] : filter.failing) {
      program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1));
      program.push_back(
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<unsigned>(err) & SECCOMP_RET_DATA)));
    }
    for (const long nr : filter.killed) {
      program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1));
      program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    }
    if (filter.kill_sync_opens) {
      program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(SYS_openat), 0, 3));
      program.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, k_flags_low));
      program.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_DSYNC, 0, 1));
      program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    }
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    sock_fprog prog{static_cast<unsigned short>(program.size()), program.data()};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
      ::_exit(k_no_seccomp);
    }
    ::_exit(body() == 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFSIGNALED(status)) {
    return WTERMSIG(status) == SIGSYS ? FilterOutcome::killed : FilterOutcome::failed;
  }
  if (WEXITSTATUS(status) == k_no_seccomp) {
    return FilterOutcome::unavailable;
  }
  return WEXITSTATUS(status) == 0 ? FilterOutcome::clean : FilterOutcome::failed;
}

}  // namespace gpuctk::test
