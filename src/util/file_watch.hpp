#pragma once
// A watch loop's wait that also ends when one file changes (`labels --watch` following the device
// plugin's config file). inotify watches the file's directory, not the file: a file replaced by a rename
// (write_file_atomic, NVIDIA config-manager's new link, an editor) leaves a watch on the old inode
// behind, and a mounted ConfigMap changes by swapping its "..data" link beside the file.

#include <signal.h>

#include <string>
#include <utility>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk {

class FileWatch {
 public:
  enum class Wake {
    stopped,  // a stop signal came
    changed,  // the file changed
    timeout,  // the time passed
  };

  // Watches the directory of `path` for `path`'s name, and the stop signals `stop` (blocked by the
  // caller: block_stop_signals, util/stop_signals.hpp). Errors: "watch /etc/c (inotify): No such file or
  // directory" (the directory), "wait for SIGTERM: <errno text>" (signalfd).
  static Result<FileWatch> open(const std::string& path, const sigset_t& stop);

  // Waits up to `seconds` for a stop signal or a change: an event (a write closed, a rename to, a
  // creation, a removal, a rename away) of the file's name, or of a name starting with ".." (a
  // ConfigMap's "..data" swap). After the first change it waits until the directory has been quiet for
  // k_settle_ms (at most k_settle_max_ms), so that a change made in steps (remove then link, create then
  // rename) wakes the caller once, after the last step. A stop signal wins over a change. A directory
  // removed is looked for every k_rewatch_ms; when it is back, it is watched again and the wait ends as a
  // change. Errors: "wait for SIGTERM: <errno text>".
  Result<Wake> wait(unsigned seconds);

  static constexpr int k_settle_ms = 100;
  static constexpr int k_settle_max_ms = 1000;
  static constexpr int k_rewatch_ms = 1000;

 private:
  FileWatch(std::string dir, std::string name, UniqueFd inotify, UniqueFd signals)
      : m_dir(std::move(dir)),
        m_name(std::move(name)),
        m_inotify(std::move(inotify)),
        m_signals(std::move(signals)) {}

  [[nodiscard]] bool add_watch() const;
  // Reads the pending events: whether one is of the file (changed); m_watching goes false when the
  // kernel dropped the watch (the directory removed).
  bool drain();
  Result<bool> stop_signalled() const;

  std::string m_dir;
  std::string m_name;
  UniqueFd m_inotify;
  UniqueFd m_signals;
  bool m_watching = true;
};

}  // namespace gpuctk
