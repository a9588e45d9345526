#include "oci/hook_run.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::oci {

namespace {

// How much of the hook's output an error quotes from.
constexpr size_t k_output_read = 4096;

class SpawnActions {
 public:
  SpawnActions() { ::posix_spawn_file_actions_init(&m_actions); }
  ~SpawnActions() { ::posix_spawn_file_actions_destroy(&m_actions); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  posix_spawn_file_actions_t* get() { return &m_actions; }

 private:
  posix_spawn_file_actions_t m_actions{};
};

class SpawnAttributes {
 public:
  SpawnAttributes() { ::posix_spawnattr_init(&m_attr); }
  ~SpawnAttributes() { ::posix_spawnattr_destroy(&m_attr); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  posix_spawnattr_t* get() { return &m_attr; }

 private:
  posix_spawnattr_t m_attr{};
};

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
      pollfd p{pidfd.get(), POLLIN, 0};
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*timeout);
      int ready = 0;
      do {
        // An interrupted wait goes on for the time left, not the whole timeout again.
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      } while (ready < 0 && errno == EINTR);
      if (ready == 0) {
        timed_out = true;
        ::kill(pid, SIGKILL);
      }
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

}  // namespace

Result<void> run_hook(const HookCommand& hook, std::string_view state) {
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
  SpawnActions actions;
  ::posix_spawn_file_actions_adddup2(actions.get(), input.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), output.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), output.get(), STDERR_FILENO);
  SpawnAttributes attributes;
  sigset_t none;
  sigset_t all;
  ::sigemptyset(&none);
  ::sigfillset(&all);
  ::posix_spawnattr_setsigmask(attributes.get(), &none);
  ::posix_spawnattr_setsigdefault(attributes.get(), &all);
  ::posix_spawnattr_setflags(attributes.get(), POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  std::vector<std::string> env = hook.env;
  auto argv = c_strings(args);
  auto envp = c_strings(env);
  pid_t pid = 0;
  if (const int err =
          ::posix_spawn(&pid, hook.path.c_str(), actions.get(), attributes.get(), argv.data(), envp.data());
      err != 0) {
    return fail_errno(what, err);
  }
  bool timed_out = false;
  GPUCTK_TRY_ASSIGN(const int status, wait_for(pid, hook.timeout, what, timed_out));
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

}  // namespace gpuctk::oci
