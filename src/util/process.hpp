#pragma once
// A process named by its pid, held so that another process that later gets the same pid is never taken
// for it. Opened in this order: a pidfd (Linux 5.3), then the process's /proc/<pid> directory, then the
// pidfd asked whether its process is still there. A pid is reused only after its process has been reaped
// (a zombie still holds it), so a directory opened while the pidfd's process was there is that process's;
// and a /proc/<pid> directory fd never serves another process's files, even after the pid is reused
// (they fail with ESRCH/ENOENT). Everything read about the process goes through that directory.

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk {

class Process {
 public:
  // Errors name the pid: "process 42: No such process" (no such process, or it went away while it was
  // being opened).
  static Result<Process> open(int pid);

  [[nodiscard]] int pid() const { return m_pid; }
  // -1 where the kernel has no pidfd_open (before Linux 5.3).
  [[nodiscard]] int pidfd() const { return m_pidfd.get(); }
  // /proc/<pid> (O_PATH, a directory): the dirfd of every *at() call about this process.
  [[nodiscard]] int proc_dir() const { return m_proc_dir.get(); }
  // "/proc/<pid>/<name>", for messages.
  [[nodiscard]] std::string proc_path(std::string_view name) const;

  // The file `name` of /proc/<pid> ("cgroup"), at most `max_size` bytes. Errors name it:
  // "read /proc/42/cgroup: No such process".
  [[nodiscard]] Result<std::string> read(std::string_view name, size_t max_size) const;

  // `err`, the errno of a failed call through proc_dir(), or ESRCH when the process has gone since (the
  // files of a reaped process fail with ENOENT on some kernels, ESRCH on others): one message for it.
  [[nodiscard]] int errno_for(int err) const;

 private:
  int m_pid = 0;
  UniqueFd m_pidfd;
  UniqueFd m_proc_dir;
};

}  // namespace gpuctk
