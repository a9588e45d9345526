#pragma once
// gpuctk run as nvidia-cdi-hook (src/main.cpp dispatches on the name): the specs nvidia-ctk v1.17 to
// v1.20 wrote run `/usr/bin/nvidia-cdi-hook <hook> ...` as createContainer hooks, and those containers
// fail to start once NVIDIA's package is gone unless something answers to that name. gpuctk reads the
// command line as NVIDIA's nvidia-cdi-hook v1.20.0 reads it (urfave/cli v3: --flag VALUE, --flag=VALUE,
// -flag, list values split at commas, the global --debug and --quiet also after the hook's name, flags
// and arguments in any order) and runs the hook as `gpuctk hook <hook>`. Every hook and every flag of
// v1.20.0 is accepted, hidden ones included; what each becomes is the table in nvidia_cdi_hook.cpp and
// `nvidia-cdi-hook --help`.
//
// As NVIDIA's: no hook, a hook it does not have, or a flag it does not know before the hook's name is one
// warning and exit 0 (a spec from a newer toolkit must not stop the container); a flag the named hook
// does not have, or one without its value, is a usage error (exit 2; NVIDIA's exits 1).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuctk::cli {

// What one nvidia-cdi-hook command line asks for.
struct CdiHookCall {
  enum class Kind : uint8_t {
    run,          // gpuctk with `argv` ("gpuctk", ["--quiet",] "hook", <hook>, "--option=value"...)
    skip,         // nothing to run: exit 0, after `message` as a warning when it is not empty
    help,         // the help of `hook` ("": of nvidia-cdi-hook itself) on stdout, exit 0
    version,      // gpuctk's version, exit 0
    usage_error,  // `message`, exit 2
    error,        // `message`: a value NVIDIA's hook refuses before it runs, exit 1
  };
  Kind kind = Kind::skip;
  std::string hook{};               // the hook named, when nvidia-cdi-hook v1.20.0 has it
  std::vector<std::string> argv{};  // run: gpuctk's command line
  std::string message{};
};

// An environment lookup: the value of a variable, or nothing when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// `args` (what follows argv[0]) as nvidia-cdi-hook v1.20.0 reads them. `env` gives NVIDIA_CTK_DEBUG,
// NVIDIA_CTK_QUIET and their older NVIDIA_CDI_* names (Go's booleans: 1, t, true, 0, f, false, ...; ""
// is false), read when the flag is not given before the hook's name; another value is an error, as in
// NVIDIA's. Under --quiet the warnings of a run that got as far as the hook's name are left out.
CdiHookCall parse_nvidia_cdi_hook(const std::vector<std::string>& args, const EnvLookup& env);

// The help of nvidia-cdi-hook ("") or of one of its hooks: NVIDIA's flags and what gpuctk does with each.
std::string nvidia_cdi_hook_help(const std::string& hook);

}  // namespace gpuctk::cli
