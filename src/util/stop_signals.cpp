#include "util/stop_signals.hpp"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace gpuctk {

Result<sigset_t> block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    return fail_errno("block SIGTERM", err);
  }
  return set;
}

Result<bool> wait_for_stop(const sigset_t& stop, unsigned seconds, int* signal) {
  const timespec interval{.tv_sec = static_cast<time_t>(seconds), .tv_nsec = 0};
  const int sig = ::sigtimedwait(&stop, nullptr, &interval);
  if (sig == SIGTERM || sig == SIGINT) {
    if (signal != nullptr) {
      *signal = sig;
    }
    return true;
  }
  if (sig < 0 && errno != EAGAIN && errno != EINTR) {
    return fail_errno("wait for SIGTERM", errno);
  }
  return false;
}

}  // namespace gpuctk
