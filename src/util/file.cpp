#include "util/file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "util/fd.hpp"
#include "util/path.hpp"

namespace gpuctk {

namespace {

// Removes the temporary file (by name, in its directory) unless committed.
class TempFile {
 public:
  TempFile(int dir_fd, std::string name, UniqueFd fd)
      : m_dir_fd(dir_fd), m_name(std::move(name)), m_fd(std::move(fd)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!m_committed) {
      ::unlinkat(m_dir_fd, m_name.c_str(), 0);
    }
  }
  [[nodiscard]] int fd() const { return m_fd.get(); }
  [[nodiscard]] const std::string& name() const { return m_name; }
  void commit() { m_committed = true; }

 private:
  int m_dir_fd;
  std::string m_name;
  UniqueFd m_fd;
  bool m_committed = false;
};

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "<name>.<12 random hex digits>.tmp". A clash is an EEXIST from the O_EXCL create, never an overwrite.
std::string temporary_name(const std::string& name) {
  unsigned char bytes[6]{};
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    static unsigned counter = 0;
    const unsigned seed = static_cast<unsigned>(::getpid()) * 2654435761u + counter++;
    for (size_t i = 0; i < sizeof bytes; ++i) {
      bytes[i] = static_cast<unsigned char>(seed >> (8 * (i % 4)));
    }
  }
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out = name + ".";
  for (const unsigned char b : bytes) {
    out += k_hex[b >> 4];
    out += k_hex[b & 15];
  }
  return out + ".tmp";
}

}  // namespace

Result<std::string> read_fd(int fd, const std::string& what, size_t max_size) {
  std::string content;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return fail_errno("read " + what, errno);
    }
    if (n == 0) {
      return content;
    }
    if (static_cast<size_t>(n) > max_size - content.size()) {
      return fail("read " + what + ": larger than " + std::to_string(max_size) + " bytes");
    }
    content.append(buffer, static_cast<size_t>(n));
  }
}

int write_all(int fd, std::string_view data) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return n < 0 ? errno : EIO;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

Result<std::string> read_file(const std::string& path, size_t max_size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return fail_errno("read " + path, errno);
  }
  return read_fd(fd.get(), path, max_size);
}

Result<UniqueFd> reopen_regular(int path_fd, int flags, const std::string& what) {
  struct stat st {};
  if (::fstat(path_fd, &st) != 0) {
    return fail_errno(what, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(what + ": not a regular file");
  }
  const std::string self = "/proc/self/fd/" + std::to_string(path_fd);
  UniqueFd fd(::open(self.c_str(), flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) {
    return fail_errno(what, errno);
  }
  return fd;
}

Result<UniqueFd> open_regular_at(int dir, const std::string& name, const std::string& what) {
  const UniqueFd path(::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path) {
    return fail_errno(what, errno);
  }
  return reopen_regular(path.get(), O_RDONLY, what);
}

namespace {

// The file the O_PATH fd `at` names, read as `path` when it is a regular file of at most `max_size` bytes
// (read_file_nofollow and read_regular_at: looked at before anything is opened).
Result<std::string> read_looked_up(const UniqueFd& at, const std::string& path, size_t max_size) {
  struct stat st {};
  if (::fstat(at.get(), &st) != 0) {
    return fail_errno("read " + path, errno);
  }
  if (S_ISLNK(st.st_mode)) {
    return fail_errno("read " + path, ELOOP);  // what O_NOFOLLOW says of a link
  }
  if (!S_ISREG(st.st_mode)) {
    return fail("read " + path + ": not a regular file");
  }
  // Refused before a byte is read; read_fd still bounds a file that grows meanwhile.
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    return fail("read " + path + ": larger than " + std::to_string(max_size) + " bytes");
  }
  GPUCTK_TRY_ASSIGN(const auto fd, reopen_regular(at.get(), O_RDONLY, "read " + path));
  return read_fd(fd.get(), path, max_size);
}

}  // namespace

Result<std::string> read_file_nofollow(const std::string& path, size_t max_size) {
  // Looked up without opening (O_PATH): a device node or FIFO there is never opened, only refused.
  const UniqueFd at(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!at) {
    return fail_errno("read " + path, errno);
  }
  return read_looked_up(at, path, max_size);
}

Result<std::optional<std::string>> read_regular_at(int dir, const char* name, const std::string& path,
                                                   size_t max_size) {
  const UniqueFd at(::openat(dir, name, O_PATH | O_CLOEXEC));
  if (!at) {
    return errno == ENOENT ? Result<std::optional<std::string>>(std::nullopt)
                           : fail_errno("read " + path, errno);
  }
  GPUCTK_TRY_ASSIGN(std::string text, read_looked_up(at, path, max_size));
  return std::optional<std::string>(std::move(text));
}

Result<void> write_file_atomic(const std::string& path, std::string_view content, mode_t mode,
                               Durability durability, std::optional<FileOwner> owner) {
  const std::string dir_path = parent_path(path);
  UniqueFd dir(::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    return fail_errno("write " + path + ": create temporary file in " + dir_path, errno);
  }
  return write_file_atomic_at(dir.get(), base_name(path), path, content, mode, durability, owner);
}

Result<void> write_file_atomic_at(int dir_fd, const std::string& name, const std::string& path,
                                  std::string_view content, mode_t mode, Durability durability,
                                  std::optional<FileOwner> owner) {
  const std::string dir_path = parent_path(path);
  const auto write_error = [&](std::string_view step) {
    return fail_errno("write " + path + ": " + std::string(step), errno);
  };
  std::string temp_name;
  UniqueFd raw;
  for (int attempt = 0; attempt < 100 && !raw; ++attempt) {
    temp_name = temporary_name(name);
    raw.reset(
        ::openat(dir_fd, temp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!raw && errno != EEXIST) {
      break;
    }
  }
  if (!raw) {
    return fail_errno("write " + path + ": create temporary file in " + dir_path, errno);
  }
  TempFile temp(dir_fd, std::move(temp_name), std::move(raw));
  if (const int err = write_all(temp.fd(), content); err != 0) {
    errno = err;
    return write_error("write");
  }
  if (owner && ::fchown(temp.fd(), owner->uid, owner->gid) != 0) {
    return write_error("chown");
  }
  if (::fchmod(temp.fd(), mode) != 0) {
    return write_error("chmod");
  }
  if (durability != Durability::atomic_only && ::fsync(temp.fd()) != 0) {
    return write_error("fsync");
  }
  if (::renameat(dir_fd, temp.name().c_str(), dir_fd, name.c_str()) != 0) {
    return write_error("rename");
  }
  temp.commit();
  // Make the rename itself durable; a failure here does not undo the (already visible) new file.
  if (durability == Durability::durable) {
    ::fsync(dir_fd);
  }
  return {};
}

Result<std::string> self_exe_path() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0 || static_cast<size_t>(n) >= path.size()) {
    return fail_errno("read /proc/self/exe", errno);
  }
  path.resize(static_cast<size_t>(n));
  return path;
}

Result<void> check_self_not_replaced(std::string_view self) {
  if (self.ends_with(" (deleted)")) {
    return fail("this gpuctk (" + std::string(self) + ") was replaced since it started");
  }
  return {};
}

}  // namespace gpuctk
