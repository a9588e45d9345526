#pragma once
// The watch loops' signal handling (`install --watch`, `labels --watch`): a long-running command stops on
// SIGTERM (a pod deleted) or SIGINT, between its steps, never in the middle of one.

#include <signal.h>

#include "util/error.hpp"

namespace gpuctk {

// Blocks SIGTERM and SIGINT in this thread, so that they are taken only by wait_for_stop. Returns the
// set to wait on. Errors: "block SIGTERM: <errno text>".
Result<sigset_t> block_stop_signals();

// Waits up to `seconds` for one of `stop`: true when it came (its number in `*signal` when given),
// false when the time passed. Errors: "wait for SIGTERM: <errno text>".
Result<bool> wait_for_stop(const sigset_t& stop, unsigned seconds, int* signal = nullptr);

}  // namespace gpuctk
