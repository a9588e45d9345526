// The restart tests' stand-in for an engine's daemon, run under the daemon's own file name (a copy named
// containerd, dockerd, systemd, ...) so that /proc/<pid>/exe names it as the real daemon's would.
//   usage: <name> SOCKET
// Listens on SOCKET, writes one byte to fd 3 once it does, then waits for SIGTERM or SIGHUP and exits with
// the signal's number; 100 when it cannot listen.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) {
    return 101;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, argv[1], sizeof(address.sun_path) - 1);
  ::unlink(argv[1]);  // an earlier engine's socket, as daemons remove theirs
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(fd, 4) != 0) {
    return 100;
  }
  if (::write(3, "x", 1) != 1) {
    return 102;
  }
  ::close(3);
  int sig = 0;
  ::sigwait(&set, &sig);
  return sig;
}
