#include "util/file_watch.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <filesystem>
#include <optional>
#include <string_view>

namespace gpuctk {

namespace {

// What changes a file in its directory: written in place, renamed over, made, removed, renamed away.
constexpr uint32_t k_events =
    IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR;
// A mounted ConfigMap's own entries ("..data", "..2026_12_03_00_00_00.1"): the file is a link through
// "..data", which the kubelet swaps to change every file at once.
constexpr std::string_view k_configmap_internal = "..";

using Clock = std::chrono::steady_clock;

// poll(2)'s timeout until `deadline`, rounded up (never a busy loop before it), at most INT_MAX ms.
int poll_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<decltype(left)>(left, 0, INT_MAX));
}

}  // namespace

Result<FileWatch> FileWatch::open(const std::string& path, const sigset_t& stop) {
  const std::filesystem::path file(path);
  std::string dir = file.has_parent_path() ? file.parent_path().string() : std::string(".");
  UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify || ::inotify_add_watch(inotify.get(), dir.c_str(), k_events) < 0) {
    return fail_errno("watch " + dir + " (inotify)", errno);
  }
  UniqueFd signals(::signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signals) {
    return fail_errno("wait for SIGTERM", errno);
  }
  return FileWatch(std::move(dir), file.filename().string(), std::move(inotify), std::move(signals));
}

bool FileWatch::add_watch() const {
  return ::inotify_add_watch(m_inotify.get(), m_dir.c_str(), k_events) >= 0;
}

bool FileWatch::drain() {
  alignas(inotify_event) char buffer[4096];
  bool changed = false;
  for (;;) {
    const ssize_t n = ::read(m_inotify.get(), buffer, sizeof buffer);
    if (n <= 0) {
      return changed;  // EAGAIN: every event read
    }
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      const std::string_view name = event->len > 0 ? std::string_view(event->name) : std::string_view();
      if ((event->mask & IN_IGNORED) != 0) {
        m_watching = false;  // the directory is gone
      }
      // An overflow lost events: one of them may have been the file's.
      changed = changed || (event->mask & IN_Q_OVERFLOW) != 0 || name == m_name ||
                name.starts_with(k_configmap_internal);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
}

Result<bool> FileWatch::stop_signalled() const {
  signalfd_siginfo info{};
  const ssize_t n = ::read(m_signals.get(), &info, sizeof info);
  if (n == static_cast<ssize_t>(sizeof info)) {
    return true;
  }
  if (n < 0 && errno != EAGAIN && errno != EINTR) {
    return fail_errno("wait for SIGTERM", errno);
  }
  return false;
}

Result<FileWatch::Wake> FileWatch::wait(unsigned seconds) {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  std::optional<Clock::time_point> settle_end;  // set by the first change: the latest wake
  Clock::time_point quiet_until;                // the last change + k_settle_ms
  for (;;) {
    GPUCTK_TRY_ASSIGN(const bool stop, stop_signalled());
    if (stop) {
      return Wake::stopped;
    }
    if (!m_watching && add_watch()) {
      m_watching = true;
      return Wake::changed;  // the directory is back: whatever it holds is new
    }
    const auto now = Clock::now();
    if (settle_end && (now >= quiet_until || now >= *settle_end)) {
      return Wake::changed;
    }
    if (!settle_end && now >= deadline) {
      return Wake::timeout;
    }
    pollfd fds[] = {{.fd = m_signals.get(), .events = POLLIN, .revents = 0},
                    {.fd = m_inotify.get(), .events = POLLIN, .revents = 0}};
    auto until = settle_end ? std::min(quiet_until, *settle_end) : deadline;
    if (!m_watching) {
      until = std::min(until, now + std::chrono::milliseconds(k_rewatch_ms));  // is it back yet?
    }
    const int ready = ::poll(fds, 2, poll_ms(until));
    if (ready < 0 && errno != EINTR) {
      return fail_errno("wait for SIGTERM", errno);
    }
    if (ready > 0 && (fds[1].revents & POLLIN) != 0 && drain()) {
      const auto changed_at = Clock::now();
      quiet_until = changed_at + std::chrono::milliseconds(k_settle_ms);
      if (!settle_end) {
        settle_end = changed_at + std::chrono::milliseconds(k_settle_max_ms);
      }
    }
  }
}

}  // namespace gpuctk
