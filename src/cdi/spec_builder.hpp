#pragma once
// Builds the CDI spec for an inventory: one device per full GPU and per MIG device (under every naming
// strategy), an "all" device, and the common edits (control nodes, driver files, hooks, env).
// Pure and deterministic: the same inventory and options give the same spec, byte for byte once written.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cdi/hook_args.hpp"
#include "cdi/spec.hpp"
#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

// How devices are named (--device-name-strategy); several may be used at once.
enum class NameStrategy {
  index,       // "0", MIG "4:1"
  uuid,        // "GPU-...", "MIG-..."
  type_index,  // "gpu0", MIG "mig4:1"
};

// Parses "index", "uuid", "type-index".
Result<NameStrategy> parse_name_strategy(std::string_view text);

// The hook names, options and environment are cdi/hook_args.hpp's.

// Whether `hook` makes links with its "--link TARGET::LINK" pairs first, as gpuctk writes them: `gpuctk hook
// create-symlinks --link …` or `gpuctk hook container-start --link … [other steps' options]` (the
// capability filter drops the links whose target it drops, whichever of the two carries them).
bool is_create_symlinks_hook(const Hook& hook);

// Mount options of every host file a spec or the hook mounts but IPC files (driver files, GDS's cuFile
// configuration and udev database): read-only, no setuid bits or devices; rprivate keeps the container's
// mounts from propagating back to the host.
inline const std::vector<std::string> k_file_mount_options{"ro", "nosuid", "nodev", "rbind", "rprivate"};

// Mount options of every IPC file: a daemon's socket (persistenced, fabric manager) and the MPS pipe
// directory, as NVIDIA's v1.20 and libnvidia-container mount them. Not read-only: MPS makes its pipes in
// the directory at run time, and a nested runtime (enroot) must be able to bind a socket again, which a
// read-only mount locked in a user namespace refuses. Never executable, setuid or device-bearing. What
// write access adds on a socket is chmod/chown of its inode by a root that has CAP_FOWNER/CAP_CHOWN: the
// daemons' sockets are open to every user already (0666/0777), and the container was given them to use.
inline const std::vector<std::string> k_ipc_mount_options{"nosuid", "nodev", "rbind", "rprivate", "noexec"};

// The device majors that are the same on every Linux host: the NVIDIA driver's (GPUs, nvidiactl,
// nvidia-modeset; registered statically) and DRM's. Every other major a GPU spec meets (nvidia-uvm,
// nvidia-caps, the IMEX channels, NVSwitch, AMD's kfd) is handed out when its module loads and can change
// after a reboot or a driver reload.
inline constexpr uint32_t k_nvidia_major = 195;
inline constexpr uint32_t k_drm_major = 226;
bool is_fixed_major(uint32_t major);

// A discovered node as a spec writes it: type, mode, gid and cgroup access always; major and minor only
// when the major is fixed. For a dynamic major both are left out, and every CDI consumer (podman, CRI-O,
// containerd, docker, gpuctk's own apply) takes them from the host node when it injects, so a spec written
// before a reboot still names the right device after it.
DeviceNode spec_device_node(const discover::DeviceNode& node);

// Whether a spec's edits carry `additionalGids` for their device nodes (NVIDIA's toolkit v1.19+ writes
// them; its feature flag no-additional-gids-for-device-nodes leaves them out, for engines whose CDI library
// refuses the key: every library before v0.7.0, podman 4.3.1's v0.5.2 among them).
enum class AdditionalGids : uint8_t {
  for_device_nodes,  // the group of every node a non-root process could not open otherwise (the default)
  none,              // no additionalGids
};

// The groups a container's process needs to open `nodes`, as NVIDIA's v1.20.0 decides it per node: its gid
// when the gid is not 0, the node has a fileMode (not 0) and that mode is not both world readable and
// world writable; sorted, each once.
std::vector<uint32_t> device_node_gids(const std::vector<DeviceNode>& nodes);

// Sets the additionalGids of the spec's common edits and of each device's edits to device_node_gids of
// their own nodes (`AdditionalGids::none`: clears them). Edits follow their nodes: a node the builder
// moved into the common edits takes its group there.
void set_device_node_gids(Spec& spec, AdditionalGids mode);

// Checks a --disable-hook value: one of the hook names above (container-start aside), or "all".
Result<void> check_hook_name(std::string_view name);
// Checks an --enable-hook value: one of the hook names above (container-start aside); "all" is refused,
// as NVIDIA's v1.20 refuses it ("enabling all hooks is not supported").
Result<void> check_enable_hook_name(std::string_view name);

// Whether the IPC files discovery found (daemon sockets, the MPS pipe directory) are mounted
// (--feature-flag disable-ipc-discoverer leaves them out).
enum class IpcFiles : uint8_t {
  mount,
  leave_out,
};

struct BuildOptions {
  std::string vendor = "nvidia.com";
  std::string klass = "gpu";
  std::vector<NameStrategy> name_strategies{NameStrategy::index, NameStrategy::uuid};
  bool all_device = true;   // add the device "all" (the union of every device)
  bool management = false;  // one "all" device with every NVIDIA node; no per-GPU devices
  // Restrict the devices to these ids (index, GPU UUID, "gpu:mig", MIG UUID, "all"); empty = every GPU.
  // An id that matches nothing is an error listing the ids that exist. "none" alone: no GPU device but
  // one named "none" whose only edit is the env NVCT_EMPTY_DEVICE= (a CDI device needs an edit), and no
  // "all" device, as NVIDIA's v1.20 writes it: the common edits (driver files, hooks) without a GPU.
  std::vector<std::string> device_ids;
  std::string hook_path;                 // absolute path of the gpuctk binary the hooks run
  std::set<std::string> disabled_hooks;  // hook names, or "all"
  // Hook names turned on over disabled_hooks and the hooks that are off by default (chmod), as NVIDIA's
  // --enable-hook: `--disable-hook all --enable-hook update-ldcache` writes that one step alone.
  std::set<std::string> enabled_hooks;
  IpcFiles ipc_files = IpcFiles::mount;
  // Mount the 32-bit driver libraries (FileKind::library32), their links and their folder's update-ldcache
  // --folder. Off by default, as in NVIDIA's spec: only the compat32 capability, which no default request
  // has, uses them, and the engine pays for every mount at every start (`cdi generate --compat32`). The
  // hooks' in-memory spec turns it on: its edits go through the capability filter, which keeps them only
  // for compat32.
  bool libraries32 = false;
  AdditionalGids additional_gids = AdditionalGids::for_device_nodes;
};

// Whether a spec built with `options` carries the hook step `name`, NVIDIA's v1.20 rule: named by
// enabled_hooks, yes; chmod (off by default), no; named by disabled_hooks, or "all" there, no; else yes.
bool hook_enabled(const BuildOptions& options, std::string_view name);

// The spec for `inventory`, with cdiVersion set to the minimum its content needs.
Result<Spec> build_spec(const discover::Inventory& inventory, const BuildOptions& options);

// build_spec, then check_generated (cdi/validate.hpp): the spec that `cdi generate`, `install` and
// `--vendor-set` write for NVIDIA GPUs.
Result<Spec> generate_spec(const discover::Inventory& inventory, const BuildOptions& options);

}  // namespace gpuctk::cdi
