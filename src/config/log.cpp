#include "config/log.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::config {

Result<LogLevel> parse_log_level(std::string_view text) {
  if (text == "error")
    return LogLevel::error;
  if (text == "warning")
    return LogLevel::warning;
  if (text == "info")
    return LogLevel::info;
  if (text == "debug")
    return LogLevel::debug;
  return fail("unknown log level \"" + std::string(text) + "\" (want error, warning, info or debug)");
}

namespace {

// What open_append found: the file, or why it is not used (the hook then logs nothing).
struct OpenedLog {
  UniqueFd fd;
  std::string refused;
};

// Why root must not append to a file in the folder `dir` (an fd of `dir_path`), or "" when it may: whoever
// else can write in it can put a FIFO, a device node or a hard link to another file at the log's name.
std::string unsafe_folder(int dir, const std::string& dir_path) {
  struct stat st {};
  if (::fstat(dir, &st) != 0) {
    return "its folder " + dir_path + " cannot be examined";
  }
  // A system group (below 1000, Debian's first user group; Ubuntu's /var/log is 0775 root:syslog) is a
  // daemon's, as trusted as root here; a user group's members are others.
  constexpr gid_t k_first_user_gid = 1000;
  const bool others_write =
      (st.st_mode & S_IWOTH) != 0 || ((st.st_mode & S_IWGRP) != 0 && st.st_gid >= k_first_user_gid);
  if (!others_write && (st.st_uid == 0 || st.st_uid == ::geteuid())) {
    return "";
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "its folder " + dir_path + " can be written by others (mode " + mode + ", owner " +
         std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) + ")";
}

// The log file `name` in `folder` opened for appending, created 0640 when missing. What is there is looked
// up without being opened (O_PATH): a link is an error; a FIFO (whose open would block every hook), a
// device node (whose open can have effects) or a socket is never opened, only refused.
Result<OpenedLog> open_in_folder(int folder, const std::string& name, const std::string& path) {
  const std::string what = "open log file " + path;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const UniqueFd named(::openat(folder, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!named && errno == ENOENT) {
      UniqueFd fd(::openat(folder, name.c_str(),
                           O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0640));
      if (fd || errno != EEXIST) {
        return fd ? Result<OpenedLog>(OpenedLog{std::move(fd), ""}) : fail_errno(what, errno);
      }
      continue;  // another hook made it meanwhile: open that one
    }
    struct stat st {};
    if (!named || ::fstat(named.get(), &st) != 0) {
      return fail_errno(what, errno);
    }
    if (S_ISLNK(st.st_mode)) {
      return fail(what + ": is a symbolic link; refused (name the file itself)");
    }
    if (!S_ISREG(st.st_mode)) {
      return OpenedLog{UniqueFd(), "log file " + path + ": not a regular file"};
    }
    GPUCTK_TRY_ASSIGN(auto fd, reopen_regular(named.get(), O_WRONLY | O_APPEND, what));
    return OpenedLog{std::move(fd), ""};
  }
  return fail_errno(what, EEXIST);
}

Result<OpenedLog> open_append(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const UniqueFd folder(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!folder) {
    return fail_errno("open log file " + path, errno);
  }
  if (auto why = unsafe_folder(folder.get(), dir); !why.empty()) {
    return OpenedLog{UniqueFd(), "log file " + path + ": " + why};
  }
  return open_in_folder(folder.get(), name, path);
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Renames the full file `fd` (open at `path`) to "<path>.1" unless another hook did first; true when
// `path` no longer names `fd`'s file (rotated by this hook or by another), so the caller opens it again.
// A rotation that fails leaves the file growing: logging must never fail a container.
bool rotate(const std::string& path, int fd, off_t max_size) {
  if (::flock(fd, LOCK_EX) != 0) {
    return false;
  }
  struct stat held {};
  struct stat named {};
  bool reopen = false;
  if (::fstat(fd, &held) == 0) {
    if (::lstat(path.c_str(), &named) != 0 || !same_file(held, named)) {
      reopen = true;  // another hook rotated it while this one waited
    } else if (held.st_size >= max_size) {
      reopen = ::rename(path.c_str(), (path + ".1").c_str()) == 0;
    }
  }
  ::flock(fd, LOCK_UN);
  return reopen;
}

}  // namespace

Result<Log> Log::open(const std::string& path, LogLevel level, off_t max_size) {
  Log log;
  log.m_level = level;
  if (path.empty()) {
    return log;
  }
  GPUCTK_TRY_ASSIGN(auto opened, open_append(path));
  if (opened.fd) {
    if (struct stat st{}; ::fstat(opened.fd.get(), &st) == 0 && st.st_size >= max_size &&
                          rotate(path, opened.fd.get(), max_size)) {
      GPUCTK_TRY_ASSIGN(opened, open_append(path));
    }
  }
  log.m_fd = std::move(opened.fd);
  if (!opened.refused.empty()) {
    log.m_refused = opened.refused + "; not logging (name a regular file in a folder only root can write)";
  }
  return log;
}

std::string utc_timestamp() {
  char stamp[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return stamp;
}

void Log::write(LogLevel level, std::string_view message) const {
  if (!enabled(level)) {
    return;
  }
  static constexpr const char* k_names[] = {"error", "warning", "info", "debug"};
  // Messages carry container-controlled text (annotation keys, env values, mount destinations, CDI
  // names): escaped here, once, so that a container can neither forge a line nor flood the file.
  const std::string text = escape_for_log(message);
  std::string line;
  line.reserve(text.size() + 64);
  line.append(utc_timestamp()).append(" gpuctk[").append(std::to_string(::getpid())).append("] ");
  line.append(k_names[static_cast<int>(level)]).append(": ");
  if (!m_context.empty()) {
    line.append(escape_for_log(m_context)).append(": ");
  }
  line.append(text).push_back('\n');
  // A log that cannot be written must not fail the container; the error still reaches stderr.
  [[maybe_unused]] const ssize_t n = ::write(m_fd.get(), line.data(), line.size());
}

}  // namespace gpuctk::config
