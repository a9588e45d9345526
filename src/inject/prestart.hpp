#pragma once
// The OCI prestart (or createRuntime) hook: GPUs put into a container that the runtime has already
// created, live, from the runtime's namespace (the equivalent of nvidia-container-runtime-hook +
// `nvidia-container-cli configure`).
//
// The request is read and resolved exactly as at precreate (inject.hpp: same protocol, same spec or
// in-memory spec, same errors). Its CDI edits are then resolved for the container's process.user
// (cdi::resolve_edits, the checks and merges of cdi::apply_edits without a config: host nodes stat'ed,
// modes and owners filled, cgroup rules made, mounts sorted) and that result is carried out instead of
// written to config.json:
//   1. device cgroup: the rules added to the container's cgroup (cgroup/device_access.hpp; v1
//      devices.allow, v2 BPF program widened);
//   2. the spec's prestart/createRuntime hooks run, in the runtime's namespace;
//   3. everything else taken from the host opened on the host side: the createContainer hooks' programs
//      (and what gpuctk's own take from the host: ldconfig, the driver's params), the mount sources
//      (rootfs/live_mount.hpp), /proc; then the container's mount namespace entered (setns on the
//      state's pid) and its root checked to be still the host's, so that no host path is ever looked
//      up in a root the container controls;
//   4. device nodes made in the container's /dev (mknod; in a user namespace, the host node bind-mounted
//      over an empty file); driver files, sockets and directories bind-mounted with their options
//      (read-only, nosuid, nodev) onto targets resolved inside the container root;
//   5. the spec's createContainer hooks run there (create-symlinks, update-ldcache: the linker cache),
//      as the runtime would have run them, with the state on stdin; gpuctk's own run in a child placed
//      in the container's cgroups (rootfs/cgroup_child.hpp), so that its device cgroup applies to what
//      they open in the image, and start the programs they sandbox (ldconfig) there too, as the
//      runtime's createContainer hooks are.
// What cannot change after create is not done: environment variables stay what the image and the pod
// set (NVIDIA_VISIBLE_DEVICES is not rewritten to "void" as at precreate), and additional groups are
// not added; both are logged. Edits that would be wrong to leave out (netDevices, intelRdt, hooks of
// stages that have passed or run elsewhere: startContainer, poststart, poststop) are errors.
// Every mount is made inside the container's mount namespace, whose root is at prestart still the host
// path of its root filesystem (no pivot_root yet: runc and crun run these hooks before it, with the
// states of tests/oci/state_test.cpp); a shared mount point is refused
// so that nothing propagates back to the host. A container past that point (its process's root, or its
// namespace's, is not the host's: a hook run late, a namespace joined from another container) is
// refused before anything changes, and so is a state whose status is not "creating" or "created". The
// state's pid is held as a pidfd and its /proc directory (util/process.hpp) from before its cgroup is
// read, so every step is about that one process.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cdi/apply.hpp"
#include "cgroup/device_access.hpp"
#include "config/config.hpp"
#include "config/log.hpp"
#include "inject/inject.hpp"
#include "oci/hook_run.hpp"
#include "rootfs/live_mount.hpp"
#include "rootfs/sandbox.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

// Everything the prestart hook will do to one container, decided before anything is done.
struct LivePlan {
  std::string root;  // the container root's host path (<bundle>/<root.path>)
  struct Node {
    rootfs::NodeSpec spec;
    std::string host_path;  // bound from here in a user namespace
  };
  std::vector<Node> nodes;
  struct Bind {
    std::string source;       // host path
    std::string destination;  // in the container
    rootfs::BindOptions options;
  };
  std::vector<Bind> mounts;
  std::vector<cgroup::DeviceRule> rules;
  std::vector<oci::HookCommand> runtime_hooks;    // prestart, then createRuntime: in the runtime's namespace
  std::vector<oci::HookCommand> container_hooks;  // createContainer: in the container's, after the mounts
  std::vector<std::string> env_not_set;           // KEY=VALUE the edits asked for
  std::vector<uint32_t> gids_not_added;
};

// The plan for `resolved` (a GPU container's edits) in the container of `config` whose root is at
// `root`. `stat` examines host nodes (tests pass a fake). Errors name what cannot be done live:
//   CDI hook "/x" of stage "poststart" cannot be added by a prestart hook (use the runtime shim, the
//   precreate hook or CDI)
Result<LivePlan> plan_live(const nlohmann::ordered_json& config, const std::string& root,
                           const ResolvedRequest& resolved, const cdi::StatNode& stat = cdi::stat_host_node);

// What the hook did, for the log.
struct PrestartResult {
  bool changed = false;  // false: not a GPU container; nothing was touched
  std::string container_id;
  ResolvedRequest resolved;
  size_t nodes = 0, mounts = 0, hooks = 0;
  cgroup::AllowReport cgroups;
};

// One createContainer hook of the plan, ready to run in the container's mount namespace with the state
// and the container root opened there.
using ContainerHook = std::function<Result<void>(std::string_view state, const rootfs::Root& root)>;

// The container's cgroups, opened before its namespace is entered (null when it is in none of its own):
// where the programs that gpuctk's own hooks run in their sandbox start (rootfs/sandbox.hpp), so that
// the kernel checks their device accesses as the container's.
using SandboxCgroupRef = std::shared_ptr<const rootfs::SandboxCgroup>;

// Makes one createContainer hook ready. Called in the runtime's mount namespace, before the container's
// is entered: everything the hook takes from the host (its program, a host ldconfig, a host file) is
// opened while host paths still name the host's files. The default (an empty function) is
// prepare_foreign_hook. The CLI passes one that makes gpuctk's own hooks run in this process instead of
// exec'ing gpuctk again for each (an exec and a config load per hook are most of what a prestart hook
// costs), their sandboxed programs in `cgroup`.
using ContainerHookPreparer =
    std::function<Result<ContainerHook>(const oci::HookCommand& hook, const SandboxCgroupRef& cgroup)>;

// A hook run as a runtime would run it (oci::run_hook: the state on its stdin), from its program opened
// now (oci::open_hook) whatever its path names later. Errors are oci::open_hook's.
Result<ContainerHook> prepare_foreign_hook(const oci::HookCommand& hook);
ContainerHook foreign_hook(oci::OpenedHook opened);

// The whole hook: `state_text` is the OCI state from stdin (bounded by the caller). Reads
// <bundle>/config.json (oci::read_config), resolves the request, plans and carries it out in the
// container of the state's pid. Leaves this process in the container's mount namespace. Errors for a
// container it must not touch, before anything is done:
//   the OCI state's status is "running": gpuctk hook prestart runs at the prestart or createRuntime
//   stage, while the container is being created (status "creating" or "created")
//   the root directory of process 42 is not the host's: its container has already pivoted into its own
//   root (a prestart hook runs before pivot_root); refused
Result<PrestartResult> prestart(std::string_view state_text, const config::Config& cfg,
                                const config::Log& log,
                                const ContainerHookPreparer& prepare_container_hook = {});

// The hook the runtime shim's prestart mode adds to config.json (hooks.prestart): `hook_path` `hook prestart`
// (with `--config <config_file>` when one is given), PATH as its whole environment.
cdi::Hook prestart_hook(const std::string& hook_path, const std::string& config_file);

}  // namespace gpuctk::inject
