#pragma once
// What every injection point (the precreate and prestart hooks, the runtime shim) does first: read the
// config file leniently, open its log, and decide whether a container may go on when the file is broken.
// Printing is the caller's: the warnings go to the given Warn (the CLI's "gpuctk: warning: …" on stderr)
// and to the log.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/config.hpp"
#include "config/log.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

// Where a warning is shown besides the log (the CLI: stderr, escaped).
using Warn = std::function<void(std::string_view)>;

// The config read leniently and its log opened (config/config.hpp).
struct HookStart {
  config::Config config;              // every valid key of the file over the defaults
  config::Log log;                    // logs nothing when it could not be opened
  std::vector<std::string> warnings;  // unknown keys; the default log not opened
  std::optional<Error> problem;       // the file's first error, else its log-file's: unusable for a GPU
};
// `config_path`: the --config given, or "" for $GPUCTK_CONFIG or the default file (read_config).
HookStart start_hook(const std::string& config_path);

// Gives each of `start.warnings` to `warn` and logs it.
void announce_warnings(const HookStart& start, const Warn& warn);

// What an injection point does with a container, given `start`: `inject` when the config is usable;
// with a problem, `pass_through` for a container that cannot ask for a GPU under any config
// (may_request_gpu on its config.json `container`), after the warning "<problem>; <what> asks for no
// GPU: left as it is" to `warn` and the log; the problem itself as the error for any other.
enum class Gate : uint8_t { inject, pass_through };
Result<Gate> gate(const HookStart& start, const nlohmann::ordered_json& container, std::string_view what,
                  const Warn& warn);

}  // namespace gpuctk::inject
