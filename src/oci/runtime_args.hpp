#pragma once
// The command line of a runc-compatible runtime (runc, crun), as a runtime shim receives it.
//
//   runc [global options] <subcommand> [subcommand options] [arguments]
//
// Global options come before the subcommand; which of them take a value is known from runc 1.1
// and crun 1.8 (`--help`): a value is given as `--root X` or `--root=X`, and runc also takes the
// single-dash forms (`-root X`). For `create` and `run` the subcommand's options are scanned for the
// bundle (`--bundle X`, `-b X`, `--bundle=X`, `-b=X`) and crun's `--config`/`-f`; runc also accepts
// options after the container id, so the whole rest is scanned (up to `--`).
//
// Anything the shim cannot be sure about makes the argv "unparseable": an unknown global option
// (we cannot know whether it eats the next argument, which might be the subcommand), a value-taking
// option at the end of argv, or an attached short form like `-b/x` (crun reads it as the bundle,
// runc rejects it). The shim then passes the argv through untouched and the real runtime reports
// its own error. An unknown option after the subcommand is assumed to take no value: the bundle is
// still found by its name.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace gpuctk::oci {

struct RuntimeArgs {
  std::string subcommand;       // "create", "run", "delete", ...; empty when argv has none
  size_t subcommand_index = 0;  // index of the subcommand in args; args.size() when there is none
  std::string bundle;           // create/run only: the bundle directory, absolute (default: cwd)
  std::string config_file;      // create/run only: the config the runtime reads, absolute:
                                //   <bundle>/config.json, or crun's --config relative to the cwd
  std::string root;             // --root; empty when not given
  std::string log_file;         // --log; empty when not given
  std::string log_format;       // --log-format ("text" or "json"); empty when not given
  std::string unparseable;      // why the argv was not understood; empty when it was. When set, the
                                // other fields are unreliable: pass argv through untouched.

  // True for the subcommands that read config.json and create a container (create, run).
  [[nodiscard]] bool creates_container() const { return subcommand == "create" || subcommand == "run"; }
};

// Parses `args`, the runtime's argv without the program name. `cwd` (absolute) resolves a relative
// or missing bundle; when it is empty and the bundle would need it, the argv is unparseable.
RuntimeArgs parse_runtime_args(std::span<const std::string> args, std::string_view cwd);

// The same against the process's current directory.
RuntimeArgs parse_runtime_args(std::span<const std::string> args);

}  // namespace gpuctk::oci
