#include "discover/discover.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include "discover/device_nodes.hpp"
#include "discover/driver_files.hpp"
#include "discover/driver_version.hpp"
#include "discover/elf_library.hpp"
#include "discover/gpu_information.hpp"
#include "discover/host_fs.hpp"
#include "discover/nvidia_caps.hpp"
#include "discover/nvml.hpp"
#include "ldcache/cache_file.hpp"
#include "ldcache/paths.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

constexpr std::string_view k_nvml_soname = "libnvidia-ml.so.1";

// Directories tried for libnvidia-ml.so.1 when the cache does not list it.
constexpr std::string_view k_nvml_dirs[] = {
    "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
    "/lib64",     "/lib/x86_64-linux-gnu",     "/lib/aarch64-linux-gnu",
};

struct CacheView {
  std::vector<CachedLibrary> libraries;
};

// The driver root's ld.so.cache as (SONAME, path) pairs; a missing cache is a warning, a corrupt one an
// error (it would hide libraries silently).
Result<CacheView> load_cache(const std::string& driver_root, std::vector<std::string>& warnings) {
  CacheView view;
  // Resolved inside the driver root like every file taken from it: a link there must not make us read
  // the host's cache (or anything else of the host's).
  auto path = RootResolver(driver_root).resolve_or_why(ldcache::k_ld_cache);
  if (!path) {
    auto why = describe_unresolved(driver_root, ldcache::k_ld_cache, path.error());
    warnings.push_back((why.empty() ? under_root(driver_root, ldcache::k_ld_cache) + ": missing" : why) +
                       "; searching the standard library directories only");
    return view;
  }
  GPUCTK_TRY_ASSIGN(auto cache, ldcache::read_ld_cache(*path));
  const auto native = ldcache::native_arch();
  for (const auto& entry : cache.entries) {
    if (entry.type() != ldcache::LibType::elf_libc6 || entry.hwcap != 0) {
      continue;
    }
    const bool is_native = native && entry.arch() == *native;
    const bool is_32bit = native && ldcache::compat32_arch(*native) == entry.arch();
    if (is_native || is_32bit) {
      view.libraries.push_back({entry.key, entry.value, is_32bit, entry.flags, entry.osversion});
    }
  }
  return view;
}

// The host cache's entries (`cache`) for the libraries `inv` mounts: an entry whose path resolves inside
// the driver root to a mounted library's host path, mapped to the container directory that library is
// mounted in under the entry's own file name, when that is the mounted file itself or a link discovery
// makes there (the SONAME link). Anything else (a library not mounted, a link no spec makes) is left out.
std::vector<LibraryCacheEntry> library_cache_entries(const std::string& driver_root,
                                                     const std::vector<CachedLibrary>& cache,
                                                     const Inventory& inv) {
  std::map<std::string, const DriverFile*> by_host_path;
  for (const auto& file : inv.files) {
    if (file.kind == FileKind::library || file.kind == FileKind::library32) {
      by_host_path.emplace(file.host_path, &file);
    }
  }
  std::set<std::string> links;
  for (const auto& link : inv.library_links) {
    links.insert(link.link);
  }
  RootResolver resolver(driver_root);
  std::vector<LibraryCacheEntry> out;
  for (const auto& lib : cache) {
    const auto host = resolver.resolve(lib.path);
    const auto it = host ? by_host_path.find(*host) : by_host_path.end();
    if (it == by_host_path.end()) {
      continue;
    }
    // Beside the mounted file, and where the host has the entry (Debian's packages: the multiarch
    // folder's link to nvidia/current), when the spec puts a link there too.
    const std::string& mounted = it->second->container_path;
    const std::string beside =
        mounted.substr(0, mounted.rfind('/') + 1) + lib.path.substr(lib.path.rfind('/') + 1);
    // The host's folder under the name the spec uses (merged /usr: the cache says /lib/x86_64-linux-gnu).
    const auto host_dir = resolver.resolve(lib.path.substr(0, lib.path.rfind('/')));
    const std::string real =
        host_dir ? strip_root(driver_root, *host_dir) + lib.path.substr(lib.path.rfind('/')) : lib.path;
    for (const auto& path : {beside, lib.path, real}) {
      if (path == mounted || links.contains(path)) {
        out.push_back({lib.soname, path, lib.flags, lib.osversion});
      }
    }
  }
  // A mounted 64-bit library the host's cache does not list (VDPAU's driver in vdpau/, a folder no
  // ld.so.conf names): its own SONAME and flags (elf_library.hpp; osversion 0, see abi_tags_ignored below
  // for a library with an ABI tag note), when the container gets the file at
  // <its folder>/<SONAME>: the file itself or a link the spec makes there (whose target, in the same
  // folder, is the file). That is the entry the container's ldconfig would make for it.
  std::set<std::string> listed;  // container paths of mounted files the entries above name
  for (const auto& entry : out) {
    listed.insert(entry.path);
  }
  // Whether the ldconfig that wrote the host's cache ignores GNU ABI tag notes (glibc 2.36's writes
  // osversion 0 for every entry): its native libc.so.6 carries the note and is listed with osversion 0.
  // Then a tagged library's entry is known too; otherwise such a library gets none (ldconfig decides).
  bool abi_tags_ignored = false;
  for (const auto& lib : cache) {
    if (lib.soname == "libc.so.6" && !lib.is_32bit && lib.osversion == 0) {
      const auto host = resolver.resolve(lib.path);
      const auto libc = host ? native_library_facts(*host) : std::nullopt;
      abi_tags_ignored = libc && libc->abi_tag;
      break;
    }
  }
  std::map<std::string, std::string> link_target;  // link -> its target's path, in its folder
  for (const auto& link : inv.library_links) {
    if (link.target.find('/') == std::string::npos) {
      link_target.emplace(link.link, link.link.substr(0, link.link.rfind('/') + 1) + link.target);
    }
  }
  for (const auto& file : inv.files) {
    if (file.kind != FileKind::library) {
      continue;
    }
    const std::string dir = file.container_path.substr(0, file.container_path.rfind('/') + 1);
    const auto facts = native_library_facts(file.host_path);
    if (!facts || (facts->abi_tag && !abi_tags_ignored)) {
      continue;
    }
    // Without a SONAME, ldconfig lists the file under its own name.
    const std::string soname = facts->soname.empty() ? file.container_path.substr(dir.size()) : facts->soname;
    const std::string path = dir + soname;
    if (listed.contains(path)) {
      continue;
    }
    std::string end = path;
    for (int hops = 0; hops < 8 && link_target.contains(end); ++hops) {
      end = link_target.at(end);
    }
    if (end == file.container_path) {
      out.push_back({soname, path, facts->flags, 0});
      listed.insert(path);
    }
  }
  // The development links the spec makes (libnvidia-ml.so -> libnvidia-ml.so.1, libcuda.so ->
  // nvidia/current/libcuda.so.<version>): the container's ldconfig lists a link named "lib<x>.so" under its
  // own name when the SONAME of the library it leads to (through the spec's links, lexically, as the
  // kernel follows them) starts with that name, whether or not the host has the link.
  std::map<std::string, std::string> targets;  // link -> the path it names
  for (const auto& link : inv.library_links) {
    const std::string dir = link.link.substr(0, link.link.rfind('/') + 1);
    targets.emplace(link.link, clean_path(link.target.starts_with('/') ? link.target : dir + link.target));
  }
  std::map<std::string, const LibraryCacheEntry*> by_file;  // mounted file -> an entry of its SONAME
  for (const auto& entry : out) {
    std::string path = entry.path;
    for (int hops = 0; hops < 8 && targets.contains(path); ++hops) {
      path = targets.at(path);
    }
    by_file.emplace(path, &entry);
  }
  std::vector<LibraryCacheEntry> dev;
  for (const auto& link : inv.library_links) {
    const std::string name = link.link.substr(link.link.rfind('/') + 1);
    std::string path = link.link;
    for (int hops = 0; hops < 8 && targets.contains(path); ++hops) {
      path = targets.at(path);
    }
    const auto it = by_file.find(path);
    if (name.starts_with("lib") && name.ends_with(".so") && it != by_file.end() &&
        it->second->soname.starts_with(name)) {
      dev.push_back({name, link.link, it->second->flags, it->second->osversion});
    }
  }
  out.insert(out.end(), dev.begin(), dev.end());
  std::ranges::sort(out);
  out.erase(std::ranges::unique(out).begin(), out.end());
  return out;
}

std::optional<std::string> find_nvml(const std::string& driver_root, const CacheView& cache) {
  for (const auto& lib : cache.libraries) {
    if (!lib.is_32bit && lib.soname == k_nvml_soname) {
      // The path resolved inside the driver root, not the SONAME link: dlopen would follow an absolute
      // link of a driver container to the host's library.
      if (auto host = resolve_in_host_root_strict(driver_root, lib.path)) {
        return host;
      }
    }
  }
  for (const auto dir : k_nvml_dirs) {
    if (auto host =
            resolve_in_host_root_strict(driver_root, std::string(dir) + "/" + std::string(k_nvml_soname))) {
      return host;
    }
  }
  return std::nullopt;
}

// The driver version from /proc, else from the driver libraries' file names (find_library_version).
Result<DriverVersion> version_without_nvml(const std::string& dev_root, const DriverFilesInput& input,
                                           bool nvml_tried) {
  const std::string proc = under_root(dev_root, "/proc/driver/nvidia/version");
  GPUCTK_TRY_ASSIGN(const auto proc_st, lstat_path(proc));
  if (proc_st) {
    return read_parsed(proc, parse_driver_version);
  }
  // What the search finds wrong with a link (one leaving the root) the driver-file search that follows
  // reports again; keeping it once, there.
  std::vector<std::string> reported_later;
  GPUCTK_TRY_ASSIGN(auto found, find_library_version(input, reported_later));
  if (!found.version.empty()) {
    return DriverVersion{std::move(found.version), KernelModule::unknown};
  }
  std::string dirs;
  for (const auto& dir : found.searched) {
    dirs += (dirs.empty() ? "" : ", ") + dir;
  }
  return fail(
      "no NVIDIA driver version: tried " + std::string(nvml_tried ? "NVML, " : "") + proc +
      (input.cache.empty() ? "" : ", the ld.so.cache") +
      " and libcuda.so.<version> or libnvidia-ml.so.<version> in " +
      (dirs.empty() ? "the standard library directories of " + input.driver_root + " (none exists)" : dirs));
}

// The GPU's /dev/nvidia<minor> node (required) and its DRM nodes.
Result<void> add_gpu_nodes(const std::string& dev_root, Gpu& gpu, std::vector<std::string>& warnings) {
  const std::string path = "/dev/nvidia" + std::to_string(gpu.minor);
  GPUCTK_TRY_ASSIGN(auto node, stat_device_node(dev_root, path));
  if (!node) {
    return fail("GPU " + std::to_string(gpu.index) + " (" + gpu.bus_id + "): " + under_root(dev_root, path) +
                " missing");
  }
  gpu.node = std::move(*node);
  GPUCTK_TRY_ASSIGN(auto drm, discover_drm_nodes(dev_root, gpu.bus_id, warnings));
  gpu.drm_nodes = std::move(drm.nodes);
  gpu.by_path_links = std::move(drm.by_path_links);
  return {};
}

Result<DeviceNode> cap_node(const std::string& dev_root, std::optional<uint32_t> minor,
                            const std::string& what) {
  if (!minor) {
    return fail(what + ": not listed in " + under_root(dev_root, k_mig_minors_path));
  }
  const std::string path = capability_device_path(*minor);
  auto node = stat_device_node(dev_root, path);
  if (!node) {
    return std::unexpected(node.error());
  }
  if (!*node) {
    return fail(what + ": capability node " + under_root(dev_root, path) + " missing");
  }
  return std::move(**node);
}

// Fills the capability nodes of every MIG device; a MIG device without them is an error, never a silent
// partial device.
Result<void> add_mig_nodes(const std::string& dev_root, Gpu& gpu, const MigMinors& minors) {
  for (auto& mig : gpu.mig_devices) {
    const std::string what = "MIG device " + std::to_string(gpu.index) + ":" + std::to_string(mig.index) +
                             (mig.uuid.empty() ? "" : " (" + mig.uuid + ")");
    auto gi =
        cap_node(dev_root, minors.gi_access(gpu.minor, mig.gi),
                 what + ": gpu" + std::to_string(gpu.minor) + "/gi" + std::to_string(mig.gi) + "/access");
    if (!gi) {
      return std::unexpected(gi.error());
    }
    GPUCTK_TRY_ASSIGN(auto ci,
                      cap_node(dev_root, minors.ci_access(gpu.minor, mig.gi, mig.ci),
                               what + ": gpu" + std::to_string(gpu.minor) + "/gi" + std::to_string(mig.gi) +
                                   "/ci" + std::to_string(mig.ci) + "/access"));
    mig.gi_access = std::move(*gi);
    mig.ci_access = std::move(ci);
  }
  return {};
}

// GPUs from /proc/driver/nvidia/gpus/<bus>/information, in PCI bus order (NVML's order too).
Result<std::vector<Gpu>> gpus_from_proc(const std::string& dev_root, std::vector<std::string>& warnings) {
  const std::string dir = under_root(dev_root, "/proc/driver/nvidia/gpus");
  GPUCTK_TRY_ASSIGN(auto entries, list_dir(dir));
  std::vector<Gpu> gpus;
  for (const auto& entry : entries) {
    const std::string path = dir + "/" + entry.name + "/information";
    GPUCTK_TRY_ASSIGN(auto info, read_parsed(path, parse_gpu_information));
    if (info.excluded) {
      warnings.push_back("GPU " + info.bus_location + ": excluded by the driver; skipped");
      continue;
    }
    Gpu gpu;
    gpu.minor = info.minor;
    gpu.uuid = info.uuid.value_or("");
    gpu.model = info.model;
    gpu.bus_id = info.bus_location;
    gpus.push_back(std::move(gpu));
  }
  std::ranges::sort(gpus, {}, &Gpu::bus_id);
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].index = static_cast<uint32_t>(i);
  }
  return gpus;
}

// Without NVML, MIG devices are the GPU/compute instances that have capability files; their index is
// their rank in (GI, CI) order, and they have no UUID or profile.
Result<void> migs_from_proc(const std::string& dev_root, Gpu& gpu) {
  const std::string mig_dir =
      under_root(dev_root, "/proc/driver/nvidia/capabilities/gpu" + std::to_string(gpu.minor) + "/mig");
  GPUCTK_TRY_ASSIGN(auto gis, list_dir(mig_dir));
  std::vector<std::pair<uint32_t, uint32_t>> instances;
  for (const auto& gi : gis) {
    const auto gi_id =
        gi.name.starts_with("gi") ? parse_u32(std::string_view(gi.name).substr(2)) : std::nullopt;
    if (!gi_id) {
      continue;
    }
    GPUCTK_TRY_ASSIGN(auto cis, list_dir(mig_dir + "/" + gi.name));
    for (const auto& ci : cis) {
      const auto ci_id =
          ci.name.starts_with("ci") ? parse_u32(std::string_view(ci.name).substr(2)) : std::nullopt;
      if (ci_id) {
        instances.emplace_back(*gi_id, *ci_id);
      }
    }
  }
  std::ranges::sort(instances);
  gpu.mig_enabled = !instances.empty();
  for (size_t i = 0; i < instances.size(); ++i) {
    MigDevice mig;
    mig.index = static_cast<uint32_t>(i);
    mig.gi = instances[i].first;
    mig.ci = instances[i].second;
    gpu.mig_devices.push_back(std::move(mig));
  }
  return {};
}

Gpu from_nvml(const NvmlGpu& n) {
  Gpu gpu;
  gpu.index = n.index;
  gpu.minor = n.minor;
  gpu.uuid = n.uuid;
  gpu.model = n.name;
  gpu.bus_id = n.bus_id;
  gpu.memory_bytes = n.memory_bytes;
  gpu.mig_enabled = n.mig_enabled;
  gpu.mig_capable = n.mig_capable;
  gpu.compute_capability = n.compute_capability;
  gpu.brand = n.brand;
  gpu.architecture = n.architecture;
  for (const auto& m : n.migs) {
    MigDevice mig;
    mig.index = m.index;
    mig.gi = m.gi;
    mig.ci = m.ci;
    mig.uuid = m.uuid;
    mig.profile = m.profile;
    mig.memory_bytes = m.memory_bytes;
    mig.attributes = m.attributes;
    mig.graphics = m.graphics;
    gpu.mig_devices.push_back(std::move(mig));
  }
  return gpu;
}

// Where the GPU Operator's driver container shows its root on the host.
constexpr std::string_view k_driver_container_root = "/run/nvidia/driver";

// When no driver is found under `driver_root` but a driver container's root is below it (the GPU
// Operator's /run/nvidia/driver), what to say instead of only what was searched.
std::string driver_container_hint(const std::string& driver_root) {
  const std::string candidate = under_root(driver_root, k_driver_container_root);
  if (candidate == driver_root) {
    return {};
  }
  // An empty directory is where a driver container will appear, not one.
  auto entries = list_dir(candidate);
  if (!entries || entries->empty()) {
    return {};
  }
  return "; " + candidate + " is a driver container's root: use --driver-root " + candidate;
}

// `error` with the driver container hint of `driver_root` after it, when there is one.
Error with_hint(Error error, const std::string& driver_root) {
  error.message += driver_container_hint(driver_root);
  return error;
}

Result<void> check_root(std::string_view what, const std::string& root) {
  GPUCTK_TRY_ASSIGN(const auto st, stat_path(root));
  if (!st) {
    return fail(std::string(what) + " " + root + " does not exist");
  }
  if (!S_ISDIR(st->st_mode)) {
    return fail(std::string(what) + " " + root + " is not a directory");
  }
  return {};
}

}  // namespace

Result<void> check_roots(const DiscoverOptions& options) {
  GPUCTK_TRY(check_root("driver root", options.driver_root));
  return check_root("dev root", options.dev_root);
}

Result<Mode> parse_mode(std::string_view text) {
  if (text == "auto")
    return Mode::automatic;
  if (text == "nvml")
    return Mode::nvml;
  if (text == "proc")
    return Mode::proc;
  if (text == "management")
    return Mode::management;
  return fail("unknown mode \"" + std::string(text) + "\" (want auto, nvml, proc or management)");
}

Result<std::string> find_nvml_library(const std::string& driver_root) {
  std::vector<std::string> warnings;  // a missing cache only narrows the search, as in discover()
  GPUCTK_TRY_ASSIGN(const auto cache, load_cache(driver_root, warnings));
  if (auto library = find_nvml(driver_root, cache)) {
    return *library;
  }
  return fail(std::string(k_nvml_soname) + ": not found under " + driver_root +
              " (ld.so.cache and standard library directories)");
}

Result<Inventory> discover(const DiscoverOptions& options) {
  GPUCTK_TRY(check_roots(options));
  Inventory inv;
  GPUCTK_TRY_ASSIGN(auto cache, load_cache(options.driver_root, inv.warnings));

  // NVML is used in nvml mode (required) and in auto mode when the driver root has a library that
  // loads, has the required entry points and initialises. In auto mode one that cannot (an older
  // driver's library, no kernel module, a library/module mismatch) is one warning saying why, and /proc
  // discovery, which needs none of it. Once NVML is up, a failing query is an error in both modes: it
  // is a GPU's problem, which /proc would only hide.
  std::optional<NvmlReport> nvml;
  std::string nvml_library;
  bool nvml_tried = false;
  if (options.mode == Mode::nvml || options.mode == Mode::automatic) {
    const auto library = options.nvml_library.empty() ? find_nvml(options.driver_root, cache)
                                                      : std::optional(options.nvml_library);
    nvml_tried = library.has_value();
    if (!library && options.mode == Mode::nvml) {
      return fail(std::string(k_nvml_soname) + ": not found under " + options.driver_root +
                  " (ld.so.cache and standard library directories)");
    }
    if (library) {
      nvml_library = *library;
      auto session = Nvml::open(*library);
      if (session) {
        GPUCTK_TRY_ASSIGN(nvml, session->report());
        inv.warnings.insert(inv.warnings.end(), nvml->warnings.begin(), nvml->warnings.end());
      } else if (options.mode == Mode::nvml) {
        return std::unexpected(session.error());
      } else {
        inv.warnings.push_back(session.error().message + "; GPUs from /proc/driver/nvidia instead");
      }
    }
  }

  DriverFilesInput input;
  input.driver_root = options.driver_root;
  input.cache = std::move(cache.libraries);
  input.library_search_paths = options.library_search_paths;
  inv.dev_dir = under_root(options.dev_root, "/dev");

  if (nvml) {
    inv.gpu_source = GpuSource::nvml;
    inv.gpus_from = "NVML (" + nvml_library + ")";
    inv.nvml_library = nvml_library;
    inv.driver_version = nvml->driver_version;
    inv.cuda_version = nvml->cuda_version;
    // The module flavour is only in /proc; it is informational.
    if (auto parsed =
            read_parsed(under_root(options.dev_root, "/proc/driver/nvidia/version"), parse_driver_version)) {
      inv.kernel_module = parsed->kernel_module;
    }
    for (const auto& gpu : nvml->gpus) {
      inv.gpus.push_back(from_nvml(gpu));
    }
  } else {
    auto version = version_without_nvml(options.dev_root, input, nvml_tried);
    if (!version) {
      return std::unexpected(with_hint(version.error(), options.driver_root));
    }
    inv.driver_version = version->version;
    inv.kernel_module = version->kernel_module;
    inv.gpus_from = under_root(options.dev_root, "/proc/driver/nvidia/gpus");
    GPUCTK_TRY_ASSIGN(auto gpus, gpus_from_proc(options.dev_root, inv.warnings));
    inv.gpus = std::move(gpus);
    for (auto& gpu : inv.gpus) {
      GPUCTK_TRY(migs_from_proc(options.dev_root, gpu));
    }
  }

  std::optional<MigMinors> minors;
  for (auto& gpu : inv.gpus) {
    GPUCTK_TRY(add_gpu_nodes(options.dev_root, gpu, inv.warnings));
    if (gpu.mig_devices.empty()) {
      continue;
    }
    if (!minors) {
      GPUCTK_TRY_ASSIGN(auto loaded, read_mig_minors(options.dev_root));
      minors = std::move(loaded);
    }
    GPUCTK_TRY(add_mig_nodes(options.dev_root, gpu, *minors));
  }

  GPUCTK_TRY_ASSIGN(auto control, discover_control_nodes(options.dev_root, inv.warnings));
  inv.control_nodes = std::move(control);
  if (options.mode == Mode::management) {
    GPUCTK_TRY_ASSIGN(auto nodes, discover_management_nodes(options.dev_root));
    inv.management_nodes = std::move(nodes);
  }

  input.driver_version = inv.driver_version;
  if (auto custom = read_file(under_root(options.dev_root, "/sys/module/firmware_class/parameters/path"))) {
    input.firmware_class_path = std::string(trim(*custom));
  }
  auto files = discover_driver_files(input, inv.warnings);
  if (!files) {
    return std::unexpected(with_hint(files.error(), options.driver_root));
  }
  inv.files = std::move(files->files);
  inv.library_dirs = std::move(files->library_dirs);
  inv.driver_library_dirs = std::move(files->driver_library_dirs);
  inv.library_links = std::move(files->links);
  inv.notes = std::move(files->notes);
  inv.library_cache_entries = library_cache_entries(options.driver_root, input.cache, inv);
  return inv;
}

}  // namespace gpuctk::discover
