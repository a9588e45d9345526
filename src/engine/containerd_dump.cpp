#include "engine/containerd_dump.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "engine/configure.hpp"
#include "util/child_wait.hpp"
#include "util/fd.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::engine {

namespace {

constexpr std::string_view k_default_executable = "containerd";
// The PATH of a process started without one (glibc's execvp uses a shorter one; this is systemd's).
constexpr std::string_view k_default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string search_path() {
  const char* path = std::getenv("PATH");
  return path != nullptr && *path != '\0' ? std::string(path) : std::string(k_default_path);
}

std::string exit_phrase(int status) {
  if (WIFEXITED(status)) {
    return "exited " + std::to_string(WEXITSTATUS(status)) + " (its messages are above)";
  }
  const char* abbrev = ::sigabbrev_np(WTERMSIG(status));
  return "killed by " +
         (abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(WTERMSIG(status)));
}

// What the child needs, made before the fork: after it the child only makes system calls.
struct ChildPlan {
  const char* program;
  char* const* argv;
  char* const* envp;
  int input;   // /dev/null
  int output;  // the write end of the pipe
  int report;  // the write end of a close-on-exec pipe: the errno of a failed exec
};

[[noreturn]] void exec_child(const ChildPlan& plan) {
  if (::dup2(plan.input, STDIN_FILENO) >= 0 && ::dup2(plan.output, STDOUT_FILENO) >= 0) {
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(plan.program, plan.argv, plan.envp);
  }
  const int err = errno;
  [[maybe_unused]] const ssize_t n = ::write(plan.report, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

Result<std::string> resolve_executable(const std::string& executable) {
  const std::string name = executable.empty() ? std::string(k_default_executable) : executable;
  if (name.find('/') != std::string::npos) {
    if (!name.starts_with('/')) {
      return fail("executable path " + quote(name) + ": not an absolute path");
    }
    return name;
  }
  const std::string dirs = search_path();
  for (const std::string_view dir : split(dirs, ':')) {
    if (!dir.starts_with('/')) {
      continue;  // a relative PATH entry would depend on the working directory
    }
    std::string candidate = clean_path(std::string(dir) + "/" + name);
    if (is_executable_file(candidate)) {
      return candidate;
    }
  }
  return fail(name + ": not found in PATH (" + dirs + ")");
}

Result<std::string> containerd_config_dump(const std::string& executable, const std::string& config_path,
                                           std::chrono::milliseconds timeout) {
  GPUCTK_TRY_ASSIGN(const std::string program, resolve_executable(executable));
  const std::string what = program + " --config " + config_path + " config dump";
  const std::string path_env = "PATH=" + search_path();
  const std::array<const char*, 6> argv = {program.c_str(), "--config", config_path.c_str(),
                                           "config",        "dump",     nullptr};
  const std::array<const char*, 2> envp = {path_env.c_str(), nullptr};
  const UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) {
    return fail_errno(what + ": open /dev/null", errno);
  }
  std::array<int, 2> out_fds = {-1, -1};
  std::array<int, 2> report_fds = {-1, -1};
  if (::pipe2(out_fds.data(), O_CLOEXEC) != 0) {
    return fail_errno(what + ": pipe", errno);
  }
  UniqueFd out_read(out_fds[0]);
  UniqueFd out_write(out_fds[1]);
  if (::pipe2(report_fds.data(), O_CLOEXEC) != 0) {
    return fail_errno(what + ": pipe", errno);
  }
  UniqueFd report_read(report_fds[0]);
  UniqueFd report_write(report_fds[1]);
  const ChildPlan plan{.program = program.c_str(),
                       .argv = const_cast<char* const*>(argv.data()),
                       .envp = const_cast<char* const*>(envp.data()),
                       .input = null.get(),
                       .output = out_write.get(),
                       .report = report_write.get()};
  sigset_t all;
  sigset_t old;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);  // no handler of this process runs in the child
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(plan);
  }
  const int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    return fail_errno(what + ": fork", fork_errno);
  }
  out_write.reset();
  report_write.reset();
  std::string text;
  GPUCTK_TRY_ASSIGN(const ChildExit end,
                    finish_child(what, pid, report_read.get(), std::chrono::steady_clock::now() + timeout,
                                 out_read.get(), &text, k_max_config_file + 1));
  if (end.killed_at_deadline) {
    return fail(what + ": still running after " + std::to_string(timeout.count() / 1000) + " s: killed");
  }
  if (text.size() > k_max_config_file) {
    return fail(what + ": printed more than " + std::to_string(k_max_config_file) + " bytes");
  }
  if (!WIFEXITED(end.status) || WEXITSTATUS(end.status) != 0) {
    return fail(what + ": " + exit_phrase(end.status));
  }
  return text;
}

}  // namespace gpuctk::engine
