#include "hook/log.hpp"

#include <fcntl.h>
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

Result<Log> Log::open(const std::string& path, LogLevel level) {
  Log log;
  log.m_level = level;
  if (path.empty()) {
    return log;
  }
  // O_NOFOLLOW: a link planted where the log goes (a directory others can write, such as /tmp) must not
  // make root append to whatever it points at.
  log.m_fd.reset(
      ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0640));
  if (!log.m_fd) {
    if (errno == ELOOP) {
      return fail("open log file " + path + ": is a symbolic link; refused (name the file itself)");
    }
    return fail_errno("open log file " + path, errno);
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
  line.append(k_names[static_cast<int>(level)]).append(": ").append(text).push_back('\n');
  // A log that cannot be written must not fail the container; the error still reaches stderr.
  [[maybe_unused]] const ssize_t n = ::write(m_fd.get(), line.data(), line.size());
}

}  // namespace gpuctk::hook
