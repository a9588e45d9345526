#pragma once
// What a container asks for: the GPU request read from its OCI config.json (pure logic, no I/O).
//
// Sources, in order of precedence (docs/architecture.md, "The request protocol"):
//  1. annotations whose key starts with one of `annotation_prefixes` ("cdi.k8s.io/..."): a comma list of
//     fully qualified CDI names; keys are read in sorted order;
//  2. volume mounts (only with `accept_volume_mounts`): `/dev/null` mounted on
//     /var/run/nvidia-container-devices/<id>, .../cdi/<vendor>/<class>/<name> or
//     .../cdi/<vendor>/<class>=<name> (.../imex/<channel> requests an IMEX channel, below);
//  3. the env NVIDIA_VISIBLE_DEVICES, honoured only for a privileged container or with
//     `accept_envvar_when_unprivileged`; not used at all when 1. or 2. requested devices.
// Annotations and volume mounts are set by the orchestrator (device plugin), not by the image, so they
// are trusted regardless of privilege; their devices are merged, in that order.
//
// Environment: process.env may hold a key more than once. The LAST occurrence wins everywhere, because
// that is the value the container's process sees: runc de-duplicates the environment keeping the last
// value (libcontainer prepareEnv), crun putenv()s the entries in order, and the reference
// toolkit builds a map in order. Entries that are not strings or have no "=" are skipped.
//
// Legacy CUDA image: CUDA_VERSION non-empty and NVIDIA_REQUIRE_CUDA unset or empty. Such an image with
// NVIDIA_VISIBLE_DEVICES unset requests all GPUs, gets all supported capabilities when
// NVIDIA_DRIVER_CAPABILITIES is unset, and gets the requirement cuda>=<major.minor of CUDA_VERSION>.
//
// When the result is not a GPU container, nothing else is read: no other variable can cause an error.
//
// Opt-in features (discover/gated_devices.hpp), of a GPU container only, as NVIDIA's toolkit v1.20 reads
// them: NVIDIA_GDS, NVIDIA_MOFED, NVIDIA_GDRCOPY, NVIDIA_NVSWITCH each exactly "enabled" (any other value
// is no request); not subject to accept-envvar-when-unprivileged, as in NVIDIA's toolkit.
//
// IMEX channels (discover/imex_channels.hpp), of a GPU container only, as NVIDIA's toolkit v1.20 reads
// them: the volume mounts /var/run/nvidia-container-devices/imex/<channel> (with `accept_volume_mounts`;
// <channel> is N, channel<N> or all: every channel the host has), else NVIDIA_IMEX_CHANNELS under the
// same privilege rule as NVIDIA_VISIBLE_DEVICES: a comma list of N or channel<N>. Its "all" is ignored
// with a log line, as NVIDIA ignores it (a variable an image sets must not hand out every channel;
// only the orchestrator's mount can), and "none", "void" or empty ask for none. N is decimal, without
// leading zeros, at most 1048575 (a 20-bit minor); anything else is an error naming the value.
//
// Everything here comes from the container (or from a pod spec anyone who can create pods writes), so
// it is bounded and parsed in linear time (docs/architecture.md, security rule 11): the limits below are
// errors that name the limit and the variable or annotation, never silent truncation.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/config.hpp"
#include "discover/capability.hpp"
#include "discover/gated_devices.hpp"
#include "inject/requirements.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

// Kubernetes allows 253 + 1 + 63 bytes for an annotation key and 256 KiB for all annotations together.
inline constexpr size_t k_max_annotation_key = 1024;
inline constexpr size_t k_max_annotation_value = 256 * 1024;
// The kernel's limit for one "NAME=value" environment string (MAX_ARG_STRLEN): a longer variable could
// not reach the container's process anyway. Applies to every variable gpuctk parses.
inline constexpr size_t k_max_env_value = 128 * 1024;
// NVIDIA_REQUIRE_* variables: an image has one or two.
inline constexpr size_t k_max_requirements = 64;
// CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY: PATH_MAX.
inline constexpr size_t k_max_mps_path = 4096;

using config::k_max_devices;
using config::RequestConfig;

struct Request {
  bool gpu_container = false;  // false: leave the config untouched (every other field is default)
  bool all = false;            // "all" anywhere in the list; `devices` is then empty
  bool driver_only = false;    // "none" and nothing else: driver files and control nodes, no GPU
  // Plain ids in request order, de-duplicated, replica suffixes stripped: "0", "GPU-…", "0:1", "MIG-…".
  // Checked for syntax only; whether they exist is decided against the spec.
  std::vector<std::string> devices;
  // Fully qualified CDI names in request order, de-duplicated (any vendor; kept even with `all`).
  std::vector<std::string> cdi_devices;
  discover::CapabilitySet capabilities;  // NVIDIA_DRIVER_CAPABILITIES, within supported_capabilities
  // Every NVIDIA_REQUIRE_* in name order, then the legacy one; empty when disabled.
  std::vector<Requirement> requirements;
  // NVIDIA_MIG_CONFIG_DEVICES / NVIDIA_MIG_MONITOR_DEVICES=all (privileged only).
  bool mig_config = false, mig_monitor = false;
  // CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY: paths in the container, absolute, without ".."
  // components, cleaned ("/a//b/./c/" -> "/a/b/c"); "" when unset or empty. Where they are mounted from
  // (if at all) is decided by inject against config.json's mounts and the host (see inject.hpp).
  std::string mps_pipe_directory;
  std::string mps_log_directory;
  // IMEX channels, in request order, each once; `imex_all`: every channel of the host (a mount's "all").
  std::vector<uint32_t> imex_channels;
  bool imex_all = false;
  // NVIDIA_GDS, NVIDIA_MOFED, NVIDIA_GDRCOPY, NVIDIA_NVSWITCH set to "enabled", in that order.
  std::vector<discover::GatedFeature> gated_features;
  bool privileged = false;       // see is_privileged
  std::vector<std::string> log;  // one line per decision worth knowing
};

// The request of the container whose config.json is `config`. Errors are one line naming the
// variable, annotation or mount and the bad value, e.g.
//   NVIDIA_VISIBLE_DEVICES: invalid device "xyz" (want an index, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid>,
//   a CDI name, all, none or void)
Result<Request> read_request(const nlohmann::ordered_json& config, const config::RequestConfig& rc);

// Whether the container of `config` could ask for a GPU under some configuration: what the injection
// points decide with when the config file is unusable (config/config.hpp), before its settings matter.
// Such a container fails with the config's error; any other runs untouched. The settings that decide
// whether a container asks (accept-envvar-when-unprivileged, accept-volume-mounts, annotation-prefixes)
// are taken at their most accepting, so that no working config can make a container a GPU one that this
// calls GPU-less:
//  - NVIDIA_VISIBLE_DEVICES set to anything but empty or "void", or a legacy CUDA image (privileged or
//    not: accept-envvar-when-unprivileged may be true);
//  - a /dev/null mount under /var/run/nvidia-container-devices/ (accept-volume-mounts may be true);
//  - an annotation with a "cdi.k8s.io/" key, or any annotation whose value holds a fully qualified CDI
//    name ("vendor.com/class=name" in its comma list), whatever its key (annotation-prefixes may name
//    any prefix);
//  - anything read_request refuses (a request it cannot read is a request).
// default-kind and supported-capabilities only shape a request already made.
bool may_request_gpu(const nlohmann::ordered_json& config);

// Whether CAP_SYS_ADMIN is in process.capabilities.bounding (or in process.capabilities itself when that
// is a plain list, the pre-1.0 OCI form). Anything missing or malformed: not privileged.
bool is_privileged(const nlohmann::ordered_json& config);

}  // namespace gpuctk::inject
