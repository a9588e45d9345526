#pragma once
// The configuration of the hook, the runtime shim and `cdi inject`: /etc/gpuctk/config.yaml (or --config,
// or $GPUCTK_CONFIG). A missing default file means the documented defaults below.
//
// A mistake in the file must never stop a container that asks for no GPU (the precreate hook and the
// shim see every container of the node), so reading is lenient: every valid key is applied over the
// defaults, an unknown key is a warning naming the nearest known key (NVIDIA's toolkit ignores unknown
// keys too), and the first error that makes the file unusable (bad YAML, a wrong type or value) is kept
// beside the settings, one line naming the file, the line and the key:
//   /etc/gpuctk/config.yaml:12: accept-volume-mounts: expected true or false, got "yes"
// The injection points decide with it (cli/hook_precreate.cpp): a container that could ask for a GPU
// under some configuration (inject::may_request_gpu) fails with the error; any other runs untouched.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/log.hpp"
#include "discover/capability.hpp"
#include "util/error.hpp"

namespace gpuctk::config {

// At most this many distinct devices (plain ids and CDI names together) per request, and at most this
// many annotations with a request prefix. A node has at most 16 GPUs x 7 MIG instances = 112 NVIDIA
// devices, and time-slicing replicas collapse to their GPU; the rest of the room is for other vendors'
// CDI devices requested beside them. Every request annotation names at least one device, so more
// annotations than devices is never a sensible request either.
inline constexpr size_t k_max_devices = 4096;

// The request section of /etc/gpuctk/config.yaml (inject/request.hpp reads a request with it).
struct RequestConfig {
  bool accept_envvar_when_unprivileged = true;
  bool accept_volume_mounts = false;  // opt-in, as in the reference
  // Empty prefixes are ignored.
  std::vector<std::string> annotation_prefixes{"cdi.k8s.io/"};
  discover::CapabilitySet supported_capabilities = discover::CapabilitySet::all();
  bool disable_require = false;  // config-wide NVIDIA_DISABLE_REQUIRE
  // Not used by read_request: plain ids stay plain in the Request.
  std::string default_kind = "nvidia.com/gpu";
  // k_max_devices; not a config key (tests raise it to show that parsing stays linear).
  size_t max_devices = k_max_devices;
};

inline constexpr const char* k_default_config_path = "/etc/gpuctk/config.yaml";
// Where the hooks and the shim log when the config says nothing: podman discards a precreate hook's
// stderr, so without a log the reason a container failed is lost. Appended to (O_APPEND, O_NOFOLLOW),
// created 0640, rotated at k_max_log_size (config/log.hpp).
inline constexpr const char* k_default_log_file = "/var/log/gpuctk.log";
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

// How update-ldcache writes a glibc image's linker cache.
enum class LdCacheMode : uint8_t {
  merge,     // the image's cache merged with the spec's entries in-process where that is proven to give
             // ldconfig's cache (ldcache/merge.hpp), the sandboxed ldconfig otherwise (the default)
  ldconfig,  // always the sandboxed host ldconfig
};

struct Config {
  // `spec-dirs`, lowest priority first; by default those CDI runtimes read: static specs, then specs
  // generated at boot.
  std::vector<std::string> spec_dirs{"/etc/cdi", "/var/run/cdi"};
  RequestConfig
      request;  // default-kind, annotation-prefixes, accept-*, supported-capabilities, disable-require
  std::string driver_root = "/";  // `driver-root`: for the in-memory spec when none is installed
  std::string dev_root = "/";     // `dev-root`
  std::vector<std::string> runtimes{"runc", "crun"};  // `runtimes`: the shim execs the first one found
  RuntimeMode runtime_mode = RuntimeMode::cdi;        // `runtime-mode`: cdi or prestart
  // `mps-pipe-roots` / `mps-log-roots`: host directories below which CUDA_MPS_PIPE_DIRECTORY /
  // CUDA_MPS_LOG_DIRECTORY (set by the container) may name one daemon's directory to mount, when
  // config.json does not mount that path already (inject/mps.hpp has the rules: strictly below a root, no
  // symlink, root-owned and not writable by others from the root down). Clean absolute paths, not "/".
  // No /tmp default: anyone can create /tmp/nvidia-mps first.
  std::vector<std::string> mps_pipe_roots{"/run/nvidia/mps"};
  std::vector<std::string> mps_log_roots{"/run/nvidia/mps"};
  // `hook-path`: the gpuctk binary the in-memory spec's createContainer hooks run: the installed path,
  // never /proc/self/exe (which reads "... (deleted)" after an upgrade replaced the binary).
  std::string hook_path = k_default_hook_path;
  // `no-additional-gids-for-device-nodes` (NVIDIA's `features.no-additional-gids-for-device-nodes`): the
  // specs gpuctk builds, in memory and with `cdi generate` (whose --feature-flag of that name does the
  // same), carry no additionalGids for device nodes that are not world read/writable.
  bool no_additional_gids_for_device_nodes = false;
  // `allow-ldconfig-from-container`: accepted and no longer used (true: one warning in the log of
  // update-ldcache). `--ldconfig-path PATH` names the host's ldconfig, with or without "@", as in
  // NVIDIA's toolkit; only the host's ldconfig ever runs on a container root.
  bool allow_ldconfig_from_container = false;
  LdCacheMode ld_cache = LdCacheMode::merge;  // `ld-cache`: merge or ldconfig
  // `log-file`: unset means k_default_log_file; "" logs nothing. A file the config names that cannot be
  // opened is an error (open_log); the default one is a warning, since a rootless engine runs the
  // hooks as a user who cannot write /var/log.
  std::optional<std::string> log_file;
  LogLevel log_level = LogLevel::info;  // `log-level`
};

// What reading a config file found.
struct ConfigFile {
  Config config;                      // every valid key over the defaults (all defaults after bad YAML)
  std::vector<std::string> warnings;  // e.g. `c.yaml:3: unknown key "log_file" ignored (did you mean
                                      // "log-file"?)`
  std::optional<Error> error;         // the first error that makes the file unusable; none: usable
};

// Parses the YAML text of a config file; `name` (its path) starts every error and warning.
ConfigFile parse_config_file(std::string_view text, const std::string& name);

// parse_config_file, with its error as the Result's (warnings are dropped): for tests and tools.
Result<Config> parse_config(std::string_view text, const std::string& name);

// The config to use: `explicit_path` (from --config) if given, else $GPUCTK_CONFIG, else the default path.
// Only the default path may be missing (-> defaults); a missing or unreadable explicit file is the
// ConfigFile's error ("config: read /x.yaml: No such file or directory"), with the defaults.
ConfigFile read_config(const std::string& explicit_path);

// The log `config` asks for (log-file, else k_default_log_file), at its log-level.
struct ConfigLog {
  Log log;                             // logs nothing when it could not be opened
  std::optional<std::string> warning;  // the default log could not be opened, or Log::refused()
  std::optional<Error> error;          // the configured log-file could not be opened
};
ConfigLog open_log(const Config& config);

}  // namespace gpuctk::config
