#pragma once
// Running an OCI hook the way a runtime runs one: the program with its argv and exactly its environment,
// the container's state on stdin, success only on exit status 0, killed when its timeout passes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::oci {

struct HookCommand {
  std::string path;               // absolute path of the program
  std::vector<std::string> args;  // argv, args[0] included; empty: argv is just `path`
  std::vector<std::string> env;   // the whole environment
  std::optional<int> timeout;     // seconds
};

// Runs `hook` with `state` on its stdin and waits for it. Its stdout and stderr go to a private file whose
// first line is quoted in an error:
//   hook /usr/bin/x: exit status 3: "x: refusing"
//   hook /usr/bin/x: killed by signal 9 after its timeout of 2 s
//   hook /usr/bin/x: No such file or directory
Result<void> run_hook(const HookCommand& hook, std::string_view state);

}  // namespace gpuctk::oci
