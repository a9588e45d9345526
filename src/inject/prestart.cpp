#include "inject/prestart.hpp"

#include <fcntl.h>
#include <sys/mount.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "cdi/hook_args.hpp"
#include "oci/bundle.hpp"
#include "oci/state.hpp"
#include "rootfs/cgroup_child.hpp"
#include "util/path.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

namespace gpuctk::inject {

namespace {

using Json = nlohmann::ordered_json;

oci::HookCommand hook_command(const cdi::Hook& hook) {
  // A hand-written entry without an environment gets the fixed PATH.
  return {.path = hook.path,
          .args = hook.args,
          .env = hook.env.empty() ? cdi::k_safe_hook_env : hook.env,
          .timeout = hook.timeout};
}

Result<void> plan_nodes(const cdi::ResolvedEdits& edits, LivePlan& plan) {
  for (const auto& device : edits.devices) {
    LivePlan::Node node;
    node.spec.path = clean_path(device.path);
    if (device.type != "c" && device.type != "b") {
      return fail("CDI device " + quote(node.spec.path) + " of type " + quote(device.type) +
                  " cannot be created at prestart (only character and block devices)");
    }
    node.spec.type = device.type[0];
    node.spec.major = static_cast<uint32_t>(device.major);
    node.spec.minor = static_cast<uint32_t>(device.minor);
    node.spec.mode = device.file_mode.value_or(0666);  // runc's default for a device without fileMode
    node.spec.uid = device.uid.value_or(0);
    node.spec.gid = device.gid.value_or(0);
    node.host_path = device.host_path;
    plan.nodes.push_back(std::move(node));
  }
  for (const auto& rule : edits.rules) {
    plan.rules.push_back(
        {rule.type[0], static_cast<uint32_t>(rule.major), static_cast<uint32_t>(rule.minor), rule.access});
  }
  return {};
}

Result<void> plan_mounts(const cdi::ResolvedEdits& edits, LivePlan& plan) {
  for (const auto& mount : edits.mounts) {
    LivePlan::Bind bind;
    bind.source = mount.host_path;
    bind.destination = clean_path(mount.container_path);
    auto parsed = rootfs::parse_bind_options(mount.options, mount.type);
    if (!parsed) {
      return fail_with("CDI mount " + quote(bind.destination), parsed.error());
    }
    bind.options = *parsed;
    plan.mounts.push_back(std::move(bind));
  }
  return {};
}

Result<void> plan_hooks(const cdi::ResolvedEdits& edits, LivePlan& plan) {
  std::vector<oci::HookCommand> create_runtime;
  for (const auto& hook : edits.hooks) {
    if (hook.hook_name == "prestart") {
      plan.runtime_hooks.push_back(hook_command(hook));
    } else if (hook.hook_name == "createRuntime") {
      create_runtime.push_back(hook_command(hook));
    } else if (hook.hook_name == "createContainer") {
      plan.container_hooks.push_back(hook_command(hook));
    } else {
      return fail("CDI hook " + quote(hook.path) + " of stage " + quote(hook.hook_name) +
                  " cannot be added by a prestart hook (use the runtime shim, the precreate hook or CDI)");
    }
  }
  // A runtime runs every prestart hook before the first createRuntime one.
  std::ranges::move(create_runtime, std::back_inserter(plan.runtime_hooks));
  return {};
}

// The additional groups the container's user has already (process.user.additionalGids).
std::set<uint32_t> existing_gids(const Json& config) {
  std::set<uint32_t> had;
  const auto process = config.find("process");
  if (process == config.end() || !process->is_object()) {
    return had;
  }
  const auto user = process->find("user");
  if (user == process->end() || !user->is_object()) {
    return had;
  }
  const auto gids = user->find("additionalGids");
  if (gids == user->end() || !gids->is_array()) {
    return had;
  }
  for (const auto& gid : *gids) {
    if (gid.is_number_integer() && gid.get<int64_t>() >= 0 && gid.get<int64_t>() <= UINT32_MAX) {
      had.insert(gid.get<uint32_t>());
    }
  }
  return had;
}

}  // namespace

Result<LivePlan> plan_live(const Json& config, const std::string& root, const ResolvedRequest& resolved,
                           const cdi::StatNode& stat) {
  const auto& edits = resolved.edits;
  if (!edits.net_devices.empty()) {
    return fail(
        "CDI netDevices cannot be moved into a container at prestart (use the runtime shim, the "
        "precreate hook or CDI)");
  }
  if (edits.intel_rdt) {
    return fail("CDI intelRdt cannot be set at prestart (use the runtime shim, the precreate hook or CDI)");
  }
  GPUCTK_TRY_ASSIGN(const auto applied, cdi::resolve_edits(edits, cdi::process_owner(config), stat));
  LivePlan plan;
  plan.root = root;
  GPUCTK_TRY(plan_nodes(applied, plan));
  GPUCTK_TRY(plan_mounts(applied, plan));
  GPUCTK_TRY(plan_hooks(applied, plan));
  plan.env_not_set = applied.env;
  const auto had = existing_gids(config);
  for (const uint32_t gid : applied.additional_gids) {
    if (!had.contains(gid)) {
      plan.gids_not_added.push_back(gid);
    }
  }
  return plan;
}

ContainerHook foreign_hook(oci::OpenedHook opened) {
  // std::function wants a copyable function: the fd is shared by the copies.
  auto hook = std::make_shared<const oci::OpenedHook>(std::move(opened));
  return [hook](std::string_view state, const rootfs::Root&) { return oci::run_hook(*hook, state); };
}

Result<ContainerHook> prepare_foreign_hook(const oci::HookCommand& hook) {
  GPUCTK_TRY_ASSIGN(auto opened, oci::open_hook(hook));
  return foreign_hook(std::move(opened));
}

namespace {

// Steps 3 to 5 of the header.
Result<void> carry_out_in_container(const LivePlan& plan, const Process& process, const rootfs::RootId& host,
                                    const cgroup::DeviceCgroups& cgroups, std::string_view state_text,
                                    const ContainerHookPreparer& prepare, PrestartResult& result,
                                    const config::Log& log) {
  // Everything from the host first, while host paths are the host's.
  SandboxCgroupRef sandbox_cgroup;
  if (!plan.container_hooks.empty() && (!cgroups.v2_dir.empty() || !cgroups.v1_dir.empty())) {
    GPUCTK_TRY_ASSIGN(auto opened, rootfs::SandboxCgroup::open(cgroups.v2_dir, cgroups.v1_dir));
    sandbox_cgroup = std::make_shared<const rootfs::SandboxCgroup>(std::move(opened));
  }
  std::vector<ContainerHook> hooks;
  hooks.reserve(plan.container_hooks.size());
  for (const auto& hook : plan.container_hooks) {
    GPUCTK_TRY_ASSIGN(auto ready, prepare ? prepare(hook, sandbox_cgroup) : prepare_foreign_hook(hook));
    hooks.push_back(std::move(ready));
  }
  std::vector<rootfs::HostTree> trees;
  trees.reserve(plan.mounts.size());
  for (const auto& bind : plan.mounts) {
    GPUCTK_TRY_ASSIGN(auto tree, rootfs::clone_host_path(bind.source, bind.options));
    trees.push_back(std::move(tree));
  }
  // In a user namespace mknod is refused: the host's nodes are bound instead (nosuid, noexec; a device is
  // written through whatever the mount's read-only flag says, so it is not set).
  GPUCTK_TRY_ASSIGN(const bool user_namespace, rootfs::in_other_user_namespace(process));
  std::vector<rootfs::HostTree> node_trees;
  if (user_namespace) {
    const rootfs::BindOptions node_options{.attributes = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC};
    for (const auto& node : plan.nodes) {
      GPUCTK_TRY_ASSIGN(auto tree, rootfs::clone_host_path(node.host_path, node_options));
      node_trees.push_back(std::move(tree));
    }
  }
  // The host's /proc: the mount table is read through it in the container's namespace.
  UniqueFd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc) {
    return fail_errno("open /proc", errno);
  }

  GPUCTK_TRY(rootfs::enter_mount_namespace(process, host));
  GPUCTK_TRY_ASSIGN(const auto root, rootfs::Root::open(plan.root));
  GPUCTK_TRY_ASSIGN(auto mounts, rootfs::MountTable::read(proc.get()));
  {
    // Every node before the first mount: their parent directories are resolved once each, and that
    // cache holds only while nothing is mounted in the root (rootfs::ParentDirCache); it goes here.
    rootfs::ParentDirCache parents;
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      GPUCTK_TRY_ASSIGN(const auto made, rootfs::make_device_node(root, plan.nodes[i].spec,
                                                                  user_namespace ? &node_trees[i] : nullptr,
                                                                  mounts, &parents));
      result.nodes += made == rootfs::NodeResult::existed ? 0 : 1;
    }
  }
  for (size_t i = 0; i < plan.mounts.size(); ++i) {
    GPUCTK_TRY(rootfs::attach_tree(root, plan.mounts[i].destination, trees[i], mounts));
    ++result.mounts;
  }
  // The hooks work on the image's files as root: in a child in the container's cgroups, so that its
  // device cgroup applies to whatever they open, as it does to the runtime's createContainer hooks.
  const auto run_hooks = [&]() -> Result<void> {
    for (const auto& hook : hooks) {
      GPUCTK_TRY(hook(state_text, root));
    }
    return {};
  };
  GPUCTK_TRY(sandbox_cgroup ? rootfs::run_in_cgroup(*sandbox_cgroup, run_hooks) : run_hooks());
  result.hooks += hooks.size();
  if (log.enabled(config::LogLevel::debug)) {
    log.write(config::LogLevel::debug, "prestart: " + std::to_string(result.nodes) + " device nodes made, " +
                                           std::to_string(result.mounts) + " mounts, " +
                                           std::to_string(result.hooks) +
                                           " hooks run in the container's mount namespace");
  }
  return {};
}

// The states of a container whose process exists and has not started: a runtime's prestart and
// createRuntime stages (runc says "creating", crun "created").
Result<void> check_status(const oci::State& state) {
  if (state.status == "creating" || state.status == "created") {
    return {};
  }
  return fail("the OCI state's status is " + quote(state.status) +
              ": gpuctk hook prestart runs at the prestart or createRuntime stage, while the container is "
              "being created (status \"creating\" or \"created\")");
}

}  // namespace

Result<PrestartResult> prestart(std::string_view state_text, const config::Config& cfg,
                                const config::Log& log, const ContainerHookPreparer& prepare_container_hook) {
  GPUCTK_TRY_ASSIGN(const auto state, oci::parse_state(state_text));
  GPUCTK_TRY_ASSIGN(const auto config, oci::read_config(state.bundle));
  PrestartResult result;
  result.container_id = state.id;
  GPUCTK_TRY_ASSIGN(result.resolved, resolve_request(config, cfg, log));
  if (!result.resolved.gpu_container) {
    return result;
  }
  if (state.pid <= 0) {
    return fail(
        "the OCI state has no pid: gpuctk hook prestart runs at the prestart or createRuntime stage, "
        "when the container's process exists");
  }
  GPUCTK_TRY(check_status(state));
  // The process from here on is this one, whatever happens to the pid; and still in the host's root.
  GPUCTK_TRY_ASSIGN(const auto process, Process::open(state.pid));
  GPUCTK_TRY_ASSIGN(const auto host_root, rootfs::this_root());
  GPUCTK_TRY(rootfs::check_process_root(process, host_root));
  GPUCTK_TRY_ASSIGN(const auto root, oci::rootfs_path(config, state.bundle));
  GPUCTK_TRY_ASSIGN(const auto plan, plan_live(config, root, result.resolved));
  if (!plan.env_not_set.empty()) {
    log.info("prestart: the environment of a created container cannot change; not set: " +
             join(plan.env_not_set, " "));
  }
  if (!plan.gids_not_added.empty()) {
    std::vector<std::string> gids;
    for (const auto gid : plan.gids_not_added) {
      gids.push_back(std::to_string(gid));
    }
    log.warning("prestart: the groups of a created container's process cannot change; not added: " +
                join(gids, " "));
  }
  // The container's cgroups: its device rules go there, and its hooks' sandboxed programs start there.
  cgroup::DeviceCgroups cgroups;
  if (!plan.rules.empty() || !plan.container_hooks.empty()) {
    GPUCTK_TRY_ASSIGN(cgroups, cgroup::find_device_cgroups(process));
  }
  // Device access first, from the runtime's namespace (the cgroup files are the host's).
  if (!plan.rules.empty()) {
    GPUCTK_TRY_ASSIGN(result.cgroups, cgroup::allow_devices(cgroups, plan.rules));
    log.info("prestart: device cgroup: " + std::to_string(result.cgroups.v1_rules) + " rules added to " +
             (cgroups.v1_dir.empty() ? std::string("(no v1 devices cgroup)") : cgroups.v1_dir) + ", " +
             std::to_string(result.cgroups.v2_programs_replaced) + " v2 programs widened" +
             (result.cgroups.v2_unrestricted ? " (no v2 program attached at " + cgroups.v2_dir + ")" : ""));
  }
  for (const auto& hook : plan.runtime_hooks) {
    GPUCTK_TRY(oci::run_hook(hook, state_text));
    ++result.hooks;
  }
  GPUCTK_TRY(carry_out_in_container(plan, process, host_root, cgroups, state_text, prepare_container_hook,
                                    result, log));
  result.changed = true;
  log.info("prestart: injected " + describe(result.resolved) + " into container " + quote(state.id));
  return result;
}

cdi::Hook prestart_hook(const std::string& hook_path, const std::string& config_file) {
  cdi::Hook hook{.hook_name = "prestart",
                 .path = hook_path,
                 .args = {"gpuctk", "hook", "prestart"},
                 .env = cdi::k_safe_hook_env};
  if (!config_file.empty()) {
    hook.args.insert(hook.args.end(), {"--config", config_file});
  }
  return hook;
}

}  // namespace gpuctk::inject
