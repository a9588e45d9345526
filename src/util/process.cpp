#include "util/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "util/file.hpp"

namespace gpuctk {

Result<Process> Process::open(int pid) {
  const std::string what = "process " + std::to_string(pid);
  if (pid <= 0) {
    return fail_errno(what, ESRCH);
  }
  Process process;
  process.m_pid = pid;
  process.m_pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!process.m_pidfd && errno != ENOSYS) {
    return fail_errno(what, errno);
  }
  process.m_proc_dir.reset(::open(process.proc_path("").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!process.m_proc_dir) {
    return fail_errno(what, errno == ENOENT ? ESRCH : errno);
  }
  // Signal 0 to the pidfd: its process still holds the pid, so the directory just opened is its own.
  if (process.m_pidfd && ::syscall(SYS_pidfd_send_signal, process.m_pidfd.get(), 0, nullptr, 0) != 0) {
    return fail_errno(what, errno);
  }
  return process;
}

std::string Process::proc_path(std::string_view name) const {
  std::string path = "/proc/" + std::to_string(m_pid);
  if (!name.empty()) {
    path.append("/").append(name);
  }
  return path;
}

Result<std::string> Process::read(std::string_view name, size_t max_size) const {
  const std::string what = proc_path(name);
  UniqueFd fd(::openat(m_proc_dir.get(), std::string(name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    return fail_errno("read " + what, errno_for(errno));
  }
  return read_fd(fd.get(), what, max_size);
}

int Process::errno_for(int err) const {
  if (err == ENOENT && m_pidfd && ::syscall(SYS_pidfd_send_signal, m_pidfd.get(), 0, nullptr, 0) != 0 &&
      errno == ESRCH) {
    return ESRCH;
  }
  return err;
}

}  // namespace gpuctk
