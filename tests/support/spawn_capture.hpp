#pragma once
// Runs a program as the tests' subject: to its end, with stdin from a file and stdout and stderr captured
// through files (spawn_capture), or in the background with both into one file (spawn_logged); or a shell
// command line with the tests' own environment, its stdout captured (run_shell). The one capture helper
// of the tests: cli/run_gpuctk.hpp runs gpuctk with it, rootfs/rootfs_test_support.hpp the hooks as a
// runtime would, the --watch tests their daemons, the fixture builder's tests its command and tools.

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "util/file.hpp"

namespace gpuctk::test {

struct Captured {
  int exit_code = -1;  // -1: did not start or did not exit normally
  std::string out;
  std::string err;
  long max_rss_kib = 0;  // the child's peak resident set size (getrusage's ru_maxrss)
};

// `program args...` with exactly the environment `env` (nothing inherited) and stdin from `stdin_path`;
// the output goes through `scratch_dir`/.stdout and .stderr, removed afterwards.
namespace spawn_detail {

// argv or envp for posix_spawn over `storage`, which must outlive it.
inline std::vector<char*> pointers(std::vector<std::string>& storage) {
  std::vector<char*> out;
  for (auto& item : storage) {
    out.push_back(item.data());
  }
  out.push_back(nullptr);
  return out;
}

}  // namespace spawn_detail

// `program args...` started in the background with exactly the environment `env`, stdin /dev/null,
// stdout and stderr both to `log_path` (truncated); its pid, or -1 when it could not start. The caller
// signals and reaps it.
inline pid_t spawn_logged(const std::string& program, const std::vector<std::string>& args,
                          std::vector<std::string> env, const std::string& log_path) {
  std::vector<std::string> argv_storage{program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  const auto argv = spawn_detail::pointers(argv_storage);
  const auto envp = spawn_detail::pointers(env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return spawned == 0 ? pid : -1;
}

inline Captured spawn_capture(const std::string& program, const std::vector<std::string>& args,
                              const std::vector<std::string>& env, const std::string& stdin_path,
                              const std::string& scratch_dir) {
  Captured result;
  const std::string out_path = scratch_dir + "/.stdout";
  const std::string err_path = scratch_dir + "/.stderr";
  std::vector<std::string> argv_storage{program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  const auto argv = spawn_detail::pointers(argv_storage);
  std::vector<std::string> env_storage = env;
  const auto envp = spawn_detail::pointers(env_storage);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    result.err = "posix_spawn failed";
    return result;
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.max_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  result.out = read_file(out_path).value_or("");
  result.err = read_file(err_path).value_or("");
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  return result;
}

// What a `sh -c` command line printed on stdout (add ` 2>&1` for stderr too) and how it exited: its exit
// status, or -1 when it did not start or did not exit normally.
struct ShellRun {
  int exit_code = -1;
  std::string out;
};

inline ShellRun run_shell(const std::string& command) {
  ShellRun result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return result;
  }
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    result.out.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace gpuctk::test
