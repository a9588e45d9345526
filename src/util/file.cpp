#include "util/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "util/fd.hpp"

namespace gpuctk {

namespace {

// Removes the temporary file unless committed.
class TempFile {
 public:
  TempFile(std::string path, UniqueFd fd) : m_path(std::move(path)), m_fd(std::move(fd)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!m_committed) {
      ::unlink(m_path.c_str());
    }
  }
  [[nodiscard]] int fd() const { return m_fd.get(); }
  [[nodiscard]] const std::string& path() const { return m_path; }
  void commit() { m_committed = true; }

 private:
  std::string m_path;
  UniqueFd m_fd;
  bool m_committed = false;
};

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
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

Result<std::string> read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return fail_errno("read " + path, errno);
  }
  return read_fd(fd.get(), path, SIZE_MAX);
}

Result<std::string> read_file_nofollow(const std::string& path, size_t max_size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    return fail_errno("read " + path, errno == ELOOP ? ELOOP : errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail_errno("read " + path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return fail("read " + path + ": not a regular file");
  }
  return read_fd(fd.get(), path, max_size);
}

Result<void> write_file_atomic(const std::string& path, std::string_view content, mode_t mode) {
  std::string temp_path = path + ".XXXXXX.tmp";
  UniqueFd raw(::mkostemps(temp_path.data(), 4, O_CLOEXEC));
  if (!raw) {
    return fail_errno("write " + path + ": create temporary file in " + parent_dir(path), errno);
  }
  TempFile temp(std::move(temp_path), std::move(raw));
  const auto write_error = [&](std::string_view step) { return fail_errno("write " + path + ": " + std::string(step), errno); };
  if (const int err = write_all(temp.fd(), content); err != 0) {
    errno = err;
    return write_error("write");
  }
  if (::fchmod(temp.fd(), mode) != 0) {
    return write_error("chmod");
  }
  if (::fsync(temp.fd()) != 0) {
    return write_error("fsync");
  }
  if (::rename(temp.path().c_str(), path.c_str()) != 0) {
    return write_error("rename");
  }
  temp.commit();
  // Make the rename itself durable; a failure here does not undo the (already visible) new file.
  UniqueFd dir(::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) {
    ::fsync(dir.get());
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

}  // namespace gpuctk
