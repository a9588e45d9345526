#pragma once
// The configuration of the hook, the runtime shim and `cdi inject`: /etc/gpuctk/config.yaml (or --config,
// or $GPUCTK_CONFIG). A missing default file means the documented defaults below; a file that exists
// but is invalid (bad YAML, unknown key, wrong type) is an error naming the file and the key.

#include <cstdint>
#include <string>
#include <vector>

#include "cdi/registry.hpp"
#include "hook/log.hpp"
#include "hook/request.hpp"
#include "util/error.hpp"

namespace gpuctk::hook {

inline constexpr const char* k_default_config_path = "/etc/gpuctk/config.yaml";
#ifndef GPUCTK_INSTALLED_BINARY
#define GPUCTK_INSTALLED_BINARY "/usr/bin/gpuctk"
#endif
// Where `cmake --install` puts gpuctk (CMAKE_INSTALL_PREFIX/bin/gpuctk).
inline constexpr const char* k_default_hook_path = GPUCTK_INSTALLED_BINARY;

// How the runtime shim puts the GPUs into a container it creates.
enum class RuntimeMode : uint8_t {
  cdi,       // the CDI edits written into config.json before the runtime reads it (the default)
  prestart,  // a prestart hook entry (gpuctk hook prestart) added instead, which injects live: the legacy
             // mode of NVIDIA's runtime, for clusters that want the prestart path
};

struct Config {
  std::vector<std::string> spec_dirs{cdi::k_default_spec_dirs.begin(),
                                     cdi::k_default_spec_dirs.end()};  // `spec-dirs`, lowest priority first
  RequestConfig
      request;  // default-kind, annotation-prefixes, accept-*, supported-capabilities, disable-require
  std::string driver_root = "/";  // `driver-root`: for the in-memory spec when none is installed
  std::string dev_root = "/";     // `dev-root`
  std::vector<std::string> runtimes{"runc", "crun"};  // `runtimes`: the shim execs the first one found
  RuntimeMode runtime_mode = RuntimeMode::cdi;        // `runtime-mode`: cdi or prestart
  // `mps-pipe-roots` / `mps-log-roots`: host directories below which CUDA_MPS_PIPE_DIRECTORY /
  // CUDA_MPS_LOG_DIRECTORY (set by the container) may name one daemon's directory to mount, when
  // config.json does not mount that path already (inject.cpp has the rules: strictly below a root, no
  // symlink, root-owned and not writable by others from the root down). Clean absolute paths, not "/".
  // No /tmp default: anyone can create /tmp/nvidia-mps first.
  std::vector<std::string> mps_pipe_roots{"/run/nvidia/mps"};
  std::vector<std::string> mps_log_roots{"/run/nvidia/mps"};
  // `hook-path`: the gpuctk binary the in-memory spec's createContainer hooks run: the installed path,
  // never /proc/self/exe (which reads "... (deleted)" after an upgrade replaced the binary).
  std::string hook_path = k_default_hook_path;
  // `allow-ldconfig-from-container`: whether update-ldcache may run an ldconfig of the image (a path
  // without "@"). Off: only the host's ldconfig ever runs on a container root.
  bool allow_ldconfig_from_container = false;
  std::string log_file;                 // `log-file`: "" logs nothing
  LogLevel log_level = LogLevel::info;  // `log-level`
};

// Parses the YAML text of a config file; `name` is used in errors.
Result<Config> parse_config(std::string_view text, const std::string& name);

// The config to use: `explicit_path` (from --config) if given, else $GPUCTK_CONFIG, else the default path.
// Only the default path may be missing (-> defaults); a missing explicit file is an error.
Result<Config> load_config(const std::string& explicit_path);

}  // namespace gpuctk::hook
