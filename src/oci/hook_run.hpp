#pragma once
// Running an OCI hook the way a runtime runs one: the program with its argv and exactly its environment,
// the container's state on stdin, success only on exit status 0, killed when its timeout passes.
//
// The program can be opened first (open_hook) and run later from that fd (execveat): a caller that is
// about to enter a container's mount namespace opens it while its path still names the host's file, so
// that nothing the container put at that path afterwards is ever executed.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::oci {

struct HookCommand {
  std::string path;               // absolute path of the program
  std::vector<std::string> args;  // argv, args[0] included; empty: argv is just `path`
  std::vector<std::string> env;   // the whole environment
  std::optional<int> timeout;     // seconds
};

// A hook whose program is open (O_PATH; the path's symlinks followed where it was opened).
struct OpenedHook {
  HookCommand command;
  UniqueFd program;
};

// Opens the program of `hook`. Errors name the hook as run_hook's do: "hook /usr/bin/x: No such file or
// directory".
Result<OpenedHook> open_hook(HookCommand hook);

// Runs the opened `hook` with `state` on its stdin and waits for it: its program is executed from the fd
// (execveat, AT_EMPTY_PATH), whatever its path names where this process is now; argv is still args (or
// the path), as a runtime gives it. (A script's interpreter gets /dev/fd/N as the script's name, as with
// fexecve; the fd is left open in the hook for that.) Its stdout and stderr go to a private file whose
// first line is quoted in an error:
//   hook /usr/bin/x: exit status 3: "x: refusing"
//   hook /usr/bin/x: killed by signal 9 after its timeout of 2 s
//   hook /usr/bin/x: Permission denied                (not executable)
Result<void> run_hook(const OpenedHook& hook, std::string_view state);

// open_hook, then run_hook: for a caller whose paths mean what they meant when the hook was chosen.
Result<void> run_hook(const HookCommand& hook, std::string_view state);

}  // namespace gpuctk::oci
