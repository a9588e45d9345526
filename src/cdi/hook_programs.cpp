#include "cdi/hook_programs.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include "util/fd.hpp"

namespace gpuctk::cdi {

namespace {

// The one error line every gpuctk prints (cli::report): a program without it is not gpuctk.
constexpr std::string_view k_gpuctk_marker = "gpuctk: error: ";
// A gpuctk binary is a few MiB (tens with debug information); a larger file is not searched.
constexpr off_t k_max_searched_size = off_t{256} << 20;

// Temporary directories: what is there may be cleaned away at any time, or at the next boot.
constexpr std::string_view k_temporary_dirs[] = {"/tmp", "/var/tmp", "/dev/shm"};

enum class ProgramState : uint8_t { executable, missing, not_executable };

ProgramState program_state(const std::string& path, struct stat& st) {
  if (::stat(path.c_str(), &st) != 0) {
    return ProgramState::missing;
  }
  // Hooks run as root: any execute bit is enough for root.
  return S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0 ? ProgramState::executable
                                                         : ProgramState::not_executable;
}

bool same_file(const struct stat& a, const char* path) {
  struct stat b {};
  return ::stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Whether the file holds gpuctk's error line (mapped, searched once).
bool has_marker(const std::string& path, const struct stat& st) {
  if (st.st_size <= 0 || st.st_size > k_max_searched_size) {
    return false;
  }
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return false;
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) {
    return false;
  }
  const std::string_view bytes(static_cast<const char*>(data), size);
  const bool found = bytes.find(k_gpuctk_marker) != std::string_view::npos;
  ::munmap(data, size);
  return found;
}

bool is_under(std::string_view path, std::string_view dir) {
  return dir.size() > 1 && path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

std::string temporary_dir_of(const std::string& path) {
  for (const auto dir : k_temporary_dirs) {
    if (is_under(path, dir)) {
      return std::string(dir);
    }
  }
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && tmpdir[0] == '/') {
    std::string dir(tmpdir);
    while (dir.size() > 1 && dir.back() == '/') {
      dir.pop_back();
    }
    if (is_under(path, dir)) {
      return dir;
    }
  }
  return {};
}

// The CMakeCache.txt of the nearest directory above `path` that has one; "" when none does.
std::string build_tree_of(const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  while (!dir.empty()) {
    const std::string cache = dir + "/CMakeCache.txt";
    if (struct stat st{}; ::stat(cache.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      return cache;
    }
    dir = dir.substr(0, dir.rfind('/'));
  }
  return {};
}

}  // namespace

std::vector<std::string> missing_hook_programs(const Spec& spec) {
  std::vector<const Hook*> hooks;
  for (const auto& hook : spec.container_edits.hooks) {
    hooks.push_back(&hook);
  }
  for (const auto& device : spec.devices) {
    for (const auto& hook : device.container_edits.hooks) {
      hooks.push_back(&hook);
    }
  }
  std::vector<std::string> lines;
  std::set<std::string_view> seen;
  for (const auto* hook : hooks) {
    if (!seen.insert(hook->path).second) {
      continue;
    }
    struct stat st {};
    const auto state = program_state(hook->path, st);
    if (state != ProgramState::executable) {
      lines.push_back("hook program " + hook->path +
                      (state == ProgramState::missing ? " does not exist" : " is not an executable file") +
                      ": every container given a device of this spec fails");
    }
  }
  return lines;
}

std::vector<std::string> hook_path_problems(const std::string& path) {
  struct stat st {};
  switch (program_state(path, st)) {
    case ProgramState::missing:
      return {path + " does not exist"};
    case ProgramState::not_executable:
      return {path + " is not an executable file"};
    case ProgramState::executable:
      break;
  }
  std::vector<std::string> problems;
  if (!same_file(st, "/proc/self/exe") && !has_marker(path, st)) {
    problems.push_back(path + " is not gpuctk");
  }
  if (const auto dir = temporary_dir_of(path); !dir.empty()) {
    problems.push_back(path + " lies under a temporary directory (" + dir + ")");
  }
  if (const auto cache = build_tree_of(path); !cache.empty()) {
    problems.push_back(path + " lies in a build tree (" + cache + ")");
  }
  return problems;
}

}  // namespace gpuctk::cdi
