// peak_rss COMMAND [ARGS...]: runs the command (stdout to /dev/null) and prints "peak_rss_kib <N>" — the
// child's maximum resident set size from wait4(2). Exit status: the command's.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: peak_rss COMMAND [ARGS...]\n");
    return 2;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("peak_rss: fork");
    return 1;
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, 1);
    }
    ::execvp(argv[1], argv + 1);
    std::perror("peak_rss: exec");
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) < 0) {
    std::perror("peak_rss: wait4");
    return 1;
  }
  std::printf("peak_rss_kib %ld\n", usage.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
