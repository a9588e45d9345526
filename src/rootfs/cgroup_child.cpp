#include "rootfs/cgroup_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include "util/child_wait.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"

namespace gpuctk::rootfs {

namespace {

// How long the child may take: what it runs (hooks, sandboxed programs) has deadlines of its own, so this
// only bounds a child that hangs itself.
constexpr auto k_cgroup_child_deadline = std::chrono::minutes(5);

// The most of the child's error message that comes back.
constexpr size_t k_max_message = 64 << 10;

struct ChildPipes {
  UniqueFd go_read;  // the child waits for a byte here: it is in its v1 cgroup then
  UniqueFd go_write;
  UniqueFd message_read;  // the child's error message, if any
  UniqueFd message_write;
};

Result<ChildPipes> make_pipes() {
  int go[2];
  int message[2];
  if (::pipe2(go, O_CLOEXEC) != 0) {
    return fail_errno("run in the container's cgroups: pipe", errno);
  }
  ChildPipes pipes{UniqueFd(go[0]), UniqueFd(go[1]), {}, {}};
  if (::pipe2(message, O_CLOEXEC) != 0) {
    return fail_errno("run in the container's cgroups: pipe", errno);
  }
  pipes.message_read.reset(message[0]);
  pipes.message_write.reset(message[1]);
  return pipes;
}

// The child's side: waits to be placed, runs `body`, leaves with 0 or with its message and 1.
[[noreturn]] void child_side(ChildPipes& pipes, const std::function<Result<void>()>& body) {
  pipes.go_write.reset();
  pipes.message_read.reset();
  char byte = 0;
  if (::read(pipes.go_read.get(), &byte, 1) != 1) {
    ::_exit(2);  // the parent could not place it: it runs nothing
  }
  const auto result = body();
  if (!result) {
    (void)write_all(pipes.message_write.get(), result.error().message);
  }
  ::_exit(result ? 0 : 1);
}

// clone3 like fork, into `cgroup`'s v2 directory when there is one; the child runs child_side.
Result<pid_t> start(const SandboxCgroup& cgroup, ChildPipes& pipes, const std::function<Result<void>()>& body,
                    int& pidfd) {
  sigset_t old;
  const long pid = clone_into_cgroup(0, &cgroup, pidfd, old);
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    child_side(pipes, body);
  }
  if (pid < 0) {
    return fail_errno("start a child in cgroup " + (cgroup.v2 ? cgroup.v2_dir : cgroup.v1_dir), errno);
  }
  return static_cast<pid_t>(pid);
}

}  // namespace

Result<void> run_in_cgroup(const SandboxCgroup& cgroup, const std::function<Result<void>()>& body) {
  GPUCTK_TRY_ASSIGN(auto pipes, make_pipes());
  int raw_pidfd = -1;
  GPUCTK_TRY_ASSIGN(const pid_t pid, start(cgroup, pipes, body, raw_pidfd));
  const UniqueFd pidfd(raw_pidfd);
  pipes.go_read.reset();
  pipes.message_write.reset();
  const auto deadline = std::chrono::steady_clock::now() + k_cgroup_child_deadline;
  std::string placed_error;
  if (cgroup.v1_procs) {
    if (const int err = write_all(cgroup.v1_procs.get(), std::to_string(pid)); err != 0) {
      placed_error = "move a child into cgroup " + cgroup.v1_dir + ": " + std::strerror(err);
    }
  }
  if (placed_error.empty() && ::write(pipes.go_write.get(), "g", 1) != 1) {
    placed_error = std::string("start a child in the container's cgroups: ") + std::strerror(errno);
  }
  pipes.go_write.reset();  // without the byte, the child leaves at once
  std::string message;
  GPUCTK_TRY_ASSIGN(const auto exit, wait_child(pidfd.get(), pid, deadline, pipes.message_read.get(),
                                                &message, k_max_message));
  if (!placed_error.empty()) {
    return fail(placed_error);
  }
  if (WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 0) {
    return {};
  }
  if (WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 1 && !message.empty()) {
    return fail(message);
  }
  return fail("the child in the container's cgroups ended with status " + std::to_string(exit.status) +
              (exit.killed_at_deadline ? " (killed at its deadline)" : ""));
}

}  // namespace gpuctk::rootfs
