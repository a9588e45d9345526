#pragma once
// A held process that has gone (util/process.hpp), for the tests that a Process never reaches another
// process once its own is reaped: util, rootfs and cgroup tests share it.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/process.hpp"

namespace gpuctk::test {

struct GoneProcess {
  pid_t pid = -1;
  Result<Process> held;  // opened while the process ran
};

// A child that waits, opened as a Process, then killed and reaped: its pid is free for another process.
inline GoneProcess gone_process() {
  GoneProcess gone;
  gone.pid = ::fork();
  if (gone.pid == 0) {
    ::pause();
    ::_exit(0);
  }
  gone.held = gone.pid > 0 ? Process::open(gone.pid) : fail("fork failed");
  if (gone.pid > 0) {
    ::kill(gone.pid, SIGKILL);
    ::waitpid(gone.pid, nullptr, 0);
  }
  return gone;
}

}  // namespace gpuctk::test
