#pragma once
// A stand-in for an engine's daemon in the restart tests: a forked process that serves a unix socket.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace gpuctk::test {

// A forked process that listens on `path` (an engine), says so through a pipe, then waits for SIGTERM
// or SIGHUP and exits with the signal's number.
class FakeEngine {
 public:
  explicit FakeEngine(const std::string& path) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    m_pid = ::fork();
    if (m_pid == 0) {
      ::sigprocmask(SIG_BLOCK, &set, nullptr);
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
      ::unlink(path.c_str());  // an earlier engine's socket, as daemons remove theirs
      if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(fd, 4) != 0) {
        ::_exit(100);
      }
      (void)!::write(ready[1], "x", 1);
      int sig = 0;
      ::sigwait(&set, &sig);
      ::_exit(sig);
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
  pid_t m_pid = -1;
};

}  // namespace gpuctk::test
