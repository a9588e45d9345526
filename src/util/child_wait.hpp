#pragma once
// Waiting for a child process with a deadline, through its pidfd (Linux 5.3): the wait ends when the
// child exits or when the deadline passes, whichever comes first; at the deadline the child is killed
// (SIGKILL, through the pidfd) and reaped. A child that blocks for ever (a hook that hangs, a program
// stuck opening a FIFO of an image) so never holds its parent, and the container start, past the
// deadline. Used by oci::run_hook (a hook's timeout) and rootfs::run_sandboxed (the sandbox's deadline).

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

#include "util/error.hpp"

namespace gpuctk {

using Deadline = std::chrono::steady_clock::time_point;

// Polls `fds` until one of them is ready or `deadline` passes; an interrupted poll goes on for the time
// left, never the whole wait again. Returns how many are ready (0: the deadline passed). Errors: "poll:
// <errno>".
Result<int> poll_until(std::span<pollfd> fds, Deadline deadline);

// How a waited-for child ended.
struct ChildExit {
  int status = 0;                   // as waitpid(2) gives it
  bool killed_at_deadline = false;  // it was still running at the deadline and was killed
};

// Waits for the child `pid`, whose pidfd is `pidfd`, until `deadline`, kills it then if it is still
// running, and reaps it. While it waits, what the child writes on `output` (the read end of a pipe whose
// other end only the child holds; -1 for none) is read as it comes, so that the child never blocks on a
// full pipe: the first `max_output` bytes are appended to `*text`, the rest read and dropped. Errors:
// "waitpid: <errno>", "read the output: <errno>".
Result<ChildExit> wait_child(int pidfd, pid_t pid, Deadline deadline, int output = -1,
                             std::string* text = nullptr, size_t max_output = 0);

// The end of a child this process just forked to exec a program, which writes exec's errno on `report`
// (the read end of its close-on-exec report pipe) when the exec fails: held by a pidfd (where that cannot
// be opened it is killed and reaped), waited for with wait_child (its `output` into `*text`), and its
// report read. Errors, prefixed with `what`: "<what>: pidfd_open: <errno>", wait_child's, "<what>: exec:
// <errno>". Whether it was killed at the deadline or how it exited is the caller's to say.
Result<ChildExit> finish_child(const std::string& what, pid_t pid, int report, Deadline deadline, int output,
                               std::string* text, size_t max_output);

}  // namespace gpuctk
