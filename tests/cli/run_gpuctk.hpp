#pragma once
// Runs the real gpuctk binary (GPUCTK_BINARY) and captures its exit code, stdout and stderr.

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "support/spawn_capture.hpp"

extern char** environ;

namespace gpuctk::test {

using RunResult = Captured;

// The line gpuctk wrote to stderr for a usage error (exit status 2); for any other exit, the status and
// stderr ("exit 0: …"), which no expected usage error equals.
inline std::string usage_error(const RunResult& r) {
  return r.exit_code == 2 ? r.err : "exit " + std::to_string(r.exit_code) + ": " + r.err;
}

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

// Runs `gpuctk args...` with stdin from /dev/null (or options.stdin_path) and this process's environment
// after options.env; output goes through files in `scratch_dir`.
inline RunResult run_gpuctk(const std::vector<std::string>& args, const std::string& scratch_dir,
                            const RunOptions& options = {}) {
  std::vector<std::string> env = options.env;
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  return spawn_capture(options.program, args, env, options.stdin_path, scratch_dir);
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
