#include "discover/host_fs.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

bool is_plain_root(std::string_view root) {
  return root.empty() || root == "/";
}

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

namespace {

Result<std::optional<struct stat>> stat_with(int (*call)(const char*, struct stat*), std::string_view name,
                                             const std::string& path) {
  struct stat st {};
  if (call(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return std::optional<struct stat>{};
    }
    return fail_errno(std::string(name) + " " + path, errno);
  }
  return std::optional<struct stat>(st);
}

}  // namespace

Result<std::optional<struct stat>> lstat_path(const std::string& path) {
  return stat_with(::lstat, "lstat", path);
}

Result<std::optional<struct stat>> stat_path(const std::string& path) {
  return stat_with(::stat, "stat", path);
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
      // An entry that cannot be examined keeps DT_UNKNOWN; whoever opens it gets the errno.
      const auto st = lstat_path(path + "/" + entry->d_name).value_or(std::nullopt);
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

std::optional<std::string> resolve_in_host_root_strict(std::string_view root, std::string_view path) {
  return RootResolver(root).resolve(path);
}

std::string describe_unresolved(std::string_view root, std::string_view path, const Unresolved& why) {
  const std::string shown_root =
      is_plain_root(root) ? std::string("/") : std::string(without_trailing_slash(root));
  const std::string host = under_root(root, path);
  // "<link> -> <target>", with the requested path in front when the link is one of its parents.
  const auto via = [&] {
    std::string out = why.link == host ? std::string() : host + ": ";
    return out + why.link + " -> " + why.target;
  };
  switch (why.reason) {
    case Unresolved::Reason::missing:
      return why.link.empty() ? std::string() : via() + ": no such file inside " + shown_root;
    case Unresolved::Reason::unreadable:
      return host + ": " + (why.failed == host ? "" : "lstat " + why.failed + ": ") +
             std::strerror(why.error);
    case Unresolved::Reason::escapes:
      return (why.link.empty() ? host : via()) + ": leads out of " + shown_root;
    case Unresolved::Reason::loop:
      return host + ": more than 40 symbolic links (last " + why.link + " -> " + why.target + ")";
  }
  return host + ": unresolvable";
}

RootResolver::RootResolver(std::string_view root)
    : m_root(is_plain_root(root) ? "" : std::string(without_trailing_slash(root))) {}

std::optional<std::string> RootResolver::resolve(std::string_view path) {
  auto resolved = resolve_or_why(path);
  if (!resolved) {
    return std::nullopt;
  }
  return std::move(*resolved);
}

std::expected<std::string, Unresolved> RootResolver::resolve_or_why(std::string_view path) {
  struct Link {
    std::string host;    // the link, as a host path
    std::string target;  // its target, verbatim
  };
  std::vector<Link> links;  // every link followed, in order
  struct Part {
    std::string name;
    int origin;  // index into `links` of the link whose target it came from; -1 for `path` itself
  };
  // Components still to walk, last one first.
  std::vector<Part> pending;
  const auto push_path = [&pending](std::string_view p, int origin) {
    auto parts = split(p, '/');
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      if (!it->empty() && *it != ".") {
        pending.push_back({std::string(*it), origin});
      }
    }
  };
  const auto why = [&links](Unresolved::Reason reason, int origin) {
    Unresolved out;
    out.reason = reason;
    if (origin >= 0) {
      out.link = links[static_cast<size_t>(origin)].host;
      out.target = links[static_cast<size_t>(origin)].target;
    }
    return std::unexpected(std::move(out));
  };
  push_path(path, -1);
  std::vector<std::string> resolved;  // components below root
  std::string host = m_root;          // m_root + "/" + each of resolved
  const auto pop = [&] {
    host.resize(host.size() - 1 - resolved.back().size());
    resolved.pop_back();
  };
  while (!pending.empty()) {
    Part part = std::move(pending.back());
    pending.pop_back();
    if (part.name == "..") {
      if (!resolved.empty()) {
        pop();
      } else if (!m_root.empty()) {
        return why(Unresolved::Reason::escapes, part.origin);  // the kernel would leave the root here
      }
      continue;
    }
    host.append("/").append(part.name);
    resolved.push_back(std::move(part.name));
    if (m_dirs.contains(host)) {
      continue;
    }
    struct stat st {};
    if (::lstat(host.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT || err == ENOTDIR) {
        return why(Unresolved::Reason::missing, part.origin);
      }
      auto out = why(Unresolved::Reason::unreadable, part.origin);
      out.error().failed = host;
      out.error().error = err;
      return out;
    }
    if (S_ISDIR(st.st_mode)) {
      m_dirs.insert(host);
    } else if (S_ISLNK(st.st_mode)) {
      auto target = read_link(host);
      if (!target) {
        const int err = errno;
        auto out = why(Unresolved::Reason::unreadable, part.origin);
        out.error().failed = host;
        out.error().error = err;
        return out;
      }
      links.push_back({host, *target});
      const int origin = static_cast<int>(links.size()) - 1;
      if (links.size() > 40) {
        return why(Unresolved::Reason::loop, origin);
      }
      pop();
      if (!target->empty() && target->front() == '/') {
        resolved.clear();
        host = m_root;
      }
      push_path(*target, origin);
    }
  }
  return host.empty() ? std::string("/") : host;
}

}  // namespace gpuctk::discover
