#include "oci/runtime_lookup.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "util/strings.hpp"

namespace gpuctk::oci {

namespace {

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : std::string();
}

}  // namespace

std::vector<std::string_view> runtime_search_dirs(std::string_view path_env) {
  std::vector<std::string_view> dirs;
  for (const auto dir : split(path_env, ':')) {
    if (!dir.empty() && dir.front() == '/') {
      dirs.push_back(dir);
    }
  }
  return dirs;
}

Result<std::string> find_runtime(const std::vector<std::string>& runtimes, std::string_view path_env,
                                 const std::string& self) {
  const std::string_view search = path_env.empty() ? k_default_search_path : path_env;
  // An executable regular file (access(X_OK) alone also accepts a directory) that is not gpuctk.
  const auto usable = [&](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0 &&
           real_path(path) != self;
  };
  const auto dirs = runtime_search_dirs(search);
  for (const auto& runtime : runtimes) {
    if (runtime.find('/') != std::string::npos) {
      if (runtime.front() == '/' && usable(runtime)) {
        return runtime;
      }
      continue;
    }
    for (const auto dir : dirs) {
      std::string candidate(dir);
      candidate.append(candidate.back() == '/' ? "" : "/").append(runtime);
      if (usable(candidate)) {
        return candidate;
      }
    }
  }
  return fail("no low-level runtime found (tried " + join(runtimes, ", ") + " on PATH " +
              std::string(search) + ")");
}

}  // namespace gpuctk::oci
