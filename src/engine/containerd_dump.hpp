#pragma once
// `runtime configure --config-source command`: containerd's own merge of its configuration, as
// `containerd --config <file> config dump` prints it (every import read, defaults filled in), instead of
// gpuctk's reading of the files. The one place `runtime configure` runs a program.

#include <chrono>
#include <string>

#include "util/error.hpp"

namespace gpuctk::engine {

// How long `config dump` may take (it only reads files: well under a second).
inline constexpr std::chrono::milliseconds k_dump_timeout{30'000};

// The program `executable` names: "" is "containerd"; a name without '/' is looked for in the absolute
// directories of $PATH (default /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin), the first
// regular, executable file; a name with '/' must be an absolute path. Errors: `containerd: not found in
// PATH (/usr/sbin:/usr/bin)`, `executable path "bin/containerd": not an absolute path`.
Result<std::string> resolve_executable(const std::string& executable);

// Runs `<program> --config <config_path> config dump` (resolve_executable(executable); no shell, stdin
// /dev/null, its stderr ours, PATH its only environment) and returns what it printed. Bounded: at most
// k_max_config_file bytes, and `timeout`, after which it is killed. Errors start with the command line:
// "/usr/bin/containerd --config /etc/containerd/config.toml config dump: exited 1 (its messages are
// above)", "…: still running after 30 s: killed", "…: printed more than 16777216 bytes", "…: killed by
// SIGSEGV", "…: exec: Permission denied".
Result<std::string> containerd_config_dump(const std::string& executable, const std::string& config_path,
                                           std::chrono::milliseconds timeout = k_dump_timeout);

}  // namespace gpuctk::engine
