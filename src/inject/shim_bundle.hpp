#pragma once
// What the runtime shim (`gpuctk runtime`, gpuctk-runtime) does to an OCI bundle before the real runtime
// creates its container: read <bundle>/config.json, gate it on the config file (entry.hpp) and give a
// container that asks for GPUs what the config's runtime-mode says: the GPUs themselves (inject), or
// gpuctk's prestart hook that injects them once the container exists (prestart). The command line, the
// engine's --log lines and the exec of the real runtime stay with the CLI (cli/runtime.cpp).

#include <string>

#include "inject/entry.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

// The bundle the runtime was asked to create a container from.
struct ShimBundle {
  std::string config_file;    // <bundle>/config.json (oci::RuntimeArgs::config_file)
  std::string bundle;         // the bundle directory, named in the log's context
  std::string gpuctk_config;  // the shim's $GPUCTK_CONFIG, "" when unset: the prestart hook gets it
};

// Edits `bundle.config_file` for `start` (read with start_hook): each of start.warnings (then cleared)
// and a pass-through warning ("<problem>; <config_file> asks for no GPU: left as it is") go to `warn` and
// the log. The file is written back (replaced, not fsynced: a bundle does not outlive the boot) only when
// the container asks for a GPU and something was added; a container that asks for none, a pass-through
// and any error leave it as it was. Errors: the file's (oci::read_config_file), start.problem for a
// container that may ask for a GPU, and the injection's (inject_request).
Result<void> edit_bundle(const ShimBundle& bundle, HookStart& start, const Warn& warn);

}  // namespace gpuctk::inject
