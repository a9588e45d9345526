#include "rootfs/in_root.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
#include <map>

#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::rootfs {

namespace {

// Symlinks expanded in one resolution before ELOOP, as the kernel allows (MAXSYMLINKS).
constexpr int k_max_links = 40;

using FdOrErrno = std::expected<UniqueFd, int>;

// Whether openat2 is known to be unusable here (see openat2_unusable): every later call walks.
bool g_no_openat2 = false;

FdOrErrno openat2_in_root(int root_fd, std::string_view path, int flags) {
  const size_t start = path.find_first_not_of('/');
  const std::string relative = start == std::string_view::npos ? "." : std::string(path.substr(start));
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  // EAGAIN: a rename somewhere in the root raced with a ".." lookup; the kernel asks us to try again.
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how);
    if (fd >= 0) {
      return UniqueFd(static_cast<int>(fd));
    }
    if (errno != EAGAIN || attempt == 16) {
      return std::unexpected(errno);
    }
  }
}

// The text of the symlink `name` in `dir` ("" with an O_PATH fd of the link itself as `dir`).
std::expected<std::string, int> read_link_at(int dir, const char* name) {
  std::string text(PATH_MAX, '\0');
  const ssize_t n = ::readlinkat(dir, name, text.data(), text.size());
  if (n < 0) {
    return std::unexpected(errno);
  }
  if (static_cast<size_t>(n) >= text.size()) {
    return std::unexpected(ENAMETOOLONG);
  }
  text.resize(static_cast<size_t>(n));
  return text;
}

// What walk_in_root answers when `budget` is spent (ImageBudget::check() says why).
constexpr int k_budget_spent = ECANCELED;

// The portable resolution: see the file comment of in_root.hpp. Each link's components are charged to
// `budget` (if any) before they are walked.
FdOrErrno walk_in_root(int root_fd, std::string_view path, int flags, FollowLast follow,
                       ImageBudget* budget) {
  std::deque<std::string> todo;
  for (const auto part : split(path, '/')) {
    if (!part.empty()) {
      todo.emplace_back(part);
    }
  }
  std::vector<UniqueFd> stack;  // directories below the root; the current one is the last
  int links = 0;
  while (!todo.empty()) {
    const std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == ".") {
      continue;
    }
    if (name == "..") {
      if (!stack.empty()) {
        stack.pop_back();  // ".." of the root is the root
      }
      continue;
    }
    const int current = stack.empty() ? root_fd : stack.back().get();
    UniqueFd fd(::openat(current, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      return std::unexpected(errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      return std::unexpected(errno);
    }
    const bool last = todo.empty();
    if (S_ISLNK(st.st_mode) && (!last || follow == FollowLast::yes)) {
      if (++links > k_max_links) {
        return std::unexpected(ELOOP);
      }
      GPUCTK_TRY_ASSIGN(auto text, read_link_at(fd.get(), ""));
      if (text.empty()) {
        return std::unexpected(ENOENT);
      }
      if (text.front() == '/') {
        stack.clear();  // absolute: from the container's root, never the host's
      }
      const auto parts = split(text, '/');
      if (budget != nullptr && !budget->spend(ImageWork::components, parts.size())) {
        return std::unexpected(k_budget_spent);
      }
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (!it->empty()) {
          todo.emplace_front(*it);
        }
      }
      continue;
    }
    if (last) {
      // Reopen with the wanted flags; O_NOFOLLOW turns a link swapped in meanwhile into an error.
      UniqueFd out(::openat(current, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
      if (!out) {
        return std::unexpected(errno);
      }
      return out;
    }
    if (!S_ISDIR(st.st_mode)) {
      return std::unexpected(ENOTDIR);
    }
    stack.push_back(std::move(fd));
  }
  UniqueFd out(::openat(stack.empty() ? root_fd : stack.back().get(), ".", flags | O_CLOEXEC));
  if (!out) {
    return std::unexpected(errno);
  }
  return out;
}

// Whether openat2's error `err` says the call itself is unusable rather than the path: ENOSYS before
// Linux 5.6, and EPERM or EINVAL from a seccomp filter that does not know the call (container engines'
// default profiles did that before they allowed it; crun falls back on the same three). EPERM and EINVAL
// can also be the path's own answer (an immutable file opened for writing), so they count only when
// openat2 also refuses the root itself, which nothing else can.
bool openat2_unusable(int err, int root_fd) {
  if (err == ENOSYS) {
    return true;
  }
  if (err != EPERM && err != EINVAL) {
    return false;
  }
  auto probe = openat2_in_root(root_fd, ".", O_PATH | O_DIRECTORY);
  return !probe && (probe.error() == ENOSYS || probe.error() == EPERM || probe.error() == EINVAL);
}

FdOrErrno resolve(const Root& root, std::string_view path, int flags, FollowLast follow,
                  ImageBudget* budget = nullptr) {
  const int all_flags = flags | (follow == FollowLast::no ? O_NOFOLLOW : 0);
  if (root.resolver() == Resolver::automatic && !g_no_openat2) {
    auto fd = openat2_in_root(root.fd(), path, all_flags);
    // EAGAIN after every retry: mounts or renames elsewhere on a busy node kept racing with its ".."
    // lookups (the kernel checks the global mount and rename sequence counts). The walk gives the same
    // answer without that condition: this lookup walks, the next tries openat2 again.
    if (!fd && fd.error() == EAGAIN) {
      return walk_in_root(root.fd(), path, flags, follow, budget);
    }
    if (fd || !openat2_unusable(fd.error(), root.fd())) {
      return fd;
    }
    g_no_openat2 = true;
  }
  return walk_in_root(root.fd(), path, flags, follow, budget);
}

// Whether `name` in `dir` is a regular file (not a link) with exactly `content` and permission bits `mode`.
// Anything but a regular file there is never opened (open_regular_at), only replaced by the caller.
bool holds(int dir, const std::string& name, std::string_view content, mode_t mode) {
  const auto fd = open_regular_at(dir, name, name);
  struct stat st {};
  if (!fd || ::fstat(fd->get(), &st) != 0 || (st.st_mode & 07777) != mode ||
      static_cast<uint64_t>(st.st_size) != content.size()) {
    return false;
  }
  std::string existing(content.size() + 1, '\0');
  const ssize_t n = ::pread(fd->get(), existing.data(), existing.size(), 0);
  return n == static_cast<ssize_t>(content.size()) &&
         std::string_view(existing.data(), content.size()) == content;
}

std::string describe(const Root& root, std::string_view path) {
  return std::string(path) + " in container root " + root.path();
}

}  // namespace

Result<Root> Root::open(const std::string& host_path, Resolver resolver) {
  if (host_path.empty() || host_path.front() != '/') {
    return fail("container root " + quote(host_path) + ": not an absolute path");
  }
  Root root;
  root.m_fd.reset(::open(host_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.m_fd) {
    return fail_errno("container root " + host_path, errno);
  }
  struct stat mine {};
  struct stat host {};
  if (::fstat(root.m_fd.get(), &mine) != 0 || ::stat("/", &host) != 0) {
    return fail_errno("container root " + host_path, errno);
  }
  if (mine.st_dev == host.st_dev && mine.st_ino == host.st_ino) {
    return fail("container root " + quote(host_path) + ": refusing the host's root");
  }
  root.m_path = host_path;
  root.m_resolver = resolver;
  return root;
}

Result<std::vector<std::string_view>> split_container_path(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return fail(quote(path) + ": not an absolute path");
  }
  if (path.size() >= PATH_MAX) {
    return fail(quote(path.substr(0, 64)) + "...: longer than PATH_MAX");
  }
  std::vector<std::string_view> parts;
  for (const auto part : split(path, '/')) {
    if (part.empty()) {
      continue;
    }
    if (part == "." || part == "..") {
      return fail(quote(path) + ": \".\" and \"..\" are not allowed in a container path");
    }
    if (part.find('\0') != std::string_view::npos) {
      return fail(quote(path) + ": contains a NUL byte");
    }
    parts.push_back(part);
  }
  return parts;
}

Result<UniqueFd> open_in_root(const Root& root, std::string_view path, int flags, FollowLast follow) {
  GPUCTK_TRY(split_container_path(path));
  auto fd = resolve(root, path, flags, follow);
  if (!fd) {
    return fail_errno(describe(root, path), fd.error());
  }
  return std::move(*fd);
}

Result<UniqueFd> open_image_path(const Root& root, std::string_view path, int flags, ImageBudget& budget) {
  if (path.find('\0') != std::string_view::npos) {
    return fail(quote(path) + ": contains a NUL byte");
  }
  if (path.size() >= PATH_MAX) {
    return fail(quote(path.substr(0, 64)) + "...: longer than PATH_MAX");
  }
  if (!budget.spend(ImageWork::resolutions, 1) ||
      !budget.spend(ImageWork::components, split(path, '/').size())) {
    return budget.exhausted();
  }
  auto fd = resolve(root, path, flags, FollowLast::yes, &budget);
  if (!fd) {
    GPUCTK_TRY(budget.check());  // the walk stopped for the budget, not for the path
    return fail_errno(describe(root, path), fd.error());
  }
  return std::move(*fd);
}

Result<UniqueFd> make_dirs(const Root& root, std::string_view dir, mode_t mode) {
  GPUCTK_TRY_ASSIGN(auto parts, split_container_path(dir));
  UniqueFd current(::openat(root.fd(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!current) {
    return fail_errno(describe(root, "/"), errno);
  }
  std::string prefix;
  for (const auto part : parts) {
    prefix.append("/").append(part);
    auto next = resolve(root, prefix, O_PATH | O_DIRECTORY, FollowLast::yes);
    if (!next && next.error() == ENOENT) {
      const std::string name(part);
      const bool created = ::mkdirat(current.get(), name.c_str(), mode) == 0;
      if (!created && errno != EEXIST) {
        return fail_errno("create directory " + describe(root, prefix), errno);
      }
      // What is there now must be a directory, not a link (a dangling one, or one raced in).
      next = UniqueFd(::openat(current.get(), name.c_str(),
                               (created ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!*next) {
        next = std::unexpected(errno == ELOOP ? ENOTDIR : errno);
      } else if (created && ::fchmod(next->get(), mode) != 0) {
        // mkdir applied the umask; the mode asked for is the mode made, whoever runs the hook.
        return fail_errno("chmod directory " + describe(root, prefix), errno);
      }
    }
    if (!next) {
      return fail_errno(describe(root, prefix), next.error());
    }
    current = std::move(*next);
  }
  return current;
}

Result<PathParts> split_parent(std::string_view path) {
  GPUCTK_TRY_ASSIGN(auto parts, split_container_path(path));
  if (parts.empty()) {
    return PathParts{"/", ""};
  }
  const std::string_view name = parts.back();
  const std::string_view dir = path.substr(0, static_cast<size_t>(name.data() - path.data()));
  return PathParts{dir.empty() ? "/" : std::string(dir), std::string(name)};
}

Result<Parent> open_parent(const Root& root, std::string_view path, mode_t dir_mode) {
  GPUCTK_TRY_ASSIGN(auto parts, split_parent(path));
  if (parts.name.empty()) {
    return fail(describe(root, path) + ": is the root itself");
  }
  GPUCTK_TRY_ASSIGN(auto fd, make_dirs(root, parts.dir, dir_mode));
  return Parent{std::move(fd), std::move(parts.name)};
}

std::string temporary_name(std::string_view name) {
  unsigned char bytes[6]{};
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    // The O_EXCL create still makes a clash an error, never an overwrite.
    const auto pid = static_cast<unsigned>(::getpid());
    for (size_t i = 0; i < sizeof bytes; ++i) {
      bytes[i] = static_cast<unsigned char>(pid >> (8 * (i % 4)));
    }
  }
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out = ".";
  out.append(name.substr(0, 200)).append(".gpuctk-");
  for (const unsigned char b : bytes) {
    out += k_hex[b >> 4];
    out += k_hex[b & 15];
  }
  return out;
}

Result<void> write_file(const Root& root, std::string_view path, std::string_view content, mode_t mode) {
  GPUCTK_TRY_ASSIGN(auto parent, open_parent(root, path, 0755));
  const int dir = parent.dir.get();
  if (holds(dir, parent.name, content, mode)) {
    // Already in place (a restarted container): no write, and no rename, which on ext4 flushes the
    // new file's data before replacing an old one (auto_da_alloc) and costs milliseconds.
    return {};
  }
  const std::string temp = temporary_name(parent.name);
  UniqueFd fd(::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) {
    return fail_errno("write " + describe(root, path), errno);
  }
  int err = write_all(fd.get(), content);
  if (err == 0 && ::fchmod(fd.get(), mode) != 0) {  // the umask must not narrow what readers need
    err = errno;
  }
  fd.reset();
  if (err == 0 && ::renameat(dir, temp.c_str(), dir, parent.name.c_str()) != 0) {
    err = errno;
  }
  if (err != 0) {
    ::unlinkat(dir, temp.c_str(), 0);
    return fail_errno("write " + describe(root, path), err);
  }
  return {};
}

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

std::optional<FileId> directory_id(const Root& root, std::string_view path, ImageBudget& budget) {
  auto fd = open_image_path(root, path, O_PATH | O_DIRECTORY, budget);
  struct stat st {};
  if (!fd || ::fstat(fd->get(), &st) != 0) {
    return std::nullopt;
  }
  return FileId{st.st_dev, st.st_ino};
}

Result<ImageFile> read_image_file(const Root& root, std::string_view path, size_t max_size,
                                  ImageBudget& budget) {
  ImageFile file;
  auto fd = open_image_path(root, path, O_PATH, budget);
  if (!fd) {
    GPUCTK_TRY(budget.check());
    return file;  // missing, a dangling link, a loop: what ldconfig and musl skip as well
  }
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) {
    return fail_errno(describe(root, path), errno);
  }
  file.id = FileId{st.st_dev, st.st_ino};
  if (S_ISDIR(st.st_mode)) {
    file.kind = FileKind::directory;
    return file;
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(describe(root, path) + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    return fail("read " + describe(root, path) + ": larger than " + std::to_string(max_size) + " bytes");
  }
  if (!budget.spend(ImageWork::bytes, static_cast<size_t>(st.st_size))) {
    return budget.exhausted();
  }
  // Reopened for reading through the O_PATH fd: the file whose type was checked, nothing else.
  GPUCTK_TRY_ASSIGN(const auto readable, reopen_regular(fd->get(), O_RDONLY, "read " + describe(root, path)));
  GPUCTK_TRY_ASSIGN(file.text, read_fd(readable.get(), describe(root, path), max_size));
  file.kind = FileKind::regular;
  return file;
}

namespace {

// Makes `name` in `dir` a symlink reading `target`: created directly when nothing is there, else via a
// temporary link renamed over it (atomic for readers); unchanged when it already reads `target`.
std::expected<LinkResult, int> link_at(int dir, const std::string& name, const std::string& target) {
  if (::symlinkat(target.c_str(), dir, name.c_str()) == 0) {
    return LinkResult::created;
  }
  if (errno != EEXIST) {
    return std::unexpected(errno);
  }
  if (const auto existing = read_link_at(dir, name.c_str()); existing && *existing == target) {
    return LinkResult::unchanged;
  }
  const std::string temp = temporary_name(name);
  if (::symlinkat(target.c_str(), dir, temp.c_str()) != 0) {
    return std::unexpected(errno);
  }
  if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir, temp.c_str(), 0);
    return std::unexpected(err);
  }
  return LinkResult::created;
}

Result<void> check_target(std::string_view target, std::string_view link) {
  if (target.empty() || target.size() >= PATH_MAX || target.find('\0') != std::string_view::npos) {
    return fail("link " + quote(link) + ": bad target " + quote(target));
  }
  return {};
}

}  // namespace

Result<LinkResult> create_symlink(const Root& root, std::string_view target, std::string_view link) {
  const LinkSpec one{target, link};
  auto created = create_symlinks(root, std::span(&one, 1));
  if (!created) {
    return std::unexpected(created.error());
  }
  return *created == 1 ? LinkResult::created : LinkResult::unchanged;
}

Result<size_t> create_symlinks(const Root& root, std::span<const LinkSpec> links) {
  std::map<std::string, UniqueFd, std::less<>> parents;  // resolved once per directory
  size_t created = 0;
  for (const auto& [target, link] : links) {
    GPUCTK_TRY(check_target(target, link));
    GPUCTK_TRY_ASSIGN(auto parts, split_parent(link));
    if (parts.name.empty()) {
      return fail(describe(root, link) + ": is the root itself");
    }
    auto parent = parents.find(parts.dir);
    if (parent == parents.end()) {
      GPUCTK_TRY_ASSIGN(auto fd, make_dirs(root, parts.dir, 0755));
      parent = parents.emplace(parts.dir, std::move(fd)).first;
    }
    auto result = link_at(parent->second.get(), parts.name, std::string(target));
    if (!result) {
      return fail_errno("create link " + describe(root, link), result.error());
    }
    created += *result == LinkResult::created ? 1 : 0;
  }
  return created;
}

}  // namespace gpuctk::rootfs
