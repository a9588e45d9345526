#include "inject/mps.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "cdi/spec_builder.hpp"
#include "discover/host_fs.hpp"
#include "util/fd.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::inject {

namespace {

struct MpsVariable {
  std::string_view name;                  // "CUDA_MPS_PIPE_DIRECTORY"
  const std::vector<std::string>& roots;  // cleaned absolute host paths (config.cpp checks)
  std::string_view roots_key;             // the config key, as spelled in the file
};

// How far a directory met on the walk is trusted.
enum class Place : uint8_t { above_root, root_or_below };

Result<void> check_owner_and_mode(const struct stat& st, const std::string& path, Place place,
                                  std::string_view variable) {
  const std::string context = std::string(variable) + ": host directory " + path;
  if (st.st_uid != 0) {
    return fail(context + " is owned by uid " + std::to_string(st.st_uid) +
                ", not root (refused: its owner could " + "swap what is mounted)");
  }
  const bool writable_by_others = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  if (writable_by_others && (place == Place::root_or_below || !sticky)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(context + " is writable by group or others (mode " + mode +
                "; refused: they could swap what " + "is mounted)");
  }
  return {};
}

// Walks `host_path` (absolute, clean) from the host's "/" one component at a time with
// O_PATH | O_NOFOLLOW | O_DIRECTORY, checking each directory's fstat; the first `root_components`
// components lead to the MPS root (exclusive). Returns the last directory's O_PATH fd.
Result<UniqueFd> walk_trusted(const std::string& host_path, size_t root_components,
                              std::string_view variable) {
  UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    return fail_errno(std::string(variable) + ": open /", errno);
  }
  std::string walked;
  size_t depth = 0;
  for (const auto component : split(std::string_view(host_path).substr(1), '/')) {
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) {
      return fail_errno(std::string(variable) + ": stat " + (walked.empty() ? "/" : walked), errno);
    }
    GPUCTK_TRY(check_owner_and_mode(st, walked.empty() ? "/" : walked,
                                    depth < root_components ? Place::above_root : Place::root_or_below,
                                    variable));
    if (component.empty()) {
      break;  // host_path is "/"
    }
    walked.append("/").append(component);
    const std::string name(component);
    UniqueFd next(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
    if (!next) {
      const int err = errno;
      struct stat link {};
      if (::fstatat(dir.get(), name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode)) {
        return fail(std::string(variable) + ": host path " + walked +
                    " is a symbolic link (refused: only a " +
                    "path without links, that nobody but root can change, is mounted)");
      }
      if (err == ENOENT) {
        return fail(std::string(variable) + ": host directory " + walked + ": " + std::strerror(err) +
                    " (is the MPS control daemon running?)");
      }
      return fail_errno(std::string(variable) + ": host directory " + walked, err);
    }
    dir = std::move(next);
    ++depth;
  }
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) {
    return fail_errno(std::string(variable) + ": stat " + walked, errno);
  }
  GPUCTK_TRY(check_owner_and_mode(st, walked, Place::root_or_below, variable));
  return dir;
}

// Refuses a directory that has a subdirectory: a daemon's pipe (or log) directory holds only pipes and
// files; a directory of directories is (part of) a tree of daemons.
Result<void> check_leaf(int dir_fd, const std::string& path, std::string_view variable) {
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return fail_errno(std::string(variable) + ": read host directory " + path, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(fd), ::closedir);
  if (!listing) {
    const int err = errno;
    ::close(fd);
    return fail_errno(std::string(variable) + ": read host directory " + path, err);
  }
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    bool is_dir = entry->d_type == DT_DIR;
    if (entry->d_type == DT_UNKNOWN) {
      struct stat st {};
      is_dir = ::fstatat(::dirfd(listing.get()), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISDIR(st.st_mode);
    }
    if (is_dir) {
      return fail(std::string(variable) + ": host directory " + path + " has a subdirectory " + quote(name) +
                  " (refused: only one MPS daemon's directory, which has none, is mounted)");
    }
  }
  return {};
}

// The mount for one MPS variable, or nothing (see above).
Result<std::optional<cdi::Mount>> mps_mount(const nlohmann::ordered_json& config, const MpsVariable& variable,
                                            const std::string& path, const config::Config& cfg,
                                            const config::Log& log) {
  if (const auto destination = mounted_at_or_above(config, path)) {
    log.info(std::string(variable.name) + "=" + path + ": config.json already mounts " + *destination +
             "; no host directory mounted for it");
    return std::nullopt;
  }
  const std::string context = std::string(variable.name) + ": " + quote(path);
  const std::string roots = join(variable.roots, ", ");
  const std::string* root = nullptr;
  for (const auto& candidate : variable.roots) {
    if (path == candidate) {
      return fail(context + " is an MPS root itself (" + roots + "; config key " +
                  std::string(variable.roots_key) + "): only one daemon's directory below a root is mounted");
    }
    if (root == nullptr && path.starts_with(candidate + "/")) {
      root = &candidate;
    }
  }
  if (root == nullptr) {
    return fail(context + " is not mounted by config.json and is not below an MPS root on the host (" +
                (roots.empty() ? std::string("none configured") : roots) + "; config key " +
                std::string(variable.roots_key) + ")");
  }
  const std::string host_root = clean_path(discover::under_root(cfg.dev_root, *root));
  const std::string host_path = clean_path(discover::under_root(cfg.dev_root, path));
  const size_t root_components = static_cast<size_t>(std::ranges::count(host_root, '/'));
  GPUCTK_TRY_ASSIGN(const UniqueFd dir, walk_trusted(host_path, root_components, variable.name));
  GPUCTK_TRY(check_leaf(dir.get(), host_path, variable.name));
  // Why the path string still names the directory checked here when the runtime mounts it later (an fd
  // cannot be handed over: /proc/self/fd/N means nothing to a process that runs afterwards, and the
  // hooks that edit config.json run before the runtime): the walk refused every symlink, so the string
  // resolves, component by component, to exactly the directories walked. Each of them is owned by root;
  // from the MPS root down none is writable by group or others, and above it one writable by others is
  // sticky, where only the owner of an entry (root, checked) may rename or remove it. So nobody but root
  // can rename, replace or mount over any component afterwards, and root needs no trick to mount
  // anything. Should a check fail, nothing is mounted and the container is refused.
  log.info(std::string(variable.name) + "=" + path + ": mounting host directory " + host_path);
  return cdi::Mount{host_path, path, cdi::k_ipc_mount_options, ""};
}

}  // namespace

std::optional<std::string> mounted_at_or_above(const nlohmann::ordered_json& config,
                                               const std::string& path) {
  const auto it = config.find("mounts");
  if (it == config.end() || !it->is_array()) {
    return std::nullopt;
  }
  for (const auto& mount : *it) {
    if (!mount.is_object()) {
      continue;
    }
    const auto destination = mount.find("destination");
    if (destination == mount.end() || !destination->is_string()) {
      continue;
    }
    const std::string cleaned = clean_absolute_path(destination->get_ref<const std::string&>(), "/");
    if (cleaned == path || cleaned == "/" || path.starts_with(cleaned + "/")) {
      return cleaned;
    }
  }
  return std::nullopt;
}

Result<void> add_mps_mounts(cdi::ContainerEdits& edits, const nlohmann::ordered_json& config,
                            const Request& request, const config::Config& cfg, const config::Log& log) {
  const MpsVariable pipe{"CUDA_MPS_PIPE_DIRECTORY", cfg.mps_pipe_roots, "mps-pipe-roots"};
  const MpsVariable logs{"CUDA_MPS_LOG_DIRECTORY", cfg.mps_log_roots, "mps-log-roots"};
  for (const auto& [variable, path] :
       {std::pair{&pipe, &request.mps_pipe_directory}, std::pair{&logs, &request.mps_log_directory}}) {
    if (path->empty()) {
      continue;
    }
    GPUCTK_TRY_ASSIGN(auto mount, mps_mount(config, *variable, *path, cfg, log));
    if (mount) {
      edits.mounts.push_back(std::move(*mount));
    }
  }
  return {};
}

}  // namespace gpuctk::inject
