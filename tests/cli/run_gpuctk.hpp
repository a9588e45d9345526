#pragma once
// Runs the real gpuctk binary (GPUCTK_BINARY) and captures its exit code, stdout and stderr.

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "util/file.hpp"

extern char** environ;

namespace gpuctk::test {

struct RunResult {
  int exit_code = -1;  // -1: did not start or did not exit normally
  std::string out;
  std::string err;
  long max_rss_kib = 0;  // the child's peak resident set size (getrusage's ru_maxrss)
};

// How run_gpuctk starts gpuctk, when not the default.
struct RunOptions {
  std::string program{GPUCTK_BINARY};  // e.g. a link named gpuctk-runtime or nvidia-container-runtime-hook
  std::string stdin_path{"/dev/null"};
  std::vector<std::string> env{};  // added to this process's environment
};

// A link `dir`/bin/`name` to the built gpuctk (bin made as needed): gpuctk run under another name
// (gpuctk-runtime, nvidia-container-runtime-hook, nvidia-cdi-hook; src/main.cpp).
inline std::string link_gpuctk_as(const std::string& dir, const std::string& name) {
  const std::string link = dir + "/bin/" + name;
  std::filesystem::create_directories(dir + "/bin");
  std::filesystem::create_symlink(GPUCTK_BINARY, link);
  return link;
}

// Runs `gpuctk args...` with stdin from /dev/null; output goes through files in `scratch_dir`.
inline RunResult run_gpuctk(const std::vector<std::string>& args, const std::string& scratch_dir,
                            const RunOptions& options = {}) {
  RunResult result;
  const std::string out_path = scratch_dir + "/.stdout";
  const std::string err_path = scratch_dir + "/.stderr";
  std::vector<std::string> argv_storage{options.program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<std::string> env_storage = options.env;
  for (char** e = environ; *e != nullptr; ++e) {
    env_storage.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& var : env_storage) {
    envp.push_back(var.data());
  }
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& arg : argv_storage) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, options.stdin_path.c_str(), O_RDONLY, 0);
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
  while (::wait4(pid, &status, 0, &usage) < 0) {
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

// `err` without the warnings `cdi generate` gives about a hook path that will not last (a build tree's
// gpuctk, a path this host lacks), for tests about the rest of stderr; cli/cdi_generate_test.cpp tests them.
inline std::string without_hook_path_warnings(const std::string& err) {
  std::string kept;
  for (size_t at = 0; at < err.size();) {
    const size_t newline = err.find('\n', at);
    const size_t end = newline == std::string::npos ? err.size() : newline + 1;
    if (err.compare(at, 27, "gpuctk: warning: hook path ") != 0) {
      kept.append(err, at, end - at);
    }
    at = end;
  }
  return kept;
}

}  // namespace gpuctk::test
