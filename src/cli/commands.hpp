#pragma once
// The subcommand table's row type and the one error printer. Each command lives in its own file and
// exposes a `define_*` function: it adds its options to the given CLI11 subcommand and returns the
// action that runs the command after a successful parse.

#include <signal.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "config/config.hpp"
#include "config/log.hpp"
#include "rootfs/in_root.hpp"
#include "rootfs/sandbox.hpp"
#include "util/error.hpp"

namespace gpuctk::steps {
struct HookRow;  // steps/commands.hpp
}  // namespace gpuctk::steps

namespace gpuctk::cli {

// Process exit codes: 0 success, 1 runtime failure, 2 usage error.
enum ExitCode : int { k_exit_ok = 0, k_exit_failure = 1, k_exit_usage = 2 };

using Action = std::function<int()>;
using Define = Action (*)(CLI::App& command);

struct CommandRow {
  const char* group;    // parent: a group ("cdi"), a top-level command ("runtime") or "" for top level
  const char* name;     // e.g. "validate"
  const char* summary;  // one line for --help
  Define define;        // null for a row of the hook table
  const steps::HookRow* hook = nullptr;  // a row of the hook table: defined by define_table_hook
};

// Prints "gpuctk: error: <message>" on stderr and returns k_exit_failure.
int report(const Error& error);

// "gpuctk: warning: <message>" and "gpuctk: note: <message>" on stderr, the message escaped for the
// terminal (it often holds a path or a value from a file or a container): every warning and note of the
// CLI goes through these two.
void warn(std::string_view message);
void note(std::string_view message);

// "gpuctk cdi generate": the command as typed.
std::string command_path(const CLI::App& command);

// A command-line mistake: prints "gpuctk: error: <what> (see <command path> --help)" on stderr, one
// line, and returns k_exit_usage. Parse errors end here (cli/app.cpp); so do values a command finds
// wrong before doing anything.
int usage_error(const CLI::App& command, std::string_view what);

// What was wrong with the command line, in one phrase, for usage_error: "unknown option \"--x\"",
// "missing option --runtime", "--config needs a value", or CLI11's own line; `at` is the deepest command
// CLI11 got to.
std::string describe_mistake(const CLI::ParseError& error, const CLI::App& at);

// A CLI11 check from `check(value)` returning a Result: a refused value is a usage error that reads
// "<option>: <the error's message>", e.g. `--mode: unknown mode "magic" (want auto, nvml, proc or
// management)`, found while parsing, before the command runs.
template <class Check>
CLI::Validator value_check(Check check) {
  return CLI::Validator(
      [check](std::string& value) -> std::string {
        auto checked = check(std::string_view(value));
        return checked ? std::string() : checked.error().message;
      },
      "");
}

// Gives every option of `command` (but --help) an environment variable, the command line winning over
// it: GPUCTK_<COMMAND PATH>_<LONG NAME>, upper case, '-', '.' and ' ' as '_' (`gpuctk install
// --host-root`: GPUCTK_INSTALL_HOST_ROOT). For the commands a DaemonSet runs, as nvidia-ctk's
// NVIDIA_CTK_* variables. Call it after the options are added.
void set_env_names(CLI::App& command);

// `text` to stdout, flushed; a short write is "write standard output: <errno text>".
Result<void> write_stdout(std::string_view text);

// Runs gpuctk with the given arguments; returns the process exit code.
int run(int argc, char** argv);

// Command definitions (one file each).
Action define_cdi_validate(CLI::App& command);
Action define_cdi_list(CLI::App& command);
Action define_cdi_generate(CLI::App& command);
Action define_info(CLI::App& command);
Action define_cdi_inject(CLI::App& command);
Action define_hook_precreate(CLI::App& command);
Action define_hook_prestart(CLI::App& command);
Action define_runtime(CLI::App& command);
// `gpuctk runtime configure`: adds the shim to containerd, CRI-O or docker (engine/configure.hpp).
Action define_runtime_configure(CLI::App& command);
Action define_install(CLI::App& command);
Action define_labels(CLI::App& command);
Action define_config(CLI::App& command);
Action define_system_create_device_nodes(CLI::App& command);

// `gpuctk hook <row.name>`, one of gpuctk's createContainer hooks (steps/commands.hpp; cli/app.cpp adds
// a command for each row): the row's options and --config; the action runs the row as a runtime runs the
// hook, on the container root the OCI state on stdin names.
Action define_table_hook(CLI::App& command, const steps::HookRow& row);

// The --config option every hook has.
void add_config_option(CLI::App& command, std::string& config_path);

// A gpuctk createContainer hook made ready by prepare_hook_in_process: its body on the container root.
using InProcessBody = std::function<Result<void>(const rootfs::Root& root)>;

// Parses `args` ("gpuctk", "hook", "chmod", ...): a container-start or create-symlinks line (what gpuctk's
// specs carry) by the contract's strict parse (steps::prepare_contract_line), any other with the options of
// that hook's row of the hook table (steps/commands.hpp), exactly as `gpuctk hook <name>` parses them; and
// runs its preparation in
// this process with `config` and `log`, instead of reading the OCI state. Returns its body, to run later on
// an open container root; `config` and `log` must outlive it. Errors (the preparation's now, the body's
// later) come back instead of being printed, prefixed with the hook's name; a usage error, already
// printed, is "hook <args>: exit status 2". A hook this gpuctk does not have is a warning and a body that
// does nothing (as `gpuctk hook <unknown>` is). A program the hook runs in the sandbox starts in `cgroup`
// (the container's, from hook prestart), when given.
Result<InProcessBody> prepare_hook_in_process(const std::vector<std::string>& args,
                                              const config::Config& config, const config::Log& log,
                                              std::shared_ptr<const rootfs::SandboxCgroup> cgroup = nullptr);

// The runtime shim: injects on create/run, then execs the real runtime with `args` (never returns on
// success). The config is $GPUCTK_CONFIG or the default file.
int run_runtime_shim(const std::vector<std::string>& args);

// gpuctk run as nvidia-container-runtime-hook (docker's --gpus): `prestart` is `gpuctk hook prestart`.
int run_legacy_hook_name(const std::vector<std::string>& args);

// gpuctk run as nvidia-cdi-hook (the hooks of specs nvidia-ctk wrote): `args` read as NVIDIA's
// nvidia-cdi-hook reads them (cli/nvidia_cdi_hook.hpp) and run as `gpuctk hook <name>`.
int run_nvidia_cdi_hook(const std::vector<std::string>& args);

// Loads the config and log, runs `body`, and reports its error once (stderr and log). Warnings of the
// config (unknown keys) are printed and logged first; an unusable config (inject::HookStart::problem) is the
// error, without running `body`: for commands that only GPU containers reach (the spec's hooks, `cdi
// inject`). The config and log are read as every injection point reads them (inject/entry.hpp).
int run_with_log(const std::string& config_path,
                 const std::function<Result<void>(const config::Config&, const config::Log&)>& body);

// What a hook reads on stdin (`what`: "OCI state", "OCI config.json"), at most `limit` bytes. A hook
// is run by a runtime, which writes it there; run by hand, it would wait on the terminal for ever, so a
// terminal is refused at once: "stdin is a terminal, not the OCI state a runtime writes (this is a hook:
// a runtime runs it)", and nothing at all is "no OCI state on stdin (a runtime writes it there)".
Result<std::string> read_hook_stdin(std::string_view what, size_t limit);

}  // namespace gpuctk::cli
