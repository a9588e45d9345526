#pragma once
// The hook's log: one line per decision worth knowing, appended to a file (the config's log-file, or
// /var/log/gpuctk.log). Nothing is formatted when the level is off, so logging costs nothing on the hot
// path unless asked for.
//
// Bounded growth: a hook that opens the file when it holds k_max_log_size bytes or more renames it to
// "<path>.1" (replacing the one before) and starts a new file, so the log takes at most about twice that
// on disk whatever the node runs, with no logrotate needed. Concurrent hooks rotate once: the rename is
// done under an exclusive flock(2) of the full file, by the hook that still finds that file at the path.

#include <sys/types.h>

#include <string>
#include <string_view>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::config {

enum class LogLevel { error = 0, warning = 1, info = 2, debug = 3 };

// A log file is rotated once it holds this much (a line is at most k_max_log_message bytes plus its
// prefix, so 8 MiB is tens of thousands of container starts).
inline constexpr off_t k_max_log_size = 8 * 1024 * 1024;

// The current time as log lines carry it: "2026-11-22T06:19:32Z".
std::string utc_timestamp();

// Parses "error", "warning", "info", "debug".
Result<LogLevel> parse_log_level(std::string_view text);

class Log {
 public:
  Log() = default;  // logs nothing

  // Appends to `path` (created 0640 if missing; rotated at `max_size`, see above). An empty path logs
  // nothing. A symbolic link at `path` is refused, never followed: "open log file /tmp/gpuctk.log: is a
  // symbolic link; refused (name the file itself)". What would let someone else choose what root opens
  // or appends to is never opened and logs nothing, with the reason in refused() (the hook warns and
  // carries on): anything at `path` but a regular file (a FIFO would block every hook, a device node's
  // open can have effects), or a folder that others can write (mode bits for other, for a group other
  // than root's, or an owner other than root or this user): "log file /tmp/gpuctk.log: its folder /tmp
  // can be written by others (mode 1777, owner 0:0); not logging (name a regular file in a folder only
  // root can write)".
  static Result<Log> open(const std::string& path, LogLevel level, off_t max_size = k_max_log_size);

  // Why open() logs nothing though it was given a path; "" when it logs to the file.
  [[nodiscard]] const std::string& refused() const { return m_refused; }

  // Which container the lines are about ("container 3f2a…", "container hostname 382a12181436"): every
  // line written after this carries "<context>: " before its message (escaped like it).
  void set_context(std::string context) { m_context = std::move(context); }

  [[nodiscard]] bool enabled(LogLevel level) const { return m_fd && level <= m_level; }

  // Writes "<UTC time> gpuctk[<pid>] <level>: [<context>: ]<message>\n" in one write(2), so lines of
  // concurrent hooks never interleave. `message` goes through escape_for_log (util/strings.hpp): control
  // characters and invalid UTF-8 are escaped and it is cut at k_max_log_message bytes, so one call
  // is always exactly one line whatever a container put into the message.
  void write(LogLevel level, std::string_view message) const;

  void error(std::string_view m) const { write(LogLevel::error, m); }
  void warning(std::string_view m) const { write(LogLevel::warning, m); }
  void info(std::string_view m) const { write(LogLevel::info, m); }

 private:
  UniqueFd m_fd;
  LogLevel m_level = LogLevel::info;
  std::string m_context;
  std::string m_refused;
};

}  // namespace gpuctk::config
