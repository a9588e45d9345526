#include "discover/host_fs.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

bool is_plain_root(std::string_view root) { return root.empty() || root == "/"; }

std::string_view without_trailing_slash(std::string_view root) {
  while (root.size() > 1 && root.back() == '/') {
    root.remove_suffix(1);
  }
  return root;
}

}  // namespace

std::string under_root(std::string_view root, std::string_view path) {
  if (is_plain_root(root)) {
    return std::string(path);
  }
  std::string out(without_trailing_slash(root));
  if (path.empty() || path.front() != '/') {
    out.push_back('/');
  }
  out.append(path);
  return out;
}

std::string strip_root(std::string_view root, std::string_view path) {
  if (is_plain_root(root)) {
    return std::string(path);
  }
  root = without_trailing_slash(root);
  if (path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '/')) {
    const auto rest = path.substr(root.size());
    return rest.empty() ? std::string("/") : std::string(rest);
  }
  return std::string(path);
}

std::optional<struct stat> lstat_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return st;
}

std::optional<struct stat> stat_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return st;
}

Result<std::vector<DirEntry>> list_dir(const std::string& path) {
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
  std::vector<DirEntry> entries;
  if (!dir) {
    if (errno == ENOENT) {
      return entries;
    }
    return fail_errno("list " + path, errno);
  }
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    unsigned char type = entry->d_type;
    if (type == DT_UNKNOWN) {
      const auto st = lstat_path(path + "/" + entry->d_name);
      type = st ? static_cast<unsigned char>(IFTODT(st->st_mode)) : static_cast<unsigned char>(DT_UNKNOWN);
    }
    entries.push_back({std::string(name), type});
  }
  std::ranges::sort(entries, {}, &DirEntry::name);
  return entries;
}

std::optional<std::string> read_link(const std::string& path) {
  std::string target(256, '\0');
  for (;;) {
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) {
      return std::nullopt;
    }
    if (static_cast<size_t>(n) < target.size()) {
      target.resize(static_cast<size_t>(n));
      return target;
    }
    target.resize(target.size() * 2);
  }
}

std::optional<std::string> resolve_in_root(std::string_view root, std::string_view path) {
  return RootResolver(root).resolve(path);
}

RootResolver::RootResolver(std::string_view root)
    : m_root(is_plain_root(root) ? "" : std::string(without_trailing_slash(root))) {}

std::optional<std::string> RootResolver::resolve(std::string_view path) {
  // Components still to walk, last one first.
  std::vector<std::string> pending;
  const auto push_path = [&pending](std::string_view p) {
    auto parts = split(p, '/');
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      if (!it->empty() && *it != ".") {
        pending.emplace_back(*it);
      }
    }
  };
  push_path(path);
  std::vector<std::string> resolved;  // components below root
  std::string host = m_root;          // m_root + "/" + each of resolved
  const auto pop = [&] {
    host.resize(host.size() - 1 - resolved.back().size());
    resolved.pop_back();
  };
  int links = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == "..") {
      if (!resolved.empty()) {
        pop();
      }
      continue;
    }
    host.append("/").append(part);
    resolved.push_back(std::move(part));
    if (m_dirs.contains(host)) {
      continue;
    }
    const auto st = lstat_path(host);
    if (!st) {
      return std::nullopt;
    }
    if (S_ISDIR(st->st_mode)) {
      m_dirs.insert(host);
    } else if (S_ISLNK(st->st_mode)) {
      if (++links > 40) {
        return std::nullopt;
      }
      const auto target = read_link(host);
      if (!target) {
        return std::nullopt;
      }
      pop();
      if (!target->empty() && target->front() == '/') {
        resolved.clear();
        host = m_root;
      }
      push_path(*target);
    }
  }
  return host.empty() ? std::string("/") : host;
}

}  // namespace gpuctk::discover
