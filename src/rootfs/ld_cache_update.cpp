#include "rootfs/ld_cache_update.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "rootfs/sandbox.hpp"

namespace gpuctk::rootfs {

namespace {

// The library directories an image may keep its own libraries in, in the order glibc searches them.
#if defined(__x86_64__)
#define GPUCTK_TRIPLET "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define GPUCTK_TRIPLET "aarch64-linux-gnu"
#else
#define GPUCTK_TRIPLET ""
#endif
constexpr const char* k_system_dirs[] = {
    "/lib/" GPUCTK_TRIPLET,      // Debian-like multiarch
    "/usr/lib/" GPUCTK_TRIPLET,  // Debian-like multiarch
    "/lib64",                    // RHEL-like
    "/usr/lib64",                // RHEL-like
    "/lib",
    "/usr/lib",
};

constexpr const char* k_ld_conf_dir = "/etc/ld.so.conf.d";
constexpr const char* k_ld_cache_temp = "/etc/ld.so.cache~";  // ldconfig writes here, then renames

bool is_dir_in_root(const Root& root, std::string_view path) {
  return open_in_root(root, path, O_PATH | O_DIRECTORY, FollowLast::yes).has_value();
}

}  // namespace

Result<void> remove_file(const Root& root, std::string_view path) {
  GPUCTK_TRY_ASSIGN(auto parts, split_parent(path));
  if (parts.name.empty()) {
    return fail("remove " + std::string(path) + ": is the root");
  }
  auto fd = open_in_root(root, parts.dir, O_PATH | O_DIRECTORY, FollowLast::yes);
  if (!fd) {
    return {};
  }
  if (::unlinkat(fd->get(), parts.name.c_str(), 0) != 0 && errno != ENOENT) {
    return fail_errno("remove " + std::string(path) + " in container root " + root.path(), errno);
  }
  return {};
}

Result<void> update_ld_cache(const Root& root, const std::vector<std::string>& folders,
                             const UniqueFd& ldconfig) {
  std::vector<std::string> unique;
  for (const auto& folder : folders) {
    if (auto parts = split_container_path(folder); !parts) {
      return fail_with("--folder", parts.error());
    }
    if (folder.find('\n') != std::string::npos) {
      return fail("--folder " + folder + ": contains a newline");
    }
    if (std::ranges::find(unique, folder) == unique.end()) {
      unique.push_back(folder);
    }
  }
  if (!is_dir_in_root(root, "/etc")) {
    return fail(
        "the container has no /etc directory, so its linker cache cannot be updated (container root " +
        root.path() + ")");
  }
  std::vector<std::string> created;
  const bool had_conf_dir = is_dir_in_root(root, k_ld_conf_dir);
  const bool had_cache_temp = open_in_root(root, k_ld_cache_temp, O_PATH, FollowLast::no).has_value();
  const auto undo = [&](const Error& error) {
    for (const auto& path : created) {
      (void)remove_file(root, path);
    }
    if (!had_cache_temp) {
      (void)remove_file(root, k_ld_cache_temp);  // what a failed ldconfig leaves
    }
    if (!had_conf_dir) {
      if (auto etc = open_in_root(root, "/etc", O_PATH | O_DIRECTORY, FollowLast::yes)) {
        ::unlinkat(etc->get(), "ld.so.conf.d", AT_REMOVEDIR);  // only if empty
      }
    }
    return std::unexpected(error);
  };
  auto conf = open_in_root(root, k_ld_so_conf, O_PATH, FollowLast::yes);
  if (!conf) {
    if (auto r = write_file(root, k_ld_so_conf, k_ld_so_conf_text, 0644); !r) {
      return undo(r.error());
    }
    created.emplace_back(k_ld_so_conf);
  }
  std::string text;
  for (const auto& folder : unique) {
    text.append(folder).append("\n");
  }
  if (!unique.empty()) {
    if (auto r = write_file(root, k_ld_conf_dropin, text, 0644); !r) {
      return undo(r.error());
    }
    created.emplace_back(k_ld_conf_dropin);
  }
  std::string system;
  for (const char* dir : k_system_dirs) {
    if (is_dir_in_root(root, dir)) {
      system.append(dir).append("\n");
    }
  }
  if (!system.empty()) {
    if (auto r = write_file(root, k_ld_conf_system_dropin, system, 0644); !r) {
      return undo(r.error());
    }
    created.emplace_back(k_ld_conf_system_dropin);
  }
  if (auto r = run_sandboxed(root, ldconfig, {"ldconfig", "-f", "/etc/ld.so.conf", "-C", "/etc/ld.so.cache"});
      !r) {
    return undo(r.error());
  }
  return {};
}

}  // namespace gpuctk::rootfs
