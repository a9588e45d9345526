#include "util/child_wait.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "util/fd.hpp"

namespace gpuctk {

namespace {

// Appends what is in `output` now to `*text` (up to `max_output` bytes in all). Returns false at end of
// file (every writer gone), true while the pipe is open.
Result<bool> read_output(int output, std::string* text, size_t max_output) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(output, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      return true;
    }
    if (n < 0) {
      return fail_errno("read the output", errno);
    }
    if (n == 0) {
      return false;
    }
    if (text != nullptr && text->size() < max_output) {
      text->append(buffer, std::min(static_cast<size_t>(n), max_output - text->size()));
    }
  }
}

}  // namespace

Result<int> poll_until(std::span<pollfd> fds, Deadline deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready >= 0) {
      return ready;
    }
    if (errno != EINTR) {
      return fail_errno("poll", errno);
    }
  }
}

Result<ChildExit> wait_child(int pidfd, pid_t pid, Deadline deadline, int output, std::string* text,
                             size_t max_output) {
  ChildExit end;
  bool open = output >= 0;
  if (open && ::fcntl(output, F_SETFL, ::fcntl(output, F_GETFL) | O_NONBLOCK) != 0) {
    return fail_errno("read the output", errno);
  }
  for (;;) {
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {open ? output : -1, POLLIN, 0}};
    GPUCTK_TRY_ASSIGN(const int ready, poll_until(fds, deadline));
    if (ready == 0) {
      end.killed_at_deadline = true;
      ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
      break;
    }
    if (fds[1].revents != 0) {
      GPUCTK_TRY_ASSIGN(open, read_output(output, text, max_output));
    }
    if (fds[0].revents != 0) {
      break;  // exited: what it wrote before is in the pipe, read below
    }
  }
  while (::waitpid(pid, &end.status, 0) < 0) {
    if (errno != EINTR) {
      return fail_errno("waitpid", errno);
    }
  }
  if (open) {
    GPUCTK_TRY(read_output(output, text, max_output));
  }
  return end;
}

Result<ChildExit> finish_child(const std::string& what, pid_t pid, int report, Deadline deadline, int output,
                               std::string* text, size_t max_output) {
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    const int err = errno;
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return fail_errno(what + ": pidfd_open", err);
  }
  auto end = wait_child(pidfd.get(), pid, deadline, output, text, max_output);
  if (!end) {
    return fail_with(what, end.error());
  }
  int exec_errno = 0;
  if (::read(report, &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    return fail_errno(what + ": exec", exec_errno);
  }
  return end;
}

}  // namespace gpuctk
