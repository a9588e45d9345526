#pragma once
// The in-memory fallback of injection (inject/spec_resolver.hpp): the configured kind's devices built from
// the host when no installed spec of that kind can be used (none installed, or one generated for another
// driver). Discovery runs in proc mode: NVML is never initialised on a container's start path.

#include <string>
#include <vector>

#include "cdi/registry.hpp"
#include "config/config.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

struct InMemorySpec {
  // The devices of cfg.request.default_kind, in spec order, each with spec_file "(in memory)" and the
  // one shared spec.
  std::vector<cdi::ResolvedDevice> devices;
  std::string source;  // "in-memory spec (driver <version>)"
};

// Builds the spec `gpuctk cdi generate` would write (cfg's driver root, dev root, hook path and default
// kind). `why` says why it is needed and prefixes the errors of discovery and of the build:
// "<why>; building it in memory failed: <error>"; a default kind that is not "vendor/class" fails as
// "default-kind: <error>".
Result<InMemorySpec> build_in_memory_spec(const config::Config& cfg, const std::string& why);

}  // namespace gpuctk::inject
