#include "hook/log.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "util/strings.hpp"

namespace gpuctk::hook {

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

Result<UniqueFd> open_append(const std::string& path) {
  // O_NOFOLLOW: a link planted where the log goes (a directory others can write, such as /tmp) must not
  // make root append to whatever it points at.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0640));
  if (!fd) {
    if (errno == ELOOP) {
      return fail("open log file " + path + ": is a symbolic link; refused (name the file itself)");
    }
    return fail_errno("open log file " + path, errno);
  }
  return fd;
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
  GPUCTK_TRY_ASSIGN(log.m_fd, open_append(path));
  // Only a regular file grows (a log-file of /dev/null or a FIFO does not).
  if (struct stat st{}; ::fstat(log.m_fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= max_size) {
    if (rotate(path, log.m_fd.get(), max_size)) {
      GPUCTK_TRY_ASSIGN(log.m_fd, open_append(path));
    }
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

}  // namespace gpuctk::hook
