#pragma once
// The one place that turns a container's GPU request into CDI edits and applies them to its config.
// Used by every injection point: `hook precreate`, the runtime shim, and `cdi inject`.
//
// Resolution: requested ids become devices of the configured kind ("nvidia.com/gpu=0") and are looked
// up in the CDI spec directories. When no spec of that kind is installed, or the installed one was
// generated for another driver version than the running one, the spec is built in memory from the host
// (proc mode: NVML is never initialised here) and a warning is logged.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/spec.hpp"
#include "config/config.hpp"
#include "config/log.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

struct InjectResult {
  bool changed = false;              // false: not a GPU container, config untouched
  std::vector<std::string> devices;  // qualified names applied, in request order
  std::string spec_source;           // spec file(s) used, or "in-memory spec (...)"
};

// The CDI edits a container's request resolves to, not yet applied: what `inject_request` applies to
// config.json and what the prestart hook carries out live. Hooks the edits run have a safe environment
// when the spec gave them none.
struct ResolvedRequest {
  bool gpu_container = false;        // false: not a GPU container, nothing else is set
  cdi::ContainerEdits edits;         // everything to do, in CDI order
  std::vector<std::string> devices;  // qualified names, in request order
  std::string spec_source;           // spec file(s) used, or "in-memory spec (...)"
};

// Reads the request from `config` (env, mounts, annotations) and resolves it against the spec
// directories (or an in-memory spec). Errors are those of inject_request.
Result<ResolvedRequest> resolve_request(const nlohmann::ordered_json& config, const config::Config& cfg,
                                        const config::Log& log);

// "nvidia.com/gpu=0,nvidia.com/gpu=1 from /etc/cdi/nvidia.yaml", for log lines.
std::string describe(const ResolvedRequest& resolved);

// Reads the request from `config` (env, mounts, annotations) and applies it. On error `config` may be
// partly edited: callers write it back only on success.
Result<InjectResult> inject_request(nlohmann::ordered_json& config, const config::Config& cfg,
                                    const config::Log& log);

// Applies the fully qualified CDI devices `names` to `config`, all driver capabilities included.
Result<InjectResult> inject_devices(nlohmann::ordered_json& config, const std::vector<std::string>& names,
                                    const config::Config& cfg, const config::Log& log);

}  // namespace gpuctk::inject
