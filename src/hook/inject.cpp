#include "hook/inject.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <unordered_set>

#include "cdi/apply.hpp"
#include "cdi/names.hpp"
#include "cdi/registry.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "discover/driver_files.hpp"
#include "discover/driver_version.hpp"
#include "discover/gpu_information.hpp"
#include "discover/host_fs.hpp"
#include "discover/nvidia_caps.hpp"
#include "hook/requirements.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::hook {

namespace {

// What a hook we write runs with when a spec gave it no environment: never the container's.
const std::vector<std::string> k_safe_hook_env{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};

// The running driver's version, from /proc, read at most once per request (the requirements and the
// spec staleness check both want it). Empty when unknown.
class RunningDriver {
 public:
  explicit RunningDriver(const Config& cfg) : m_cfg(cfg) {}
  const std::string& version() {
    if (!m_version) {
      auto parsed = read_parsed(discover::under_root(m_cfg.dev_root, "/proc/driver/nvidia/version"),
                                discover::parse_driver_version);
      m_version = parsed ? parsed->version : std::string();
    }
    return *m_version;
  }

 private:
  const Config& m_cfg;
  std::optional<std::string> m_version;
};

// The driver version a generated spec was made for: the enable-cuda-compat hook's argument (gpuctk writes
// "--host-driver-version V", nvidia-ctk "--host-driver-version=V"), else the version suffix of the libcuda
// it mounts. Empty when the spec does not say.
std::string spec_driver_version(const cdi::Spec& spec) {
  constexpr std::string_view flag = "--host-driver-version";
  for (const auto& hook : spec.container_edits.hooks) {
    for (auto it = hook.args.begin(); it != hook.args.end(); ++it) {
      if (*it == flag && it + 1 != hook.args.end()) {
        return *(it + 1);
      }
      if (it->starts_with(flag) && it->size() > flag.size() && (*it)[flag.size()] == '=') {
        return it->substr(flag.size() + 1);
      }
    }
  }
  for (const auto& mount : spec.container_edits.mounts) {
    const auto slash = mount.container_path.rfind('/');
    if (auto version = discover::library_driver_version(
            std::string_view(mount.container_path).substr(slash + 1), "libcuda.so.")) {
      return *version;
    }
  }
  return {};
}

// How many device names the error of an unknown device lists.
constexpr size_t k_listed_devices = 10;

// The devices that can be resolved, from the spec directories or an in-memory spec.
class Resolver {
 public:
  Resolver(const Config& cfg, const Log& log, RunningDriver& driver)
      : m_cfg(cfg), m_log(log), m_driver(driver) {}

  // Loads the spec directories; replaces the configured kind's devices with an in-memory spec when
  // the installed one is missing or stale.
  Result<void> load(bool need_default_kind) {
    m_registry = cdi::scan_spec_dirs(m_cfg.spec_dirs);
    for (const auto& error : m_registry.errors) {
      m_log.warning("CDI spec problem: " + error);
    }
    if (!need_default_kind) {
      return {};
    }
    const std::string prefix = m_cfg.request.default_kind + "=";
    const cdi::ResolvedDevice* any = nullptr;
    std::set<std::string> files;
    for (const auto& [name, device] : m_registry.devices) {
      if (name.starts_with(prefix)) {
        any = any != nullptr ? any : &device;
        files.insert(device.spec_file);
      }
    }
    const std::string& running = m_driver.version();
    std::string why;
    if (any == nullptr) {
      why = "no spec for " + m_cfg.request.default_kind + " in the spec directories";
    } else if (const auto made_for = spec_driver_version(*any->spec);
               !running.empty() && made_for != running) {
      why = any->spec_file + " was generated for driver " + (made_for.empty() ? "(unknown)" : made_for) +
            ", running driver is " + running;
    }
    if (why.empty()) {
      for (const auto& f : files) {
        m_source += (m_source.empty() ? "" : ", ") + f;
      }
      return {};
    }
    m_log.warning(why + "; building the spec in memory");
    return build_in_memory(why);
  }

  // The devices named `names` (qualified), or an error listing what exists.
  Result<std::vector<const cdi::ResolvedDevice*>> find(const std::vector<std::string>& names) const {
    std::vector<const cdi::ResolvedDevice*> out;
    for (const auto& name : names) {
      const auto it = m_registry.devices.find(name);
      if (it == m_registry.devices.end()) {
        return fail("unknown device " + quote_name(name) + " (" + existing(name) + ")");
      }
      out.push_back(&it->second);
    }
    return out;
  }

  // A spec of the configured kind (for "none": its common edits only).
  [[nodiscard]] std::shared_ptr<const cdi::Spec> default_spec() const {
    const std::string prefix = m_cfg.request.default_kind + "=";
    for (const auto& [name, device] : m_registry.devices) {
      if (name.starts_with(prefix)) {
        return device.spec;
      }
    }
    return nullptr;
  }

  [[nodiscard]] const std::string& source() const { return m_source; }

 private:
  static std::string quote_name(const std::string& name) { return "\"" + name + "\""; }

  // "devices: 0, 0:0, 1, …" for the error of an unknown device: the names in sorted order (indexes and
  // MIG indexes sort before UUIDs and "all"), at most k_listed_devices of them and "and N more": a node
  // with 8 GPUs in MIG mode has over a hundred names, kilobytes on one line.
  [[nodiscard]] std::string existing(const std::string& wanted) const {
    const auto eq = wanted.find('=');
    const std::string prefix = wanted.substr(0, eq + 1);
    std::vector<std::string_view> names;
    for (const auto& [name, device] : m_registry.devices) {
      if (name.starts_with(prefix)) {
        names.push_back(std::string_view(name).substr(prefix.size()));
      }
    }
    if (names.empty()) {
      return "no devices of " + wanted.substr(0, eq) + " are defined";
    }
    const size_t listed = std::min(names.size(), k_listed_devices);
    std::string list = "devices: " + join(std::span(names).first(listed), ", ");
    if (listed < names.size()) {
      list += " and " + std::to_string(names.size() - listed) + " more; gpuctk cdi list shows all";
    }
    return list;
  }

  Result<void> build_in_memory(const std::string& why) {
    discover::DiscoverOptions options;
    options.driver_root = m_cfg.driver_root;
    options.dev_root = m_cfg.dev_root;
    options.mode = discover::Mode::proc;
    auto inventory = discover::discover(options);
    if (!inventory) {
      return fail_with(why + "; building it in memory failed", inventory.error());
    }
    auto kind = cdi::parse_qualified_name(m_cfg.request.default_kind + "=x");
    if (!kind) {
      return fail_with("default-kind", kind.error());
    }
    cdi::BuildOptions build;
    build.vendor = kind->vendor;
    build.klass = kind->klass;
    build.hook_path = m_cfg.hook_path;
    auto spec = cdi::build_spec(*inventory, build);
    if (!spec) {
      return fail_with(why + "; building it in memory failed", spec.error());
    }
    auto shared = std::make_shared<const cdi::Spec>(std::move(*spec));
    std::erase_if(m_registry.devices, [&](const auto& entry) {
      return entry.first.starts_with(m_cfg.request.default_kind + "=");
    });
    for (size_t i = 0; i < shared->devices.size(); ++i) {
      cdi::ResolvedDevice device;
      device.name = cdi::QualifiedName{kind->vendor, kind->klass, shared->devices[i].name};
      device.spec_file = "(in memory)";
      device.spec = shared;
      device.device_index = i;
      m_registry.devices.emplace(device.name.str(), std::move(device));
    }
    m_source = "in-memory spec (driver " + inventory->driver_version + ")";
    return {};
  }

  const Config& m_cfg;
  const Log& m_log;
  RunningDriver& m_driver;
  cdi::Registry m_registry;
  std::string m_source;
};

// Drops the driver files that the requested capabilities do not need, and the links into dropped files.
// Only for the edits of the default kind's spec (the one gpuctk generates): discover::file_need knows
// NVIDIA's driver files and calls everything else unknown, so another vendor's spec (a NIC requested by
// a cdi.k8s.io/ annotation) must pass untouched or it would be applied without its files.
class CapabilityFilter {
 public:
  explicit CapabilityFilter(const discover::CapabilitySet& caps) : m_caps(caps) {}

  void apply(cdi::ContainerEdits& edits) {
    if (m_caps == discover::CapabilitySet::all()) {
      return;
    }
    std::erase_if(edits.mounts, [&](const cdi::Mount& m) {
      const auto need = discover::file_need(m.container_path);
      bool keep = false;
      switch (need.kind) {
        case discover::FileNeed::Kind::always:
          keep = true;
          break;
        case discover::FileNeed::Kind::unknown:
          keep = false;
          break;
        case discover::FileNeed::Kind::capability:
          keep =
              m_caps.has(need.capability) && (!need.is_32bit || m_caps.has(discover::Capability::compat32));
          break;
      }
      if (!keep) {
        m_dropped.insert(m.container_path);
      }
      return !keep;
    });
    for (auto& hook : edits.hooks) {
      if (cdi::is_create_symlinks_hook(hook)) {
        drop_links(hook);
      }
    }
    std::erase_if(edits.hooks,
                  [](const cdi::Hook& h) { return cdi::is_create_symlinks_hook(h) && h.args.size() == 3; });
  }

 private:
  // A create-symlinks hook's "--link <target>::<link>" pairs (from args[3]); a link whose target is a
  // dropped file, directly or through other dropped links, goes too.
  void drop_links(cdi::Hook& hook) {
    struct Link {
      size_t index;        // of the "<target>::<link>" argument
      std::string target;  // resolved against the link's directory
      std::string path;
    };
    std::vector<Link> links;
    for (size_t i = 3; i + 1 < hook.args.size(); i += 2) {
      const auto& pair = hook.args[i + 1];
      const auto sep = pair.find("::");
      if (sep == std::string::npos) {
        continue;
      }
      std::string link = clean_path(pair.substr(sep + 2));
      std::string target = pair.substr(0, sep);
      // Lexically, as the kernel reads a link's target: gbm/nvidia-drm_gbm.so -> ../libnvidia-allocator.so.1
      // is the allocator library in the directory above.
      target = clean_path(target.starts_with("/") ? target : link.substr(0, link.rfind('/') + 1) + target);
      links.push_back({i + 1, std::move(target), std::move(link)});
    }
    // Each pass is linear; passes stop when nothing new was dropped (at most the length of a link chain).
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& link : links) {
        if (m_dropped.contains(link.target) && m_dropped.insert(link.path).second) {
          grew = true;
        }
      }
    }
    std::unordered_set<size_t> removed;
    for (const auto& link : links) {
      if (m_dropped.contains(link.target)) {
        removed.insert(link.index);
      }
    }
    std::vector<std::string> kept;
    kept.reserve(hook.args.size());
    for (size_t i = 0; i < hook.args.size(); ++i) {
      if (i >= 3 && removed.contains(i + 1)) {
        ++i;  // the "--link" flag and its pair
        continue;
      }
      kept.push_back(std::move(hook.args[i]));
    }
    hook.args = std::move(kept);
  }

  discover::CapabilitySet m_caps;
  std::set<std::string> m_dropped;  // across calls: a device's link may lead to a spec-wide file
};

// Spec-wide edits of each spec once, before its first device; then the device's own (CDI order). The
// edits of devices of `default_kind` and of their spec go through `filter` (when given); every other
// spec's edits pass untouched.
cdi::ContainerEdits collect(const std::vector<const cdi::ResolvedDevice*>& devices,
                            const std::string& default_kind, CapabilityFilter* filter) {
  cdi::ContainerEdits edits;
  std::set<const cdi::Spec*> seen;
  for (const auto* device : devices) {
    CapabilityFilter* device_filter = device->name.kind() == default_kind ? filter : nullptr;
    const auto add = [&](const cdi::ContainerEdits& from) {
      if (device_filter == nullptr) {
        cdi::append(edits, from);
        return;
      }
      cdi::ContainerEdits filtered = from;
      device_filter->apply(filtered);
      cdi::append(edits, filtered);
    };
    if (seen.insert(device->spec.get()).second) {
      add(device->spec->container_edits);
    }
    add(device->device().container_edits);
  }
  return edits;
}

void make_hooks_safe(cdi::ContainerEdits& edits) {
  for (auto& hook : edits.hooks) {
    if (hook.env.empty()) {
      hook.env = k_safe_hook_env;
    }
  }
}

// ---- MPS directories -----------------------------------------------------------------------------
//
// CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY come from the container; what gpuctk does with them:
//  1. config.json already mounts something at or above the path (destination equal to it or a parent
//     directory of it, cleaned): nothing. This is how the Kubernetes device plugin does MPS: its Allocate
//     sets CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe, a path in the container, and adds the mount of
//     the host directory itself. Leaving a path alone grants nothing, so a mount the pod added itself
//     is harmless.
//  2. Otherwise the value names a host directory (under dev-root), which is bind-mounted read-write at the
//     same path, only if: it is strictly below one of the configured roots (mps-pipe-roots,
//     mps-log-roots), never a root itself (a root holds every daemon's pipes); it has no
//     subdirectory (one daemon's directory, not a tree of them); and the walk from the host's "/" to it
//     met no symlink, only directories owned by root, none of them writable by group or others from
//     the root down (above the root: unless sticky, as /tmp is).

struct MpsVariable {
  std::string_view name;                  // "CUDA_MPS_PIPE_DIRECTORY"
  const std::vector<std::string>& roots;  // cleaned absolute host paths (config.cpp checks)
  std::string_view roots_key;             // the config key, as spelled in the file
};

// The destination in config.json's mounts that is `path` or a parent directory of it, if any.
std::optional<std::string> mounted_at_or_above(const nlohmann::ordered_json& config,
                                               const std::string& path) {
  const auto it = config.find("mounts");
  if (it == config.end() || !it->is_array()) {
    return std::nullopt;
  }
  for (const auto& mount : *it) {
    if (!mount.is_object()) {
      continue;
    }
    const auto destination = mount.find("destination");
    if (destination == mount.end() || !destination->is_string()) {
      continue;
    }
    const std::string cleaned = clean_absolute_path(destination->get_ref<const std::string&>(), "/");
    if (cleaned == path || cleaned == "/" || path.starts_with(cleaned + "/")) {
      return cleaned;
    }
  }
  return std::nullopt;
}

// How far a directory met on the walk is trusted.
enum class Place : uint8_t { above_root, root_or_below };

Result<void> check_owner_and_mode(const struct stat& st, const std::string& path, Place place,
                                  std::string_view variable) {
  const std::string context = std::string(variable) + ": host directory " + path;
  if (st.st_uid != 0) {
    return fail(context + " is owned by uid " + std::to_string(st.st_uid) +
                ", not root (refused: its owner could " + "swap what is mounted)");
  }
  const bool writable_by_others = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  if (writable_by_others && (place == Place::root_or_below || !sticky)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(context + " is writable by group or others (mode " + mode +
                "; refused: they could swap what " + "is mounted)");
  }
  return {};
}

// Walks `host_path` (absolute, clean) from the host's "/" one component at a time with
// O_PATH | O_NOFOLLOW | O_DIRECTORY, checking each directory's fstat; the first `root_components`
// components lead to the MPS root (exclusive). Returns the last directory's O_PATH fd.
Result<UniqueFd> walk_trusted(const std::string& host_path, size_t root_components,
                              std::string_view variable) {
  UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    return fail_errno(std::string(variable) + ": open /", errno);
  }
  std::string walked;
  size_t depth = 0;
  for (const auto component : split(std::string_view(host_path).substr(1), '/')) {
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) {
      return fail_errno(std::string(variable) + ": stat " + (walked.empty() ? "/" : walked), errno);
    }
    GPUCTK_TRY(check_owner_and_mode(st, walked.empty() ? "/" : walked,
                                    depth < root_components ? Place::above_root : Place::root_or_below,
                                    variable));
    if (component.empty()) {
      break;  // host_path is "/"
    }
    walked.append("/").append(component);
    const std::string name(component);
    UniqueFd next(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
    if (!next) {
      const int err = errno;
      struct stat link {};
      if (::fstatat(dir.get(), name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode)) {
        return fail(std::string(variable) + ": host path " + walked +
                    " is a symbolic link (refused: only a " +
                    "path without links, that nobody but root can change, is mounted)");
      }
      if (err == ENOENT) {
        return fail(std::string(variable) + ": host directory " + walked + ": " + std::strerror(err) +
                    " (is the MPS control daemon running?)");
      }
      return fail_errno(std::string(variable) + ": host directory " + walked, err);
    }
    dir = std::move(next);
    ++depth;
  }
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) {
    return fail_errno(std::string(variable) + ": stat " + walked, errno);
  }
  GPUCTK_TRY(check_owner_and_mode(st, walked, Place::root_or_below, variable));
  return dir;
}

// Refuses a directory that has a subdirectory: a daemon's pipe (or log) directory holds only pipes and
// files; a directory of directories is (part of) a tree of daemons.
Result<void> check_leaf(int dir_fd, const std::string& path, std::string_view variable) {
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return fail_errno(std::string(variable) + ": read host directory " + path, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(fd), ::closedir);
  if (!listing) {
    const int err = errno;
    ::close(fd);
    return fail_errno(std::string(variable) + ": read host directory " + path, err);
  }
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    bool is_dir = entry->d_type == DT_DIR;
    if (entry->d_type == DT_UNKNOWN) {
      struct stat st {};
      is_dir = ::fstatat(::dirfd(listing.get()), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISDIR(st.st_mode);
    }
    if (is_dir) {
      return fail(std::string(variable) + ": host directory " + path + " has a subdirectory " + quote(name) +
                  " (refused: only one MPS daemon's directory, which has none, is mounted)");
    }
  }
  return {};
}

// The mount for one MPS variable, or nothing (see above).
Result<std::optional<cdi::Mount>> mps_mount(const nlohmann::ordered_json& config, const MpsVariable& variable,
                                            const std::string& path, const Config& cfg, const Log& log) {
  if (const auto destination = mounted_at_or_above(config, path)) {
    log.info(std::string(variable.name) + "=" + path + ": config.json already mounts " + *destination +
             "; no host directory mounted for it");
    return std::nullopt;
  }
  const std::string context = std::string(variable.name) + ": " + quote(path);
  const std::string roots = join(variable.roots, ", ");
  const std::string* root = nullptr;
  for (const auto& candidate : variable.roots) {
    if (path == candidate) {
      return fail(context + " is an MPS root itself (" + roots + "; config key " +
                  std::string(variable.roots_key) + "): only one daemon's directory below a root is mounted");
    }
    if (root == nullptr && path.starts_with(candidate + "/")) {
      root = &candidate;
    }
  }
  if (root == nullptr) {
    return fail(context + " is not mounted by config.json and is not below an MPS root on the host (" +
                (roots.empty() ? std::string("none configured") : roots) + "; config key " +
                std::string(variable.roots_key) + ")");
  }
  const std::string host_root = clean_path(discover::under_root(cfg.dev_root, *root));
  const std::string host_path = clean_path(discover::under_root(cfg.dev_root, path));
  const size_t root_components = static_cast<size_t>(std::ranges::count(host_root, '/'));
  GPUCTK_TRY_ASSIGN(const UniqueFd dir, walk_trusted(host_path, root_components, variable.name));
  GPUCTK_TRY(check_leaf(dir.get(), host_path, variable.name));
  // Why the path string still names the directory checked here when the runtime mounts it later (an fd
  // cannot be handed over: /proc/self/fd/N means nothing to a process that runs afterwards, and the
  // hooks that edit config.json run before the runtime): the walk refused every symlink, so the string
  // resolves, component by component, to exactly the directories walked. Each of them is owned by root;
  // from the MPS root down none is writable by group or others, and above it one writable by others is
  // sticky, where only the owner of an entry (root, checked) may rename or remove it. So nobody but root
  // can rename, replace or mount over any component afterwards, and root needs no trick to mount
  // anything. Should a check fail, nothing is mounted and the container is refused.
  log.info(std::string(variable.name) + "=" + path + ": mounting host directory " + host_path);
  return cdi::Mount{host_path, path, cdi::k_ipc_directory_mount_options, ""};
}

// MIG management capabilities and the MPS directories, which no spec device carries.
Result<void> add_extras(cdi::ContainerEdits& edits, const nlohmann::ordered_json& config,
                        const Request& request, const Config& cfg, const Log& log) {
  if (request.mig_config || request.mig_monitor) {
    GPUCTK_TRY_ASSIGN(auto minors, discover::read_mig_minors(cfg.dev_root));
    struct Wanted {
      bool wanted;
      std::optional<uint32_t> minor;
      const char* what;
    };
    for (const auto& [wanted, minor, what] : {Wanted{request.mig_config, minors.config(), "config"},
                                              Wanted{request.mig_monitor, minors.monitor(), "monitor"}}) {
      if (!wanted) {
        continue;
      }
      if (!minor) {
        return fail(discover::under_root(cfg.dev_root, discover::k_mig_minors_path) + ": no MIG " + what +
                    " capability");
      }
      cdi::DeviceNode node;
      node.path = discover::capability_device_path(*minor);
      node.host_path = discover::under_root(cfg.dev_root, node.path);
      edits.device_nodes.push_back(std::move(node));
    }
  }
  const MpsVariable pipe{"CUDA_MPS_PIPE_DIRECTORY", cfg.mps_pipe_roots, "mps-pipe-roots"};
  const MpsVariable logs{"CUDA_MPS_LOG_DIRECTORY", cfg.mps_log_roots, "mps-log-roots"};
  for (const auto& [variable, path] :
       {std::pair{&pipe, &request.mps_pipe_directory}, std::pair{&logs, &request.mps_log_directory}}) {
    if (path->empty()) {
      continue;
    }
    GPUCTK_TRY_ASSIGN(auto mount, mps_mount(config, *variable, *path, cfg, log));
    if (mount) {
      edits.mounts.push_back(std::move(*mount));
    }
  }
  return {};
}

// Whether a constraint of the request is about `property` ("brand", "arch").
bool wants(const Request& request, std::string_view property) {
  return std::ranges::any_of(request.requirements, [&](const Requirement& r) {
    return std::ranges::any_of(r.any_of, [&](const std::vector<Constraint>& all) {
      return std::ranges::any_of(all, [&](const Constraint& c) { return c.property == property; });
    });
  });
}

Result<void> check_host_requirements(const Request& request, const Config& cfg, RunningDriver& driver) {
  if (request.requirements.empty()) {
    return {};
  }
  HostFacts facts;
  facts.driver_version = driver.version();
  facts.cuda_version = cuda_version_for_driver(facts.driver_version);
  // GPU brands cost a read per GPU, compute capabilities an NVML load: only when a constraint asks.
  const std::string gpus_dir = discover::under_root(cfg.dev_root, "/proc/driver/nvidia/gpus");
  if (auto gpus = wants(request, "brand") ? discover::list_dir(gpus_dir)
                                          : Result<std::vector<discover::DirEntry>>{}) {
    for (const auto& entry : *gpus) {
      if (auto info =
              read_parsed(gpus_dir + "/" + entry.name + "/information", discover::parse_gpu_information)) {
        facts.brands.push_back(brand_for_model(info->model));
      }
    }
  }
  // Compute capabilities come only from NVML, loaded only for an arch constraint; without NVML (or
  // with one that cannot say) the facts stay unknown and the constraint fails as unknown.
  if (wants(request, "arch")) {
    if (auto inventory = discover::discover({cfg.driver_root, cfg.dev_root, discover::Mode::nvml, {}})) {
      for (const auto& gpu : inventory->gpus) {
        if (gpu.compute_capability) {
          facts.archs.push_back(std::to_string(gpu.compute_capability->major) + "." +
                                std::to_string(gpu.compute_capability->minor));
        }
      }
    }
  }
  return check_requirements(request.requirements, facts);
}

InjectResult applied(const ResolvedRequest& resolved) {
  InjectResult result;
  result.changed = true;
  result.spec_source = resolved.spec_source;
  result.devices = resolved.devices;
  return result;
}

std::vector<std::string> device_names(const std::vector<const cdi::ResolvedDevice*>& devices) {
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (const auto* d : devices) {
    names.push_back(d->name.str());
  }
  return names;
}

}  // namespace

Result<ResolvedRequest> resolve_request(const nlohmann::ordered_json& config, const Config& cfg,
                                        const Log& log) {
  GPUCTK_TRY_ASSIGN(auto request, read_request(config, cfg.request));
  for (const auto& line : request.log) {
    log.info(line);
  }
  if (!request.gpu_container) {
    return ResolvedRequest{};
  }
  RunningDriver driver(cfg);
  GPUCTK_TRY(check_host_requirements(request, cfg, driver));

  std::vector<std::string> names;
  const std::string kind = cfg.request.default_kind;
  if (request.all) {
    names.push_back(kind + "=all");
  } else {
    for (const auto& id : request.devices) {
      names.push_back(kind + "=" + id);
    }
  }
  std::set<std::string> named(names.begin(), names.end());  // no per-name scan: up to k_max_devices names
  for (const auto& name : request.cdi_devices) {
    if (named.insert(name).second) {
      names.push_back(name);
    }
  }
  const bool needs_default_kind =
      request.driver_only ||
      std::ranges::any_of(names, [&](const std::string& n) { return n.starts_with(kind + "="); });

  Resolver resolver(cfg, log, driver);
  GPUCTK_TRY(resolver.load(needs_default_kind));
  GPUCTK_TRY_ASSIGN(auto devices, resolver.find(names));
  // NVIDIA_DRIVER_CAPABILITIES filters the default kind's driver files only (see CapabilityFilter).
  CapabilityFilter filter(request.capabilities);
  cdi::ContainerEdits edits = collect(devices, kind, &filter);
  if (request.driver_only && devices.empty()) {
    const auto spec = resolver.default_spec();
    if (!spec) {
      return fail("NVIDIA_VISIBLE_DEVICES=none: no spec for " + kind);
    }
    edits = spec->container_edits;
    filter.apply(edits);
  }
  GPUCTK_TRY(add_extras(edits, config, request, cfg, log));
  make_hooks_safe(edits);
  return ResolvedRequest{true, std::move(edits), device_names(devices), resolver.source()};
}

std::string describe(const ResolvedRequest& resolved) {
  return (resolved.devices.empty() ? std::string("driver only") : join(resolved.devices, ",")) + " from " +
         resolved.spec_source;
}

Result<InjectResult> inject_request(nlohmann::ordered_json& config, const Config& cfg, const Log& log) {
  GPUCTK_TRY_ASSIGN(const auto resolved, resolve_request(config, cfg, log));
  if (!resolved.gpu_container) {
    return InjectResult{};
  }
  GPUCTK_TRY(cdi::apply_edits(config, resolved.edits));
  log.info("injected " + describe(resolved));
  return applied(resolved);
}

Result<InjectResult> inject_devices(nlohmann::ordered_json& config, const std::vector<std::string>& names,
                                    const Config& cfg, const Log& log) {
  for (const auto& name : names) {
    GPUCTK_TRY(cdi::parse_qualified_name(name));
  }
  const std::string prefix = cfg.request.default_kind + "=";
  RunningDriver driver(cfg);
  Resolver resolver(cfg, log, driver);
  if (auto loaded =
          resolver.load(std::ranges::any_of(names, [&](const auto& n) { return n.starts_with(prefix); }));
      !loaded) {
    return std::unexpected(loaded.error());
  }
  GPUCTK_TRY_ASSIGN(auto devices, resolver.find(names));
  ResolvedRequest resolved{true, collect(devices, cfg.request.default_kind, nullptr), device_names(devices),
                           resolver.source()};
  make_hooks_safe(resolved.edits);
  GPUCTK_TRY(cdi::apply_edits(config, resolved.edits));
  return applied(resolved);
}

}  // namespace gpuctk::hook
