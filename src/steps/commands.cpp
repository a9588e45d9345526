#include "steps/commands.hpp"

#include <algorithm>
#include <array>
#include <memory>

#include "discover/host_fs.hpp"
#include "ldcache/library_search.hpp"
#include "ldcache/merge.hpp"
#include "steps/root_edits.hpp"
#include "util/strings.hpp"

namespace gpuctk::steps {

void HookArgs::add(std::string_view option, std::string value) {
  auto it = m_values.find(option);
  if (it == m_values.end()) {
    it = m_values.emplace(std::string(option), std::vector<std::string>{}).first;
  }
  it->second.push_back(std::move(value));
}

const std::vector<std::string>& HookArgs::all(std::string_view option) const {
  static const std::vector<std::string> k_none;
  const auto it = m_values.find(option);
  return it == m_values.end() ? k_none : it->second;
}

std::string HookArgs::one(std::string_view option) const {
  const auto& values = all(option);
  return values.empty() ? std::string() : values.back();
}

namespace {

using Kind = HookOption::Kind;

// A body that does nothing more than `body` with the config and log it is given.
template <class Body>
HookBody body_of(Body body) {
  return HookBody(std::move(body));
}

// create-symlinks --link TARGET::LINK...: the links a driver needs in the container (libcuda.so.1 ->
// libcuda.so.<version>, /dev/dri/by-path/...), created inside the root.
constexpr HookOption k_link{.name = cdi::k_opt_link.data(),
                            .kind = Kind::list,
                            .help = "TARGET::LINK: make LINK (a container path) a symlink to TARGET",
                            .value_name = "TARGET::LINK"};
constexpr HookOption k_create_symlinks_options[] = {k_link};

// The typed steps: each takes its part of a hook line (cdi/hook_args.hpp) and returns the body. The rows
// below read their options into the same types; container-start's typed form calls them directly.
Result<HookBody> links_body(const std::vector<cdi::HookLink>& given) {
  GPUCTK_TRY_ASSIGN(auto links, check_links(given));
  return body_of([links = std::move(links)](const rootfs::Root& root, const config::Config&,
                                            const config::Log& log) -> Result<void> {
    GPUCTK_TRY_ASSIGN(const auto changed, create_symlinks(root, links));
    if (log.enabled(config::LogLevel::debug)) {
      log.write(config::LogLevel::debug, "create-symlinks: " + std::to_string(changed) + " of " +
                                             std::to_string(links.size()) + " links created in " +
                                             root.path());
    }
    return {};
  });
}

Result<HookBody> prepare_create_symlinks_row(const HookArgs& args, const config::Config&, const config::Log&,
                                             const rootfs::SandboxLimits&) {
  GPUCTK_TRY_ASSIGN(const auto links, split_links(args.all(cdi::k_opt_link)));
  return links_body(links);
}

// enable-cuda-compat: the image's CUDA forward-compat libraries first in the linker path, when they are
// made for the host's driver and newer than it (steps/cuda_compat.hpp decides).
constexpr HookOption k_host_driver_version{
    .name = cdi::k_opt_host_driver_version.data(),
    .help =
        "The host's driver version, e.g. 570.211.01. With the compat library's note: used when the note "
        "lists the host driver's major and the compat library is newer; without a note: when the compat "
        "library's major is greater"};
constexpr HookOption k_host_cuda_version{
    .name = cdi::k_opt_host_cuda_version.data(),
    .help =
        "The CUDA version the host driver supports, e.g. 12.8. Used when the host driver version or the "
        "compat library's version is not known: the compat libraries are used when their note says a "
        "newer CUDA version, never without a note"};
constexpr HookOption k_compat_root{
    .name = cdi::k_opt_cuda_compat_container_root.data(),
    .help =
        "The folder of the compat libraries in the container (an absolute path, resolved inside the "
        "root); default /usr/local/cuda/compat"};
constexpr HookOption k_enable_cuda_compat_options[] = {k_host_driver_version, k_host_cuda_version,
                                                       k_compat_root};

HookBody compat_body(CudaCompatHost host, std::string compat_dir) {
  return body_of(
      [host = std::move(host), compat_dir = std::move(compat_dir)](
          const rootfs::Root& root, const config::Config&, const config::Log& log) -> Result<void> {
        GPUCTK_TRY_ASSIGN(const bool enabled, enable_cuda_compat(root, host, compat_dir, log));
        if (enabled) {
          log.info("enable-cuda-compat: using " + compat_dir + " in " + root.path());
        }
        return {};
      });
}

Result<HookBody> prepare_enable_cuda_compat(const HookArgs& args, const config::Config&, const config::Log&,
                                            const rootfs::SandboxLimits&) {
  return compat_body({.driver_version = args.one(cdi::k_opt_host_driver_version),
                      .cuda_version = args.one(cdi::k_opt_host_cuda_version)},
                     args.has(cdi::k_opt_cuda_compat_container_root)
                         ? args.one(cdi::k_opt_cuda_compat_container_root)
                         : std::string(k_cuda_compat_dir));
}

// update-ldcache --folder DIR...: the driver's library directories in the container's dynamic loader
// search: its linker cache (glibc), written by the host's ldconfig run in a sandbox on the container root,
// and musl's path file.
constexpr const char* k_default_ldconfig = "@/sbin/ldconfig";
constexpr HookOption k_ldconfig_path{
    .name = cdi::k_opt_ldconfig_path.data(),
    .help =
        "The host's ldconfig to run, PATH or @PATH (as NVIDIA's toolkit; .real beside it is preferred); an "
        "image's ldconfig is never run",
    .default_value = k_default_ldconfig};
constexpr HookOption k_folder{.name = cdi::k_opt_folder.data(),
                              .kind = Kind::list,
                              .help = "A library directory of the container to add to its cache",
                              .value_name = "DIR"};
constexpr HookOption k_ld_cache_entry{
    .name = cdi::k_opt_ld_cache_entry.data(),
    .kind = Kind::list,
    .help =
        "An entry the host's linker cache has for a mounted library, e.g. 0x303:0x0:libcuda.so.1:/usr/lib/"
        "x86_64-linux-gnu/libcuda.so.1 (flags and osversion in hex, the SONAME, the container path); with "
        "them the image's own cache is merged in-process instead of running ldconfig (config ld-cache), "
        "where the merge is proven to give ldconfig's cache",
    .value_name = "FLAGS:OSVERSION:SONAME:PATH"};
constexpr HookOption k_update_ldcache_options[] = {k_ldconfig_path, k_folder, k_ld_cache_entry};

// The ldconfig named by `ldconfig_path` (cdi::ContainerStartArgs: none given, the default).
Result<HookBody> ldcache_body(const std::vector<std::string>& folders,
                              const std::vector<std::string>& entries,
                              const std::optional<std::string>& ldconfig_path, const config::Config& config,
                              const config::Log& log, const rootfs::SandboxLimits& limits) {
  if (folders.size() > k_max_hook_args) {
    return fail("too many folders");
  }
  GPUCTK_TRY_ASSIGN(auto facts, ldcache::parse_ld_cache_facts(entries));
  const std::string ldconfig = ldconfig_path.value_or(k_default_ldconfig);
  if (config.allow_ldconfig_from_container) {
    log.warning("update-ldcache: allow-ldconfig-from-container is no longer used: --ldconfig-path " +
                quote(ldconfig) + " names the host's ldconfig, and an image's is never run");
  }
  // The host's ldconfig is opened now, but an error only counts where it is run: a musl image runs none.
  auto host = std::make_shared<Result<UniqueFd>>(open_host_ldconfig(ldconfig));
  return body_of([folders, host, limits, facts = std::move(facts)](const rootfs::Root& root,
                                                                   const config::Config& cfg,
                                                                   const config::Log& lg) -> Result<void> {
    // The merge where the config allows it; its reason for leaving the cache to ldconfig in the debug log.
    const auto merge = [&](const rootfs::Root& r, const ldcache::LdScan& scan,
                           rootfs::ImageBudget& budget) -> Result<bool> {
      if (cfg.ld_cache != config::LdCacheMode::merge) {
        lg.write(config::LogLevel::debug, "update-ldcache: ldconfig (config ld-cache: ldconfig)");
        return false;
      }
      GPUCTK_TRY_ASSIGN(const auto outcome, ldcache::merge_ld_cache(r, scan, facts, budget));
      if (outcome.merged) {
        lg.write(config::LogLevel::debug, "update-ldcache: merge: " + std::to_string(outcome.added) +
                                              " entries added to the image's linker cache in " + r.path());
      } else {
        lg.write(config::LogLevel::debug, "update-ldcache: ldconfig: " + outcome.reason);
      }
      return outcome.merged;
    };
    // How the sandboxed ldconfig sees the root (idmapped as its owner, or as nobody and why): a warning
    // only where that loses something of the image from its cache.
    rootfs::SandboxLimits run_limits = limits;
    run_limits.note = [&](rootfs::SandboxView view, const std::string& m) {
      lg.write(
          view == rootfs::SandboxView::nobody_skipping ? config::LogLevel::warning : config::LogLevel::debug,
          "update-ldcache: " + m);
    };
    return ldcache::update_library_search(
        root, folders,
        [&]() -> Result<UniqueFd> {
          if (!*host) {
            return std::unexpected(host->error());
          }
          return std::move(**host);
        },
        run_limits, merge);
  });
}

Result<HookBody> prepare_update_ldcache(const HookArgs& args, const config::Config& config,
                                        const config::Log& log, const rootfs::SandboxLimits& limits) {
  return ldcache_body(
      args.all(cdi::k_opt_folder), args.all(cdi::k_opt_ld_cache_entry),
      args.has(cdi::k_opt_ldconfig_path) ? std::optional(args.one(cdi::k_opt_ldconfig_path)) : std::nullopt,
      config, log, limits);
}

// disable-device-node-modification: the container sees ModifyDeviceFiles: 0 in
// /proc/driver/nvidia/params, so the driver's user-space libraries in it never try to mknod.
Result<HookBody> params_body(const config::Config& config) {
  // The host's file now (hook prestart: before it enters the container's namespace).
  const std::string host = discover::under_root(config.dev_root, "/proc/driver/nvidia/params");
  GPUCTK_TRY_ASSIGN(auto params, read_hidden_params(host));
  return body_of([params = std::move(params)](const rootfs::Root& root, const config::Config&,
                                              const config::Log&) -> Result<void> {
    if (params) {
      GPUCTK_TRY(mount_hidden_params(root, *params));
    }
    return {};
  });
}

Result<HookBody> prepare_disable_device_node_modification(const HookArgs&, const config::Config& config,
                                                          const config::Log&, const rootfs::SandboxLimits&) {
  return params_body(config);
}

// update-application-profile: the driver's EGLVisibleDGPUDevices for the container's GPUs (NVIDIA's v1.20
// specs run it; root_edits.hpp).
HookBody profile_body() {
  return body_of([](const rootfs::Root& root, const config::Config&, const config::Log& lg) -> Result<void> {
    GPUCTK_TRY_ASSIGN(const auto mask, update_application_profile(root, lg));
    if (mask) {
      lg.write(config::LogLevel::debug, "update-application-profile: wrote " +
                                            std::string(k_application_profile) +
                                            " (EGLVisibleDGPUDevices mask " + std::to_string(*mask) + ")");
    }
    return {};
  });
}

Result<HookBody> prepare_update_application_profile(const HookArgs&, const config::Config&,
                                                    const config::Log&, const rootfs::SandboxLimits&) {
  return profile_body();
}

// chmod --mode M --path P...: permissions of directories inside the container (not emitted by default;
// for rootless runtimes that create nested /dev directories with the wrong mode).
// "755" -> 0755: one to four octal digits.
Result<unsigned> parse_octal_mode(std::string_view text) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("01234567") != std::string_view::npos) {
    return fail(quote(text) + " is not an octal mode such as 755");
  }
  unsigned mode = 0;
  for (const char c : text) {
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  return mode;
}

Result<void> check_octal_mode(std::string_view text) {
  GPUCTK_TRY(parse_octal_mode(text));
  return {};
}

constexpr HookOption k_chmod_options[] = {
    {.name = "--mode", .help = "Octal mode, e.g. 755", .required = true, .check = check_octal_mode},
    {.name = "--path", .kind = Kind::list, .help = "A container path", .required = true},
};

Result<HookBody> prepare_chmod(const HookArgs& args, const config::Config&, const config::Log&,
                               const rootfs::SandboxLimits&) {
  GPUCTK_TRY_ASSIGN(const unsigned mode, parse_octal_mode(args.one("--mode")));
  return body_of([mode, paths = args.all("--path")](const rootfs::Root& root, const config::Config&,
                                                    const config::Log&) -> Result<void> {
    GPUCTK_TRY(chmod_paths(root, mode, paths));
    return {};
  });
}

// container-start: the spec-wide steps of gpuctk's own specs in ONE process (a hook process per step costs
// the runtime a fork, an exec and the state each time, and gpuctk its start). Each step is its own row,
// prepared and run with the same options, in the order a runtime ran them as separate hooks; a step runs
// only when one of its options is given; the first error stops the rest, as a runtime stops at the
// first failed hook, and it reads as the step's own ("update-ldcache: ...").
constexpr HookOption k_disable_device_node_modification{
    .name = cdi::k_opt_disable_device_node_modification.data(),
    .kind = Kind::flag,
    .help = "Run the disable-device-node-modification step"};
constexpr HookOption k_update_application_profile{.name = cdi::k_opt_update_application_profile.data(),
                                                  .kind = Kind::flag,
                                                  .help = "Run the update-application-profile step"};
constexpr HookOption k_container_start_options[] = {k_link,
                                                    k_host_driver_version,
                                                    k_host_cuda_version,
                                                    k_compat_root,
                                                    k_ldconfig_path,
                                                    k_folder,
                                                    k_ld_cache_entry,
                                                    k_disable_device_node_modification,
                                                    k_update_application_profile};
// `body` with its errors, and those of the body it returns, prefixed with `name` once ("update-ldcache:
// ..."), as that hook's own would be.
Result<HookBody> named(std::string_view name, Result<HookBody> body) {
  if (!body) {
    return fail_with(std::string(name), body.error());
  }
  return HookBody([name = std::string(name), body = std::move(*body)](const rootfs::Root& root,
                                                                      const config::Config& cfg,
                                                                      const config::Log& lg) -> Result<void> {
    if (auto r = body(root, cfg, lg); !r) {
      return fail_with(name, r.error());
    }
    return {};
  });
}

Result<void> add_step(std::vector<HookBody>& steps, std::string_view name, Result<HookBody> body) {
  GPUCTK_TRY_ASSIGN(auto step, named(name, std::move(body)));
  steps.push_back(std::move(step));
  return {};
}

Result<HookBody> prepare_container_start_row(const HookArgs& args, const config::Config& config,
                                             const config::Log& log, const rootfs::SandboxLimits& limits) {
  cdi::ContainerStartArgs typed;
  auto links = split_links(args.all(cdi::k_opt_link));
  if (!links) {
    return fail_with(std::string(cdi::k_hook_create_symlinks), links.error());
  }
  typed.links = std::move(*links);
  const std::pair<std::string_view, std::optional<std::string>*> singles[] = {
      {cdi::k_opt_host_driver_version, &typed.host_driver_version},
      {cdi::k_opt_host_cuda_version, &typed.host_cuda_version},
      {cdi::k_opt_cuda_compat_container_root, &typed.cuda_compat_container_root},
      {cdi::k_opt_ldconfig_path, &typed.ldconfig_path},
  };
  for (const auto& [option, field] : singles) {
    if (args.has(option)) {
      *field = args.one(option);
    }
  }
  typed.folders = args.all(cdi::k_opt_folder);
  typed.ld_cache_entries = args.all(cdi::k_opt_ld_cache_entry);
  typed.disable_device_node_modification = args.has(cdi::k_opt_disable_device_node_modification);
  typed.update_application_profile = args.has(cdi::k_opt_update_application_profile);
  return prepare_container_start(typed, config, log, limits);
}

// The table. The NVIDIA-named rows keep nvidia-ctk's names and options.
constexpr HookRow k_hooks[] = {
    // The links of the driver's libraries and of a GPU's /dev/dri/by-path entries.
    {cdi::k_hook_create_symlinks.data(), "createContainer hook: create symlinks inside the container root",
     "A createContainer hook: reads the OCI state on stdin. A link that already points at TARGET is left "
     "alone; anything else at LINK (not a directory) is replaced atomically.",
     k_create_symlinks_options, prepare_create_symlinks_row},
    // The linker cache: must run after the links and the compat drop-in it lists.
    {cdi::k_hook_update_ldcache.data(),
     "createContainer hook: add library directories to the container's linker cache (the image's cache "
     "merged, or a sandboxed host ldconfig)",
     "A createContainer hook: reads the OCI state on stdin. Folders the image's own configuration does not "
     "name go in an /etc/ld.so.conf.d drop-in of the container, then ldconfig runs in new namespaces, "
     "pivoted into the container root made read-only, as an unprivileged user of its own user namespace, "
     "with no capability and a seccomp allow-list, and the cache it made is installed. A musl image "
     "(/lib/ld-musl-<arch>.so.1) gets them in /etc/ld-musl-<arch>.path instead, and no ldconfig run. With "
     "--ld-cache-entry values and config ld-cache: merge (the default), a glibc image's own ld.so.cache "
     "gets those entries in-process instead of the ldconfig run, where that is proven to give ldconfig's "
     "cache (the debug log says which and why).",
     k_update_ldcache_options, prepare_update_ldcache},
    // CUDA forward compatibility: a drop-in the linker cache then lists first.
    {cdi::k_hook_enable_cuda_compat.data(),
     "createContainer hook: use the image's CUDA forward-compat libraries when they fit the host driver",
     "A createContainer hook: reads the OCI state on stdin. Looks for one libcuda.so.*.* in the compat "
     "folder and reads its .note.cuda.fwd_compatibility; writes /etc/ld.so.conf.d/00-gpuctk-compat.conf "
     "naming the folder when its libraries are to be used. Does nothing without a host version. A note it "
     "cannot read is a warning in the log, never an error.",
     k_enable_cuda_compat_options, prepare_enable_cuda_compat},
    // The driver's params file with ModifyDeviceFiles: 0 (no mknod from the container's libraries).
    {cdi::k_hook_disable_device_node_modification.data(),
     "createContainer hook: hide ModifyDeviceFiles from the container's driver libraries",
     "A createContainer hook: reads the OCI state on stdin. Mounts a read-only copy of the host's "
     "<dev-root>/proc/driver/nvidia/params with ModifyDeviceFiles: 0 over the container's.",
     {},
     prepare_disable_device_node_modification},
    // EGL/Vulkan GPU visibility through the driver's application profile (NVIDIA's v1.20 specs).
    {cdi::k_hook_update_application_profile.data(),
     "createContainer hook: restrict EGL/Vulkan to the container's GPUs (the driver's application profile)",
     "A createContainer hook: reads the OCI state on stdin. The minors of the container's /dev/nvidia<N> "
     "character devices become EGLVisibleDGPUDevices in "
     "/etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf, as NVIDIA's hook of that name "
     "writes it; without such a node nothing is written.",
     {},
     prepare_update_application_profile},
    // Modes of directories a rootless runtime made (never in gpuctk's own specs by default).
    {cdi::k_hook_chmod.data(), "createContainer hook: set the mode of paths inside the container root",
     "A createContainer hook: reads the OCI state on stdin. Never follows a symlink; EPERM is ignored.",
     k_chmod_options, prepare_chmod},
    // The spec-wide steps above in one process (gpuctk's own specs; its errors are its steps').
    {cdi::k_hook_container_start.data(),
     "createContainer hook: links, CUDA compat, linker cache, params and application profile in one process "
     "(gpuctk's own specs)",
     "A createContainer hook: reads the OCI state on stdin. Runs, in one process and in this order, the "
     "steps its options ask for: create-symlinks (--link), enable-cuda-compat (--host-driver-version, "
     "--host-cuda-version), update-ldcache (--folder), disable-device-node-modification and "
     "update-application-profile; each as that hook would, and the first that fails is the error.",
     k_container_start_options, prepare_container_start_row, false},
};

}  // namespace

std::span<const HookRow> hook_table() {
  return k_hooks;
}

const HookRow* find_hook(std::string_view name) {
  const auto it = std::ranges::find_if(k_hooks, [&](const HookRow& row) { return name == row.name; });
  return it == std::end(k_hooks) ? nullptr : &*it;
}

Result<HookBody> prepare_hook(const HookRow& row, const HookArgs& args, const config::Config& config,
                              const config::Log& log, const rootfs::SandboxLimits& limits) {
  auto body = row.prepare(args, config, log, limits);
  return row.named_errors ? named(row.name, std::move(body)) : body;
}

Result<HookBody> prepare_container_start(const cdi::ContainerStartArgs& args, const config::Config& config,
                                         const config::Log& log, const rootfs::SandboxLimits& limits) {
  // Each step runs when one of its options is given, in the order a runtime ran them as separate hooks.
  std::vector<HookBody> steps;
  // The driver's library links first: the linker cache lists what they name.
  if (!args.links.empty()) {
    GPUCTK_TRY(add_step(steps, cdi::k_hook_create_symlinks, links_body(args.links)));
  }
  // The compat drop-in before ldconfig, which reads it.
  if (args.host_driver_version || args.host_cuda_version) {
    GPUCTK_TRY(add_step(steps, cdi::k_hook_enable_cuda_compat,
                        compat_body({.driver_version = args.host_driver_version.value_or(""),
                                     .cuda_version = args.host_cuda_version.value_or("")},
                                    args.cuda_compat_container_root.value_or(k_cuda_compat_dir))));
  }
  // The linker cache.
  if (!args.folders.empty()) {
    GPUCTK_TRY(
        add_step(steps, cdi::k_hook_update_ldcache,
                 ldcache_body(args.folders, args.ld_cache_entries, args.ldconfig_path, config, log, limits)));
  }
  // The params file after the linker cache, as nvidia-ctk orders it.
  if (args.disable_device_node_modification) {
    GPUCTK_TRY(add_step(steps, cdi::k_hook_disable_device_node_modification, params_body(config)));
  }
  // The application profile last, as NVIDIA's v1.20 specs order it: it reads the container's /dev, which
  // the runtime made before any hook.
  if (args.update_application_profile) {
    GPUCTK_TRY(add_step(steps, cdi::k_hook_update_application_profile, profile_body()));
  }
  return body_of([steps = std::move(steps)](const rootfs::Root& root, const config::Config& cfg,
                                            const config::Log& lg) -> Result<void> {
    for (const auto& step : steps) {
      GPUCTK_TRY(step(root, cfg, lg));
    }
    return {};
  });
}

Result<HookBody> prepare_create_symlinks(const cdi::CreateSymlinksArgs& args) {
  return named(cdi::k_hook_create_symlinks, links_body(args.links));
}

Result<std::optional<HookBody>> prepare_contract_line(std::span<const std::string> args,
                                                      const config::Config& config, const config::Log& log,
                                                      const rootfs::SandboxLimits& limits) {
  // A line the contract refuses is an error of that hook, as its own command's would be.
  if (cdi::is_hook_line(args, cdi::k_hook_container_start)) {
    auto typed = cdi::ContainerStartArgs::parse(args);
    if (!typed) {
      return fail_with(std::string(cdi::k_hook_container_start), typed.error());
    }
    return prepare_container_start(*typed, config, log, limits);
  }
  if (cdi::is_hook_line(args, cdi::k_hook_create_symlinks)) {
    auto typed = cdi::CreateSymlinksArgs::parse(args);
    if (!typed) {
      return fail_with(std::string(cdi::k_hook_create_symlinks), typed.error());
    }
    return prepare_create_symlinks(*typed);
  }
  return std::nullopt;
}

}  // namespace gpuctk::steps
