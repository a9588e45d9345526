#include "oci/hook_run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/child_wait.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::oci {

namespace {

// How much of the hook's output an error quotes from.
constexpr size_t k_output_read = 4096;

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// The first line the hook wrote, quoted and escaped; "" when it wrote nothing.
std::string first_output_line(int fd) {
  std::string text(k_output_read, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  const auto line = trim(std::string_view(text).substr(0, text.find('\n')));
  return line.empty() ? std::string() : ": " + quote(escape_for_log(line, 512));
}

// Waits for `pid`; with a timeout, through a pidfd (Linux 5.3), killing it when the time is up.
Result<int> wait_for(pid_t pid, std::optional<int> timeout, const std::string& what, bool& timed_out) {
  if (timeout && *timeout > 0) {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (pidfd) {
      auto end =
          wait_child(pidfd.get(), pid, std::chrono::steady_clock::now() + std::chrono::seconds(*timeout));
      if (!end) {
        return fail_with(what, end.error());
      }
      timed_out = end->killed_at_deadline;
      return end->status;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return fail_errno(what + ": waitpid", errno);
    }
  }
  return status;
}

// `fd` moved to a number above the standard streams (close-on-exec), so that making the child's 0, 1
// and 2 never closes it.
int above_standard_streams(int fd) {
  if (fd > STDERR_FILENO) {
    return fd;
  }
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  ::close(fd);
  return moved;
}

// What the forked child needs, prepared before the fork: after it the child only makes system calls
// that are safe there (no allocation).
struct ChildPlan {
  int program;  // O_PATH fd of the program
  int input;    // the state (memfd), becomes stdin
  int output;   // the output (memfd), becomes stdout and stderr
  int report;   // write end of a close-on-exec pipe: the errno of a failed exec
  char* const* argv;
  char* const* envp;
};

// In the child: the standard streams, default signal handling and an empty mask (as a runtime gives a
// hook), then the program from its fd. Returns only if something failed; the errno goes to `report`.
[[noreturn]] void exec_child(const ChildPlan& plan) {
  // Not close-on-exec: a script's interpreter opens the script as /dev/fd/<program>.
  const int program = ::fcntl(plan.program, F_DUPFD, STDERR_FILENO + 1);
  const bool streams = program >= 0 && ::dup2(plan.input, STDIN_FILENO) >= 0 &&
                       ::dup2(plan.output, STDOUT_FILENO) >= 0 && ::dup2(plan.output, STDERR_FILENO) >= 0;
  // dup2 of an fd onto itself leaves close-on-exec set (a hook runner started without stdin: the
  // memfd is already 0).
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    ::fcntl(fd, F_SETFD, 0);
  }
  if (streams) {
    struct sigaction deflt {};
    deflt.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
      ::sigaction(sig, &deflt, nullptr);  // SIGKILL, SIGSTOP and glibc's own signals refuse: fine
    }
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execveat(program, "", plan.argv, plan.envp, AT_EMPTY_PATH);
  }
  const int err = errno;
  [[maybe_unused]] const ssize_t n = ::write(plan.report, &err, sizeof err);
  ::_exit(127);
}

// Forks and execs the child of `plan`; the pid, or the errno of the failed exec (after reaping it).
Result<pid_t> spawn(const ChildPlan& plan, const std::string& what) {
  sigset_t all;
  sigset_t old;
  ::sigfillset(&all);
  // No handler of this process may run in the child before its signals are reset.
  ::sigprocmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(plan);
  }
  const int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    return fail_errno(what + ": fork", fork_errno);
  }
  return pid;
}

}  // namespace

Result<OpenedHook> open_hook(HookCommand hook) {
  UniqueFd program(::open(hook.path.c_str(), O_PATH | O_CLOEXEC));
  if (!program) {
    return fail_errno("hook " + hook.path, errno);
  }
  return OpenedHook{std::move(hook), std::move(program)};
}

Result<void> run_hook(const OpenedHook& opened, std::string_view state) {
  const HookCommand& hook = opened.command;
  const std::string what = "hook " + hook.path;
  // Files, not pipes: nothing can block however much the hook writes or leaves unread.
  UniqueFd input(::memfd_create("gpuctk-hook-state", MFD_CLOEXEC));
  UniqueFd output(::memfd_create("gpuctk-hook-output", MFD_CLOEXEC));
  if (!input || !output) {
    return fail_errno(what + ": memfd_create", errno);
  }
  if (const int err = write_all(input.get(), state); err != 0) {
    return fail_errno(what + ": write the state", err);
  }
  if (::lseek(input.get(), 0, SEEK_SET) != 0) {
    return fail_errno(what + ": lseek", errno);
  }
  int ends[2] = {-1, -1};
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    return fail_errno(what + ": pipe", errno);
  }
  UniqueFd report_read(above_standard_streams(ends[0]));
  UniqueFd report_write(above_standard_streams(ends[1]));
  if (!report_read || !report_write) {
    return fail_errno(what + ": pipe", errno);
  }
  std::vector<std::string> args = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  std::vector<std::string> env = hook.env;
  auto argv = c_strings(args);
  auto envp = c_strings(env);
  const ChildPlan plan{opened.program.get(), input.get(), output.get(),
                       report_write.get(),   argv.data(), envp.data()};
  GPUCTK_TRY_ASSIGN(const pid_t pid, spawn(plan, what));
  report_write.reset();
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(report_read.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  bool timed_out = false;
  GPUCTK_TRY_ASSIGN(const int status, wait_for(pid, got > 0 ? std::nullopt : hook.timeout, what, timed_out));
  if (got > 0) {
    return fail_errno(what, exec_errno);
  }
  if (timed_out) {
    return fail(what + ": killed by signal " + std::to_string(SIGKILL) + " after its timeout of " +
                std::to_string(*hook.timeout) + " s" + first_output_line(output.get()));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return {};
  }
  const std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                            : "killed by signal " + std::to_string(WTERMSIG(status));
  return fail(what + ": " + how + first_output_line(output.get()));
}

Result<void> run_hook(const HookCommand& hook, std::string_view state) {
  GPUCTK_TRY_ASSIGN(const auto opened, open_hook(hook));
  return run_hook(opened, state);
}

}  // namespace gpuctk::oci
