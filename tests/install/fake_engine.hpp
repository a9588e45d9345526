#pragma once
// A stand-in for an engine's daemon in the restart tests: a process that serves a unix socket, running a
// copy of tests/install/fake_engine_daemon.cpp named as the daemon (containerd, dockerd; systemd for the
// socket activation's listener), so that its /proc/<pid>/exe is what gpuctk checks before it signals.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"

namespace gpuctk::test {

// A process named `name` that listens on `path`, says so through a pipe, then waits for SIGTERM or
// SIGHUP and exits with the signal's number.
class FakeEngine {
 public:
  explicit FakeEngine(const std::string& path, const std::string& name = "containerd")
      // beside the built daemon, not in $TMPDIR, which may be mounted noexec
      : m_bin("gpuctk-fake-engine", std::filesystem::path(GPUCTK_FAKE_ENGINE).parent_path()) {
    const std::string exe = m_bin.path() + "/" + name;
    std::filesystem::copy_file(GPUCTK_FAKE_ENGINE, exe);
    std::filesystem::permissions(exe, std::filesystem::perms(0755));
    int ready[2];
    EXPECT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    m_pid = ::fork();
    if (m_pid == 0) {
      // fd 3 without O_CLOEXEC (dup2 onto itself would keep the flag)
      const bool at_3 = ready[1] == 3 ? ::fcntl(3, F_SETFD, 0) == 0 : ::dup2(ready[1], 3) == 3;
      if (at_3) {
        const char* argv[] = {name.c_str(), path.c_str(), nullptr};
        ::execv(exe.c_str(), const_cast<char* const*>(argv));
      }
      ::_exit(127);
    }
    ::close(ready[1]);
    char byte = 0;
    EXPECT_EQ(::read(ready[0], &byte, 1), 1) << "the fake engine did not listen";
    ::close(ready[0]);
  }
  FakeEngine(const FakeEngine&) = delete;
  FakeEngine& operator=(const FakeEngine&) = delete;
  ~FakeEngine() {
    if (m_pid > 0) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
  }
  [[nodiscard]] pid_t pid() const { return m_pid; }
  // The exit status, once it exited (the signal it got).
  int wait() {
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Whether it still runs (it got no signal).
  [[nodiscard]] bool running() const { return m_pid > 0 && ::waitpid(m_pid, nullptr, WNOHANG) == 0; }

 private:
  TempDir m_bin;
  pid_t m_pid = -1;
};

}  // namespace gpuctk::test
