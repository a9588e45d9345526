#include "cdi/spec_builder.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>

#include "cdi/apply.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "discover/driver_files.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

using discover::DriverFile;
using discover::FileKind;
using discover::Gpu;
using discover::Inventory;
using discover::MigDevice;

// Every hook name --disable-hook and --enable-hook take, in the order of their help text.
constexpr std::string_view k_all_hooks[] = {k_hook_create_symlinks,
                                            k_hook_enable_cuda_compat,
                                            k_hook_update_ldcache,
                                            k_hook_disable_device_node_modification,
                                            k_hook_update_application_profile,
                                            k_hook_chmod};

// The directories chmod may be asked to open up, as NVIDIA's v1.20 picks them: the parents of a device's
// nested nodes (DRM's, the MIG capabilities').
constexpr std::string_view k_chmod_dirs[] = {"/dev/dri", "/dev/nvidia-caps"};

const std::vector<std::string>& mount_options(const DriverFile& file) {
  return file.kind == FileKind::ipc ? k_ipc_mount_options : k_file_mount_options;
}

Mount to_mount(const DriverFile& file) {
  return {file.host_path, file.container_path, mount_options(file), ""};
}

class Builder {
 public:
  Builder(const Inventory& inventory, const BuildOptions& options) : m_inv(inventory), m_opt(options) {}

  Result<Spec> build() {
    Spec spec;
    spec.kind = m_opt.vendor + "/" + m_opt.klass;
    if (m_opt.management) {
      spec.devices.push_back(management_device());
    } else {
      GPUCTK_TRY_ASSIGN(auto devices, gpu_devices());
      spec.devices = std::move(devices);
    }
    if (spec.devices.empty()) {
      return fail("no devices to generate: no GPUs in " + m_inv.gpus_from);
    }
    if (m_opt.management && spec.devices.front().container_edits.device_nodes.empty()) {
      return fail(
          "no devices to generate: no NVIDIA device nodes (nvidia<N>, nvidia-caps, IMEX channels) in " +
          m_inv.dev_dir);
    }
    if (m_opt.all_device && !m_opt.management && !m_none) {
      Device all{"all", {}, {}};
      for (const auto& device : spec.devices) {
        append(all.container_edits, device.container_edits);
      }
      spec.devices.push_back(std::move(all));
    }
    spec.container_edits = common_edits();
    for (auto& device : spec.devices) {
      normalise(device.container_edits);
    }
    hoist_common(spec);
    set_device_node_gids(spec, m_opt.additional_gids);
    std::ranges::sort(spec.devices, {}, &Device::name);
    spec.cdi_version = minimum_version(spec).version.str();
    return spec;
  }

 private:
  [[nodiscard]] bool hook_enabled(std::string_view name) const { return cdi::hook_enabled(m_opt, name); }

  [[nodiscard]] Hook hook(std::string_view name, std::vector<std::string> args) const {
    std::vector<std::string> argv{"gpuctk", "hook", std::string(name)};
    argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
    return hook_of(std::move(argv));
  }

  // A createContainer hook running `argv` (a line of cdi/hook_args.hpp).
  [[nodiscard]] Hook hook_of(std::vector<std::string> argv) const {
    return {"createContainer", m_opt.hook_path, std::move(argv), k_hook_env, std::nullopt};
  }

  // Each link once, sorted.
  static std::vector<HookLink> hook_links(std::vector<discover::Symlink> links) {
    std::ranges::sort(links);
    const auto [first, last] = std::ranges::unique(links);
    links.erase(first, last);
    std::vector<HookLink> out;
    out.reserve(links.size());
    for (auto& link : links) {
      out.push_back({std::move(link.target), std::move(link.link)});
    }
    return out;
  }

  // A device's own links (its /dev/dri/by-path entries) stay a create-symlinks hook of the device's edits:
  // CDI adds a device's edits only when the device is requested, while the spec-wide container-start
  // hook is the same for every request.
  void add_links_hook(ContainerEdits& edits, std::vector<discover::Symlink> links) const {
    if (links.empty() || !hook_enabled(k_hook_create_symlinks)) {
      return;
    }
    edits.hooks.push_back(hook_of(CreateSymlinksArgs{hook_links(std::move(links))}.to_args()));
  }

  // The spec-wide steps as one `gpuctk hook container-start`, each step's options only when it is
  // enabled (steps/commands.hpp runs them in this order: links, compat, linker cache, params).
  void add_container_start_hook(ContainerEdits& edits) const {
    ContainerStartArgs args;
    if (!m_inv.library_links.empty() && hook_enabled(k_hook_create_symlinks)) {
      args.links = hook_links(m_inv.library_links);
    }
    if (hook_enabled(k_hook_enable_cuda_compat)) {
      args.host_driver_version = m_inv.driver_version;
    }
    if (hook_enabled(k_hook_update_ldcache)) {
      args.folders = m_inv.library_dirs;
      for (const auto& entry : m_inv.library_cache_entries) {
        args.ld_cache_entries.push_back(ld_cache_entry_arg(entry));
      }
    }
    // Management containers (nvidia-smi -mig, driver tools) must be able to create nodes, and see every
    // GPU (NVIDIA's management spec has no application profile either).
    args.disable_device_node_modification =
        !m_opt.management && hook_enabled(k_hook_disable_device_node_modification);
    args.update_application_profile = !m_opt.management && hook_enabled(k_hook_update_application_profile);
    if (!args.empty()) {
      edits.hooks.push_back(hook_of(args.to_args()));
    }
  }

  // --enable-hook chmod: mode 755 on the k_chmod_dirs that hold the edits' nodes, in node order.
  void add_chmod_hook(ContainerEdits& edits) const {
    if (!hook_enabled(k_hook_chmod)) {
      return;
    }
    std::vector<std::string> args{"--mode", "755"};
    for (const auto dir : k_chmod_dirs) {
      if (std::ranges::any_of(edits.device_nodes,
                              [&](const DeviceNode& n) { return parent_path(n.path) == dir; })) {
        args.insert(args.end(), {"--path", std::string(dir)});
      }
    }
    if (args.size() > 2) {
      edits.hooks.push_back(hook(k_hook_chmod, std::move(args)));
    }
  }

  [[nodiscard]] ContainerEdits gpu_edits(const Gpu& gpu) const {
    ContainerEdits edits;
    edits.device_nodes.push_back(spec_device_node(gpu.node));
    for (const auto& node : gpu.drm_nodes) {
      edits.device_nodes.push_back(spec_device_node(node));
    }
    add_links_hook(edits, gpu.by_path_links);
    add_chmod_hook(edits);
    return edits;
  }

  // A MIG device: its GPU's node and its two capability nodes. A graphics-capable one (a "+gfx" profile)
  // also gets its GPU's DRM nodes and their by-path links, as a full GPU does (NVIDIA's nvidia-ctk 1.20).
  [[nodiscard]] ContainerEdits mig_edits(const Gpu& parent, const MigDevice& mig) const {
    ContainerEdits edits;
    edits.device_nodes = {spec_device_node(parent.node), spec_device_node(mig.gi_access),
                          spec_device_node(mig.ci_access)};
    if (!mig.graphics) {
      return edits;
    }
    for (const auto& node : parent.drm_nodes) {
      edits.device_nodes.push_back(spec_device_node(node));
    }
    add_links_hook(edits, parent.by_path_links);
    add_chmod_hook(edits);
    return edits;
  }

  // Names of a full GPU / MIG device under every strategy; a strategy that has no name for it (a UUID
  // unknown in proc mode) gives none.
  [[nodiscard]] std::vector<std::string> gpu_names(const Gpu& gpu) const {
    std::vector<std::string> names;
    for (const auto strategy : m_opt.name_strategies) {
      switch (strategy) {
        case NameStrategy::index:
          names.push_back(std::to_string(gpu.index));
          break;
        case NameStrategy::uuid:
          if (!gpu.uuid.empty())
            names.push_back(gpu.uuid);
          break;
        case NameStrategy::type_index:
          names.push_back("gpu" + std::to_string(gpu.index));
          break;
      }
    }
    return names;
  }

  [[nodiscard]] std::vector<std::string> mig_names(const Gpu& gpu, const MigDevice& mig) const {
    const std::string pair = std::to_string(gpu.index) + ":" + std::to_string(mig.index);
    std::vector<std::string> names;
    for (const auto strategy : m_opt.name_strategies) {
      switch (strategy) {
        case NameStrategy::index:
          names.push_back(pair);
          break;
        case NameStrategy::uuid:
          if (!mig.uuid.empty())
            names.push_back(mig.uuid);
          break;
        case NameStrategy::type_index:
          names.push_back("mig" + pair);
          break;
      }
    }
    return names;
  }

  // True when the device with these ids was asked for (no --device-ids means every device).
  bool selected(const std::vector<std::string>& ids) {
    if (m_opt.device_ids.empty()) {
      return true;
    }
    bool hit = false;
    for (const auto& id : ids) {
      if (std::ranges::find(m_opt.device_ids, id) != m_opt.device_ids.end()) {
        m_matched.insert(id);
        hit = true;
      }
    }
    return hit || std::ranges::find(m_opt.device_ids, "all") != m_opt.device_ids.end();
  }

  Result<std::vector<Device>> gpu_devices() {
    if (std::ranges::find(m_opt.device_ids, "none") != m_opt.device_ids.end()) {
      if (m_opt.device_ids.size() > 1) {
        return fail("device id \"none\" (no GPU device) cannot be combined with other ids");
      }
      m_none = true;
      ContainerEdits edits;
      edits.env.emplace_back("NVCT_EMPTY_DEVICE=");  // a CDI device needs an edit
      return std::vector<Device>{{"none", {}, std::move(edits)}};
    }
    std::vector<Device> devices;
    std::vector<std::string> existing;
    const auto add = [&](const std::vector<std::string>& names, const ContainerEdits& edits) {
      for (const auto& name : names) {
        devices.push_back({name, {}, edits});
      }
    };
    for (const auto& gpu : m_inv.gpus) {
      // Every id a user may pass for this GPU: index, UUID, and the strategies' names. A GPU in MIG mode
      // is a device too (its node, DRM nodes and links), as the device plugin's migStrategy "none"
      // hands it out whole, by UUID. A MIG device under it is usable only when asked for as well: its
      // capability nodes come with it alone.
      std::vector<std::string> ids{std::to_string(gpu.index), gpu.uuid};
      existing.push_back(std::to_string(gpu.index));
      if (selected(ids)) {
        add(gpu_names(gpu), gpu_edits(gpu));
      }
      for (const auto& mig : gpu.mig_devices) {
        const std::string pair = std::to_string(gpu.index) + ":" + std::to_string(mig.index);
        existing.push_back(pair);
        if (selected({pair, mig.uuid})) {
          add(mig_names(gpu, mig), mig_edits(gpu, mig));
        }
      }
    }
    for (const auto& id : m_opt.device_ids) {
      if (id != "all" && !m_matched.contains(id)) {
        std::string list;
        for (const auto& e : existing) {
          list += (list.empty() ? "" : ", ") + e;
        }
        return fail("unknown device id \"" + id + "\" (devices: " + list + ", their UUIDs, or all)");
      }
    }
    return devices;
  }

  [[nodiscard]] Device management_device() const {
    Device all{"all", {}, {}};
    for (const auto& gpu : m_inv.gpus) {
      all.container_edits.device_nodes.push_back(spec_device_node(gpu.node));
    }
    for (const auto& node : m_inv.management_nodes) {
      all.container_edits.device_nodes.push_back(spec_device_node(node));
    }
    add_chmod_hook(all.container_edits);
    return all;
  }

  [[nodiscard]] ContainerEdits common_edits() const {
    ContainerEdits edits;
    edits.env.push_back("NVIDIA_VISIBLE_DEVICES=void");
    // Where the driver's libraries are in the container, as NVIDIA's v1.20 says it (for tools in the
    // image that look for libcuda.so.1 themselves).
    if (!m_inv.driver_library_dirs.empty()) {
      edits.env.push_back("NVIDIA_CTK_LIBCUDA_DIR=" + join(m_inv.driver_library_dirs, ":"));
    }
    for (const auto& node : m_inv.control_nodes) {
      edits.device_nodes.push_back(spec_device_node(node));
    }
    for (const auto& file : m_inv.files) {
      if (file.kind != FileKind::ipc || m_opt.ipc_files == IpcFiles::mount) {
        edits.mounts.push_back(to_mount(file));
      }
    }
    add_container_start_hook(edits);
    normalise(edits);
    return edits;
  }

  // Sorted, without duplicates. Hooks keep their order (it is the order they must run in); the
  // create-symlinks hooks of several devices merge into one.
  static void normalise(ContainerEdits& edits) {
    std::ranges::sort(edits.env);
    edits.env.erase(std::ranges::unique(edits.env).begin(), edits.env.end());
    std::ranges::stable_sort(edits.device_nodes, {}, &DeviceNode::path);
    edits.device_nodes.erase(std::ranges::unique(edits.device_nodes, {}, &DeviceNode::path).begin(),
                             edits.device_nodes.end());
    std::ranges::stable_sort(edits.mounts, {}, &Mount::container_path);
    edits.mounts.erase(std::ranges::unique(edits.mounts, {}, &Mount::container_path).begin(),
                       edits.mounts.end());
    merge_link_hooks(edits.hooks);
    std::vector<Hook> unique;
    for (auto& h : edits.hooks) {
      if (std::ranges::find(unique, h) == unique.end()) {
        unique.push_back(std::move(h));
      }
    }
    edits.hooks = std::move(unique);
  }

  // A `gpuctk hook create-symlinks` (not container-start, whose links are the spec-wide ones), parsed.
  static std::optional<CreateSymlinksArgs> create_symlinks_of(const Hook& hook) {
    auto args = CreateSymlinksArgs::parse(hook.args);
    return args ? std::optional(std::move(*args)) : std::nullopt;
  }

  // Every create-symlinks hook's links in the first one's place, each once, sorted by their "TARGET::LINK".
  static void merge_link_hooks(std::vector<Hook>& hooks) {
    const auto runs_create_symlinks = [](const Hook& h) { return create_symlinks_of(h).has_value(); };
    const auto first = std::ranges::find_if(hooks, runs_create_symlinks);
    if (first == hooks.end()) {
      return;
    }
    CreateSymlinksArgs merged;
    for (const auto& h : hooks) {
      if (auto args = create_symlinks_of(h)) {
        merged.links.insert(merged.links.end(), args->links.begin(), args->links.end());
      }
    }
    std::ranges::sort(merged.links, {}, link_arg);
    merged.links.erase(std::ranges::unique(merged.links).begin(), merged.links.end());
    Hook hook = *first;
    auto argv = merged.to_args();
    argv.front() = hook.args.front();
    hook.args = std::move(argv);
    const auto index = first - hooks.begin();
    std::erase_if(hooks, runs_create_symlinks);
    hooks.insert(hooks.begin() + index, std::move(hook));
  }

  // Moves device nodes that every device has into the common edits (the parent GPU when every device is a
  // MIG device of one GPU), unless a device would keep no node of its own.
  static void hoist_common(Spec& spec) {
    if (spec.devices.size() < 2) {
      return;
    }
    std::vector<DeviceNode> shared = spec.devices.front().container_edits.device_nodes;
    for (const auto& device : spec.devices) {
      std::erase_if(shared, [&](const DeviceNode& n) {
        return std::ranges::find(device.container_edits.device_nodes, n) ==
               device.container_edits.device_nodes.end();
      });
    }
    if (shared.empty()) {
      return;
    }
    for (const auto& device : spec.devices) {
      if (device.container_edits.device_nodes.size() == shared.size()) {
        return;  // it would keep no node of its own
      }
    }
    for (auto& device : spec.devices) {
      std::erase_if(device.container_edits.device_nodes,
                    [&](const DeviceNode& n) { return std::ranges::find(shared, n) != shared.end(); });
    }
    spec.container_edits.device_nodes.insert(spec.container_edits.device_nodes.end(), shared.begin(),
                                             shared.end());
    normalise(spec.container_edits);
  }

  const Inventory& m_inv;
  const BuildOptions& m_opt;
  std::set<std::string> m_matched;
  bool m_none = false;  // --device-ids none: the one device "none", no "all"
};

// `inventory` without its 32-bit driver libraries (BuildOptions::libraries32): their files, the folders
// that held only them (update-ldcache's --folder), the links in those folders and the links whose target
// is a dropped file or link, through any chain (gbm-style relative targets resolved against the link's
// folder, as the kernel reads them).
Inventory without_libraries32(const Inventory& inventory) {
  Inventory out = inventory;
  std::set<std::string> dropped;
  std::set<std::string> dirs32;
  std::set<std::string> dirs64;
  for (const auto& file : inventory.files) {
    if (file.kind == FileKind::library32) {
      dropped.insert(file.container_path);
      dirs32.insert(parent_path(file.container_path));
    } else if (file.kind == FileKind::library) {
      dirs64.insert(parent_path(file.container_path));
    }
  }
  std::erase_if(dirs32, [&](const std::string& dir) { return dirs64.contains(dir); });
  std::erase_if(out.files, [](const DriverFile& file) { return file.kind == FileKind::library32; });
  std::erase_if(out.library_dirs, [&](const std::string& dir) { return dirs32.contains(dir); });
  const auto target_of = [](const discover::Symlink& link) {
    return link.target.starts_with('/') ? clean_path(link.target)
                                        : clean_path(parent_path(link.link) + "/" + link.target);
  };
  // Each pass is linear; passes stop when nothing new was dropped (at most the length of a link chain).
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& link : inventory.library_links) {
      if ((dirs32.contains(parent_path(link.link)) || dropped.contains(target_of(link))) &&
          dropped.insert(link.link).second) {
        grew = true;
      }
    }
  }
  std::erase_if(out.library_links,
                [&](const discover::Symlink& link) { return dropped.contains(link.link); });
  std::erase_if(out.library_cache_entries, [&](const discover::LibraryCacheEntry& entry) {
    return dropped.contains(entry.path) || dirs32.contains(parent_path(entry.path));
  });
  return out;
}

}  // namespace

bool is_fixed_major(uint32_t major) {
  return major == k_nvidia_major || major == k_drm_major;
}

DeviceNode spec_device_node(const discover::DeviceNode& node) {
  DeviceNode out;
  out.path = node.path;
  if (node.host_path != node.path) {
    out.host_path = node.host_path;  // only for a separate dev root: it raises cdiVersion to 0.5.0
  }
  out.type = std::string(1, node.type);
  if (is_fixed_major(node.major)) {
    out.major = node.major;
    out.minor = node.minor;
  }
  out.file_mode = node.mode;
  out.permissions = "rwm";
  if (node.gid != 0) {
    out.gid = node.gid;
  }
  return out;
}

std::vector<uint32_t> device_node_gids(const std::vector<DeviceNode>& nodes) {
  std::vector<uint32_t> gids;
  for (const auto& node : nodes) {
    if (!node.gid || *node.gid == 0 || !node.file_mode || *node.file_mode == 0) {
      continue;  // nothing says which group, or whether one is needed
    }
    const uint32_t mode = *node.file_mode;
    if ((mode & S_IROTH) != 0 && (mode & S_IWOTH) != 0) {
      continue;  // anyone may open it
    }
    gids.push_back(*node.gid);
  }
  std::ranges::sort(gids);
  gids.erase(std::ranges::unique(gids).begin(), gids.end());
  return gids;
}

void set_device_node_gids(Spec& spec, AdditionalGids mode) {
  const auto set = [mode](ContainerEdits& edits) {
    edits.additional_gids = mode == AdditionalGids::for_device_nodes ? device_node_gids(edits.device_nodes)
                                                                     : std::vector<uint32_t>{};
  };
  set(spec.container_edits);
  for (auto& device : spec.devices) {
    set(device.container_edits);
  }
}

Result<NameStrategy> parse_name_strategy(std::string_view text) {
  if (text == "index")
    return NameStrategy::index;
  if (text == "uuid")
    return NameStrategy::uuid;
  if (text == "type-index")
    return NameStrategy::type_index;
  return fail("unknown device name strategy \"" + std::string(text) + "\" (want index, uuid or type-index)");
}

bool is_create_symlinks_hook(const Hook& hook) {
  return hook.args.size() > 2 &&
         (hook.args[2] == k_hook_create_symlinks || hook.args[2] == k_hook_container_start);
}

namespace {

std::string hook_names() {
  std::vector<std::string_view> names(std::begin(k_all_hooks), std::end(k_all_hooks));
  return join(names, ", ");
}

}  // namespace

bool hook_enabled(const BuildOptions& options, std::string_view name) {
  const std::string key(name);
  if (options.enabled_hooks.contains(key)) {
    return true;
  }
  return name != k_hook_chmod && !options.disabled_hooks.contains("all") &&
         !options.disabled_hooks.contains(key);
}

Result<void> check_hook_name(std::string_view name) {
  if (name == "all" || std::ranges::find(k_all_hooks, name) != std::end(k_all_hooks)) {
    return {};
  }
  return fail("unknown hook " + quote(name) + " (want " + hook_names() + " or all)");
}

Result<void> check_enable_hook_name(std::string_view name) {
  if (name == "all") {
    return fail("--enable-hook all: enabling all hooks is not supported (name each: " + hook_names() + ")");
  }
  if (std::ranges::find(k_all_hooks, name) != std::end(k_all_hooks)) {
    return {};
  }
  return fail("unknown hook " + quote(name) + " (want " + hook_names() + ")");
}

Result<Spec> build_spec(const Inventory& inventory, const BuildOptions& options) {
  if (!options.libraries32 && std::ranges::any_of(inventory.files, [](const DriverFile& f) {
        return f.kind == FileKind::library32;
      })) {
    return Builder(without_libraries32(inventory), options).build();
  }
  return Builder(inventory, options).build();
}

Result<Spec> generate_spec(const Inventory& inventory, const BuildOptions& options) {
  GPUCTK_TRY_ASSIGN(auto spec, build_spec(inventory, options));
  GPUCTK_TRY(check_generated(spec));
  return spec;
}

}  // namespace gpuctk::cdi
