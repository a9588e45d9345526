#pragma once
// The Container Device Interface spec model, covering every field of CDI 0.3.0 to 1.1.0.
//
// Plain aggregates: the codec fills them, the builder and the injector construct them directly.
// Every member has a default initializer, so designated initializers may name only what they set
// (`DeviceNode{.path = "/dev/x", .type = "c"}`) without -Wmissing-field-initializers.
// A field is std::optional where "present" and "absent" mean different things (a present-but-empty
// `intelRdt` needs cdiVersion 0.7.0, a present `uid: 0` is an explicit owner); everywhere else the
// empty value means absent and is never written (older CDI libraries reject unknown keys even when
// they are empty, so omitting them keeps files readable by old runtimes).
//
// Field order follows the reference Go structs; the codec writes keys in this order.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuctk::cdi {

// A device node to create in the container (`deviceNodes[]`).
struct DeviceNode {
  std::string path{};              // in the container; required
  std::string host_path{};         // `hostPath` (0.5.0); empty: same as path
  std::string type{};              // "b", "c", "u", "p" or empty (taken from the host node)
  std::optional<int64_t> major{};  // empty: taken from the host node
  std::optional<int64_t> minor{};
  std::optional<uint32_t> file_mode{};  // `fileMode`: permission bits, written in decimal
  std::string permissions{};            // cgroup access, letters of "rwm"; empty means "rwm"
  std::optional<uint32_t> uid{};        // owner in the container
  std::optional<uint32_t> gid{};

  bool operator==(const DeviceNode&) const = default;
};

// A mount (`mounts[]`); options are passed through verbatim (nothing adds "bind").
struct Mount {
  std::string host_path{};       // `hostPath`: OCI source; required
  std::string container_path{};  // `containerPath`: OCI destination; required
  std::vector<std::string> options{};
  std::string type{};  // filesystem type (0.4.0)

  bool operator==(const Mount&) const = default;
};

// An OCI hook (`hooks[]`).
struct Hook {
  std::string hook_name{};          // `hookName`: prestart, createRuntime, createContainer, ...
  std::string path{};               // absolute path of the executable
  std::vector<std::string> args{};  // OCI semantics: args[0] is argv[0]
  std::vector<std::string> env{};   // KEY=VALUE
  std::optional<int> timeout{};     // seconds; > 0 when set

  bool operator==(const Hook&) const = default;
};

// The OCI hook points a CDI `hookName` may name, exact case (OCI runtime-spec "POSIX-platform Hooks").
inline constexpr std::array<std::string_view, 6> k_hook_names{
    "prestart",         // deprecated in OCI, still run by runc and crun; accepted by every CDI library
    "createRuntime",    // runtime namespace, after the container's namespaces exist
    "createContainer",  // container namespace, before pivot_root
    "startContainer",   // container namespace, before the user process
    "poststart",        // after the user process started
    "poststop",         // after the container is deleted
};

// Intel RDT settings (`intelRdt`, 0.7.0). enableCMT/enableMBM exist in 0.7.0 to 1.0.0 only;
// schemata/enableMonitoring arrived in 1.1.0.
struct IntelRdt {
  std::string clos_id{};                               // `closID`
  std::string l3_cache_schema{};                       // `l3CacheSchema`
  std::string mem_bw_schema{};                         // `memBwSchema`
  std::optional<std::vector<std::string>> schemata{};  // present (even empty) needs 1.1.0
  bool enable_monitoring = false;                      // `enableMonitoring` (1.1.0)
  bool enable_cmt = false;                             // `enableCMT` (removed in 1.1.0)
  bool enable_mbm = false;                             // `enableMBM` (removed in 1.1.0)

  bool operator==(const IntelRdt&) const = default;
};

// A host network interface moved into the container (`netDevices[]`, 1.1.0).
struct NetDevice {
  std::string host_interface_name{};  // `hostInterfaceName`
  std::string name{};                 // name inside the container

  bool operator==(const NetDevice&) const = default;
};

// Changes to make to a container (`containerEdits`).
struct ContainerEdits {
  std::vector<std::string> env{};  // KEY=VALUE
  std::vector<DeviceNode> device_nodes{};
  std::vector<Mount> mounts{};
  std::vector<Hook> hooks{};
  std::optional<IntelRdt> intel_rdt{};      // present (even empty) needs 0.7.0
  std::vector<uint32_t> additional_gids{};  // `additionalGids` (0.7.0)
  std::vector<NetDevice> net_devices{};     // `netDevices` (1.1.0)

  // True when there is nothing to apply (no list has an entry and intelRdt is absent).
  [[nodiscard]] bool empty() const {
    return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty() && !intel_rdt &&
           additional_gids.empty() && net_devices.empty();
  }

  bool operator==(const ContainerEdits&) const = default;
};

// One device of a spec, requested as "<kind>=<name>".
struct Device {
  std::string name{};
  std::map<std::string, std::string> annotations{};  // CDI metadata (0.6.0); never reaches the container
  ContainerEdits container_edits{};                  // must not be empty

  bool operator==(const Device&) const = default;
};

// A whole spec file.
struct Spec {
  std::string cdi_version{};                         // `cdiVersion`, e.g. "0.5.0"
  std::string kind{};                                // "vendor/class"
  std::map<std::string, std::string> annotations{};  // 0.6.0
  std::vector<Device> devices{};
  ContainerEdits container_edits{};  // applied once when any device of the spec is requested

  bool operator==(const Spec&) const = default;
};

}  // namespace gpuctk::cdi
