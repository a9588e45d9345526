#pragma once
// Applying CDI container edits to an OCI runtime config (config.json) held as a JSON DOM.
//
// The rules are those of the CDI library's ContainerEdits.Apply (pkg/cdi/container-edits.go), in its
// order: env, device nodes (+ cgroup rules), netDevices, mounts (+ sort), hooks, intelRdt,
// additionalGids. Deliberate choices where the reference differs between releases or is not
// idempotent:
//
//  - env: a key that already exists in `process.env` is replaced in place (every entry with that
//    key), as at CDI HEAD. Releases up to v1.1.0 append a second entry, and glibc's getenv (first
//    match wins) then hands the image's value to the program. A new key is appended; within the
//    edits a later duplicate replaces the earlier value in place.
//  - device nodes: missing information is taken from the host node (`StatNode`, lstat: symlinks are
//    not followed), as CDI v1.1.0 does. A node is "minimally specified" when it has a type and a
//    non-zero major (or is a fifo); such a node is trusted as written and a failed stat is ignored.
//    The host is stat'ed when the node is not minimally specified (failure is an error naming the
//    host path) or when fileMode is unset (fileMode gets the host's permission bits). A type that
//    differs from the host's is an error for a node that is not minimally specified. uid/gid come
//    from `process.user` when unset and > 0. Any `linux.devices` entry with the same path is
//    removed, the node is appended. For b and c an allow rule {allow, type, major, minor, access} is
//    added to `linux.resources.devices` unless the very same rule is already there (the reference
//    appends duplicates; we do not, so applying twice is a no-op).
//  - mounts: every existing mount with the same destination is removed (the reference removes only
//    the first; removing all keeps a second apply a no-op), the mount is appended as
//    {destination, type, source, options}. When the edits have mounts, the whole `mounts` list is
//    then stable-sorted by the number of path components of the cleaned destination (CDI >= v1.0.0):
//    the runtime's mounts keep their relative order, a CDI mount comes after existing mounts of the
//    same depth.
//  - hooks: appended to `hooks.<hookName>`, unless an identical hook (same path, args, env, timeout;
//    key order ignored) is already there. An unknown hook name is an error.
//  - intelRdt replaces `linux.intelRdt`; additionalGids are added to `process.user.additionalGids`
//    unless present, 0 is skipped; netDevices set `linux.netDevices[hostInterfaceName] = {name}`.
//
// Paths (device paths, mount destinations) are compared after lexical cleaning, so "/dev//x/" and
// "/dev/x" are the same entry. Applying the same edits twice gives exactly the DOM of applying them
// once. Keys the edits do not touch keep their values and their order.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/spec.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

// The most supplementary groups a process may have (Linux's NGROUPS_MAX): a runtime's setgroups fails
// beyond it, so more additionalGids, from the edits or in the config with them, are an error here.
inline constexpr size_t k_max_additional_gids = 65536;

// What the host says about a device node.
struct HostNode {
  char type = 0;  // 'c', 'b' or 'p'
  int64_t major = 0;
  int64_t minor = 0;
  uint32_t mode = 0;  // permission bits (st_mode & 0777)
};

// Examines a host device node. Errors read like "stat /dev/x: No such file or directory"; a path that
// is no device node (a symlink, a regular file) gives "stat /dev/x: not a device node".
using StatNode = std::function<Result<HostNode>(const std::string& host_path)>;

// The real StatNode: lstat(2), symlinks not followed.
Result<HostNode> stat_host_node(const std::string& host_path);

// A device node as apply_edits writes it into linux.devices: type and numbers from the host where the spec
// leaves them out (see the rules above), the owner from the process's user where the node names none.
struct DeviceEntry {
  std::string path;       // in the container, as the spec writes it
  std::string host_path;  // the host node: the spec's hostPath, else path
  std::string type;       // "b", "c", "u" or "p"
  int64_t major = 0;
  int64_t minor = 0;
  std::optional<uint32_t> file_mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  bool operator==(const DeviceEntry&) const = default;
};

// An allow rule of linux.resources.devices, as apply_edits adds one for each b and c node.
struct DeviceRule {
  std::string type;  // "b" or "c"
  int64_t major = 0;
  int64_t minor = 0;
  std::string access;  // the node's permissions, "rwm" when it has none
  bool operator==(const DeviceRule&) const = default;
};

// The owner apply_edits gives a node without one: the config's process.user uid and gid when they are
// integers in 1..UINT32_MAX.
struct ProcessOwner {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

// `edits` checked and resolved, each list as apply_edits adds it to a config that has none of its own: what
// a caller that carries the edits out itself (hook prestart, in a created container) needs, typed.
struct ResolvedEdits {
  std::vector<std::string> env;           // each key once; a later value in the place of the first
  std::vector<DeviceEntry> devices;       // each cleaned path once, where its last entry was
  std::vector<DeviceRule> rules;          // of the b and c devices, each once, in order
  std::vector<NetDevice> net_devices;     // as given
  std::vector<Mount> mounts;              // each cleaned destination once (the last), parents first
  std::vector<Hook> hooks;                // each once (the first), every hookName a known one
  std::optional<IntelRdt> intel_rdt;      // as given
  std::vector<uint32_t> additional_gids;  // non-zero, each once
};

// Resolves `edits` for a container whose process user is `owner`: the node, environment and hook checks
// of apply_edits, with its errors (apply_edits is this, then each list merged into the config's own).
Result<ResolvedEdits> resolve_edits(const ContainerEdits& edits, const ProcessOwner& owner,
                                    const StatNode& stat = stat_host_node);

// The owner apply_edits takes from `config` (an OCI runtime config).
ProcessOwner process_owner(const nlohmann::ordered_json& config);

// Applies `edits` to `config` (an OCI runtime config). Missing objects and lists (`process`,
// `process.env`, `linux`, `linux.devices`, `mounts`, `hooks`, ...) are created. On error `config` is
// left exactly as it was. Errors:
//   CDI device "/dev/nvidia0": stat /dev/nvidia0: No such file or directory
//   CDI device "/dev/nvidia0": host type mismatch (b, c)          (the spec's type, the host's type)
//   CDI hook "/usr/bin/x": unknown hook name "preStart"
//   invalid environment variable "FOO"
//   OCI config: linux.devices is a string, expected an array      (a config of the wrong shape)
//   OCI config: process.user.additionalGids: 65537 groups, more than Linux allows (65536)
//   CDI additionalGids: 65537 groups, more than Linux allows (65536)
Result<void> apply_edits(nlohmann::ordered_json& config, const ContainerEdits& edits,
                         const StatNode& stat = stat_host_node);

// `from` added to the end of `into`, the way the reference aggregates edits before one apply: every list
// is `into`'s then `from`'s (no dedupe here; apply_edits handles duplicates), intelRdt is `from`'s when
// set, else `into`'s. Callers add a spec's spec-wide edits once, before that spec's first requested device.
void append(ContainerEdits& into, const ContainerEdits& from);

}  // namespace gpuctk::cdi
