#include "install/install.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "discover/host_fs.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"

namespace gpuctk::install {

namespace {

// How much of a file is compared at a time: an installed binary is compared without holding a second copy
// of it (a sanitizer build of a test program that installs itself is over 500 MiB).
constexpr size_t k_compare_chunk = 256 * 1024;

// Whether the regular file `path` (not followed if a link) holds exactly `bytes`; read in chunks.
Result<bool> same_content(const std::string& path, std::string_view bytes) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    return fail_errno("read " + path, errno);
  }
  if (!S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) != bytes.size()) {
    return false;
  }
  std::vector<char> chunk(k_compare_chunk);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), chunk.data(), std::min(chunk.size(), bytes.size() - done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return fail_errno("read " + path, errno);
    }
    if (n == 0 || bytes.substr(done, static_cast<size_t>(n)) !=
                      std::string_view(chunk.data(), static_cast<size_t>(n))) {
      return false;  // shorter than it said, or different
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::string> resolve_in_node_root_clamped(std::string_view root, std::string_view path) {
  std::string base(root);
  while (base.ends_with('/')) {
    base.pop_back();
  }
  // Components still to walk, last first; `done` is the resolved part, on the node ("" is "/").
  std::vector<std::string> todo;
  const auto push_components = [&todo](std::string_view text) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= text.size()) {
      const size_t end = std::min(text.find('/', start), text.size());
      if (end > start) {
        parts.emplace_back(text.substr(start, end - start));
      }
      start = end + 1;
    }
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  push_components(clean_path(path));
  std::string done;
  int links = 0;
  bool missing = false;  // below a missing component nothing is a link
  while (!todo.empty()) {
    std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == ".") {
      continue;
    }
    if (part == "..") {
      done.erase(done.empty() ? 0 : done.rfind('/'));
      continue;
    }
    const std::string next = done + "/" + part;
    if (missing || todo.empty()) {
      done = next;
      continue;
    }
    GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(base + next));
    if (!st) {
      missing = true;
      done = next;
      continue;
    }
    if (!S_ISLNK(st->st_mode)) {
      done = next;
      continue;
    }
    if (++links > 40) {
      return fail(base + clean_path(path) + ": too many levels of symbolic links");
    }
    std::string target(static_cast<size_t>(st->st_size) + 1, '\0');
    const ssize_t n = ::readlink((base + next).c_str(), target.data(), target.size());
    if (n < 0) {
      return fail_errno("readlink " + base + next, errno);
    }
    target.resize(static_cast<size_t>(n));
    if (target.starts_with('/')) {
      done.clear();
    }
    push_components(target);
  }
  return base + (done.empty() ? "/" : done);
}

Result<void> make_dirs(const std::string& dir) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(dir));
  if (st) {
    if (!S_ISDIR(st->st_mode)) {
      return fail("mkdir " + dir + ": exists and is not a directory");
    }
    return {};
  }
  if (dir != "/") {
    GPUCTK_TRY(make_dirs(parent_path(dir)));
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return fail_errno("mkdir " + dir, errno);
  }
  return {};
}

Result<Change> put_file(const std::string& path, std::string_view bytes, mode_t mode) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(path));
  if (st && S_ISREG(st->st_mode) && (st->st_mode & 07777) == mode &&
      static_cast<size_t>(st->st_size) == bytes.size()) {
    GPUCTK_TRY_ASSIGN(const bool same, same_content(path, bytes));
    if (same) {
      return Change::unchanged;
    }
  }
  GPUCTK_TRY(make_dirs(parent_path(path)));
  GPUCTK_TRY(write_file_atomic(path, bytes, mode));
  return Change::changed;
}

Result<Change> put_file_if_missing(const std::string& path, std::string_view bytes, bool overwrite) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(path));
  if (st && !overwrite) {
    return Change::unchanged;
  }
  return put_file(path, bytes, 0644);
}

Result<Change> put_symlink(const std::string& target, const std::string& link) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(link));
  if (st && S_ISLNK(st->st_mode)) {
    std::string old(static_cast<size_t>(st->st_size) + 1, '\0');
    const ssize_t n = ::readlink(link.c_str(), old.data(), old.size());
    if (n < 0) {
      return fail_errno("readlink " + link, errno);
    }
    if (std::string_view(old.data(), static_cast<size_t>(n)) == target) {
      return Change::unchanged;
    }
  }
  GPUCTK_TRY(make_dirs(parent_path(link)));
  // A fresh name beside the link, then rename: the link is replaced in one step, never missing.
  const std::string temp = link + "." + std::to_string(std::random_device{}()) + ".tmp";
  if (::symlink(target.c_str(), temp.c_str()) != 0) {
    return fail_errno("link " + link + ": create " + temp, errno);
  }
  if (::rename(temp.c_str(), link.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return fail_errno("link " + link + ": rename", err);
  }
  return Change::changed;
}

Result<Change> remove_file(const std::string& path) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(path));
  if (!st) {
    return Change::unchanged;
  }
  if (!S_ISREG(st->st_mode)) {
    return fail("remove " + path + ": not a regular file");
  }
  if (::unlink(path.c_str()) != 0) {
    return fail_errno("remove " + path, errno);
  }
  return Change::changed;
}

Result<Change> remove_file_if_same(const std::string& path, std::string_view bytes) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(path));
  if (!st || !S_ISREG(st->st_mode) || static_cast<size_t>(st->st_size) != bytes.size()) {
    return Change::unchanged;
  }
  GPUCTK_TRY_ASSIGN(const bool same, same_content(path, bytes));
  if (!same) {
    return Change::unchanged;
  }
  return remove_file(path);
}

Result<Change> remove_symlink_if(const std::string& link, std::string_view target) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(link));
  if (!st || !S_ISLNK(st->st_mode)) {
    return Change::unchanged;
  }
  std::string old(static_cast<size_t>(st->st_size) + 1, '\0');
  const ssize_t n = ::readlink(link.c_str(), old.data(), old.size());
  if (n < 0) {
    return fail_errno("readlink " + link, errno);
  }
  if (std::string_view(old.data(), static_cast<size_t>(n)) != target) {
    return Change::unchanged;
  }
  if (::unlink(link.c_str()) != 0) {
    return fail_errno("remove " + link, errno);
  }
  return Change::changed;
}

std::string describe_existing(const struct stat& st, const std::string& path) {
  if (S_ISLNK(st.st_mode)) {
    return "a link to " + discover::read_link(path).value_or("?");
  }
  return S_ISDIR(st.st_mode) ? "a directory" : S_ISREG(st.st_mode) ? "a regular file" : "a special file";
}

Result<Change> remove_dir_if_empty(const std::string& dir) {
  if (::rmdir(dir.c_str()) == 0) {
    return Change::changed;
  }
  if (errno == ENOENT || errno == ENOTEMPTY || errno == EEXIST || errno == ENOTDIR) {
    return Change::unchanged;
  }
  return fail_errno("remove " + dir, errno);
}

std::string config_text(const ConfigValues& values) {
  // Only what differs on a node from the defaults of etc/config.yaml; uninstall removes the file only
  // while it is still exactly this text.
  return "# Written by `gpuctk install`; every other key has its default (gpuctk's etc/config.yaml).\n"
         "# `gpuctk install --uninstall` removes this file only while it is unchanged.\n"
         "hook-path: " +
         values.hook_path + "\ndriver-root: " + values.driver_root + "\ndev-root: " + values.dev_root + "\n";
}

std::string docker_hook_target(std::string_view install_dir) {
  const std::string dir = clean_path(install_dir);
  return "../" + dir.substr(dir.rfind('/') + 1) + "/gpuctk";
}

void move_to_node(discover::Inventory& inventory, std::string_view host_root) {
  std::string root(host_root);
  while (root.ends_with('/')) {
    root.pop_back();
  }
  if (root.empty()) {
    return;  // the host root is "/": the paths already are the node's
  }
  const auto strip = [&root](std::string& path) {
    if (path.starts_with(root) && path.size() > root.size() && path[root.size()] == '/') {
      path.erase(0, root.size());
    }
  };
  const auto strip_node = [&strip](discover::DeviceNode& node) { strip(node.host_path); };
  for (auto& gpu : inventory.gpus) {
    strip_node(gpu.node);
    for (auto& node : gpu.drm_nodes) {
      strip_node(node);
    }
    for (auto& mig : gpu.mig_devices) {
      strip_node(mig.gi_access);
      strip_node(mig.ci_access);
    }
  }
  for (auto& node : inventory.control_nodes) {
    strip_node(node);
  }
  for (auto& node : inventory.management_nodes) {
    strip_node(node);
  }
  for (auto& file : inventory.files) {
    strip(file.host_path);
  }
}

}  // namespace gpuctk::install
