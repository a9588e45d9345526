#include "discover/driver_files.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "discover/driver_version.hpp"
#include "discover/host_fs.hpp"
#include "util/strings.hpp"

namespace gpuctk::discover {

namespace {

// Library directories searched (inside the driver root) besides those the ld.so.cache names.
constexpr std::string_view k_library_dirs[] = {
    "/usr/lib64",                                // RHEL, SUSE
    "/usr/lib/x86_64-linux-gnu",                 // Debian, Ubuntu
    "/usr/lib/aarch64-linux-gnu",                // Debian, Ubuntu on Arm
    "/usr/lib/x86_64-linux-gnu/nvidia/current",  // Debian's packaged driver
    "/usr/lib/aarch64-linux-gnu/nvidia/current",
    "/lib64",
    "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
};

// 32-bit library directories (the cache's i386 entries add to these).
constexpr std::string_view k_library32_dirs[] = {
    "/usr/lib/i386-linux-gnu",  // Debian, Ubuntu
    "/usr/lib32",               // Arch and others
    "/usr/lib",                 // RHEL: 32-bit libraries beside /usr/lib64
};

// What makes a library directory (container path, "/vdpau" removed) 32-bit for the capability filter.
// Exact directories first: RHEL keeps 32-bit libraries in /usr/lib beside /usr/lib64 (a layout whose
// /usr/lib holds 64-bit libraries, Arch's, is misread: discovery notes it, see Collector::add).
constexpr std::string_view k_library32_exact_dirs[] = {"/usr/lib"};
// Then any path component naming a 32-bit ABI, wherever the ld.so.cache found the library
// (/usr/lib/i386-linux-gnu/nvidia/current of Debian's packaged driver, /opt/x/lib32).
constexpr std::string_view k_library32_markers[] = {
    "i386-linux-gnu",       // Debian/Ubuntu multiarch, x86
    "i686-linux-gnu",       // the same on some derivatives
    "arm-linux-gnueabihf",  // Debian/Ubuntu multiarch, 32-bit ARM beside aarch64
    "lib32",                // Arch, and hand-made trees
};

// Libraries that are NVIDIA's but carry their own version instead of the driver's.
constexpr std::string_view k_own_version_libraries[] = {
    "libnvidia-egl-gbm.so.",       // EGL external platform for GBM
    "libnvidia-egl-wayland.so.",   // EGL external platform for Wayland
    "libnvidia-egl-wayland2.so.",  // its successor
    "libnvidia-egl-xcb.so.",       // EGL external platform for XCB
    "libnvidia-egl-xlib.so.",      // EGL external platform for Xlib
    "libnvidia-nvvm70.so.",        // NVVM 7.0 kept for older CUDA toolkits (libnvidia-nvvm70.so.4)
};

// Driver libraries whose file name carries no version at all; each is the driver's only when it lies in
// a directory that holds libraries of the driver's version.
constexpr std::string_view k_unversioned_libraries[] = {
    "libnvidia-api.so.1",  // NVAPI (Debian's libnvidia-api1 and NVIDIA's installer ship it so)
};

// Subdirectories of a library directory where loaders look for a driver file at a fixed path: GBM's
// backends (gbm/nvidia-drm_gbm.so) and VDPAU's drivers (vdpau/libvdpau_nvidia.so.1).
constexpr std::string_view k_loader_subdirs[] = {"", "/gbm", "/vdpau"};

// Where binaries are looked for, in order (inside the driver root).
constexpr std::string_view k_binary_dirs[] = {
    "/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin",
};

// X.Org module directories; the first one holding a module wins. "<lib>" is each library directory.
constexpr std::string_view k_xorg_dirs[] = {
    "<lib>/nvidia/xorg",
    "<lib>/xorg/modules/drivers",
    "<lib>/xorg/modules/extensions",
    "/usr/lib/xorg/modules/drivers",
    "/usr/lib/xorg/modules/extensions",
    "/usr/lib64/xorg/modules/drivers",
    "/usr/lib64/xorg/modules/extensions",
    "/usr/X11R6/lib/modules/drivers",
    "/usr/X11R6/lib/modules/extensions",
};

// Firmware search directories, as the kernel searches them (the custom path first, added at run time).
constexpr std::string_view k_firmware_dirs[] = {
    "/lib/firmware/updates",
    "/lib/firmware",
    "/usr/lib/firmware/updates",
    "/usr/lib/firmware",
};

struct IpcRow {
  std::string_view path;
  bool directory;
  Capability capability;
};
// Sockets and directories of driver daemons; /run is tried before /var/run. Each is mounted into every
// GPU container, so each must be the daemon's own: owned by root (collect_ipc), and a directory must be
// a real one that only its owner can write (/tmp/nvidia-mps can be made by any user of the host).
constexpr IpcRow k_ipc[] = {
    {"/run/nvidia-persistenced/socket", false, Capability::utility},   // persistence daemon
    {"/run/nvidia-fabricmanager/socket", false, Capability::utility},  // NVSwitch fabric manager
    {"/tmp/nvidia-mps", true, Capability::compute},                    // default MPS pipe directory
};

// The k_ipc row of a container path (also under /var/run), if any.
const IpcRow* ipc_row(std::string_view container_path) {
  for (const auto& row : k_ipc) {
    if (container_path == row.path || (row.path.starts_with("/run/") && container_path.starts_with("/var") &&
                                       container_path.substr(4) == row.path)) {
      return &row;
    }
  }
  return nullptr;
}

struct ConfigRow {
  std::string_view relative;   // searched under /etc, /usr/local/share, /usr/share of the driver root
  std::string_view container;  // where it goes in the container, wherever the host keeps it
  Capability capability;
  std::optional<ldcache::Arch> arch =
      std::nullopt;  // only for a driver of this architecture (a file named for it)
};
// Configuration files of the driver, mounted at their canonical container paths.
constexpr ConfigRow k_configs[] = {
    {"glvnd/egl_vendor.d/10_nvidia.json", "/usr/share/glvnd/egl_vendor.d/10_nvidia.json",
     Capability::graphics},
    {"egl/egl_external_platform.d/09_nvidia_wayland2.json",
     "/usr/share/egl/egl_external_platform.d/09_nvidia_wayland2.json", Capability::graphics},
    {"egl/egl_external_platform.d/10_nvidia_wayland.json",
     "/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json", Capability::graphics},
    {"egl/egl_external_platform.d/15_nvidia_gbm.json",
     "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json", Capability::graphics},
    {"egl/egl_external_platform.d/20_nvidia_xcb.json",
     "/usr/share/egl/egl_external_platform.d/20_nvidia_xcb.json", Capability::graphics},
    {"egl/egl_external_platform.d/20_nvidia_xlib.json",
     "/usr/share/egl/egl_external_platform.d/20_nvidia_xlib.json", Capability::graphics},
    {"nvidia/nvoptix.bin", "/usr/share/nvidia/nvoptix.bin", Capability::graphics},  // OptiX denoiser data
    {"X11/xorg.conf.d/10-nvidia.conf", "/usr/share/X11/xorg.conf.d/10-nvidia.conf", Capability::display},
    {"X11/xorg.conf.d/nvidia-drm-outputclass.conf", "/usr/share/X11/xorg.conf.d/nvidia-drm-outputclass.conf",
     Capability::display},
    {"OpenCL/vendors/nvidia.icd", "/etc/OpenCL/vendors/nvidia.icd",
     Capability::compute},  // OpenCL ICD loader entry
    {"vulkan/icd.d/nvidia_icd.json", "/etc/vulkan/icd.d/nvidia_icd.json",
     Capability::graphics},  // Vulkan ICD
    // RPM's layout: the ICD named for the package's architecture (nvidia_icd.%{_target_cpu}.json).
    {"vulkan/icd.d/nvidia_icd.x86_64.json", "/etc/vulkan/icd.d/nvidia_icd.x86_64.json", Capability::graphics,
     ldcache::Arch::x86_64},
    {"vulkan/icd.d/nvidia_icd.aarch64.json", "/etc/vulkan/icd.d/nvidia_icd.aarch64.json",
     Capability::graphics, ldcache::Arch::aarch64},
    {"vulkan/icd.d/nvidia_layers.json", "/etc/vulkan/icd.d/nvidia_layers.json", Capability::graphics},
    {"vulkan/implicit_layer.d/nvidia_layers.json", "/etc/vulkan/implicit_layer.d/nvidia_layers.json",
     Capability::graphics},
};
constexpr std::string_view k_config_dirs[] = {"/etc", "/usr/local/share", "/usr/share"};

std::string_view dirname_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string_view("/") : path.substr(0, slash);
}

std::string_view basename_of(std::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

// Whether a library in container directory `dir` is 32-bit, by the directory's name alone.
bool is_library32_dir(std::string_view dir) {
  if (dir.ends_with("/vdpau")) {
    dir.remove_suffix(6);
  }
  if (std::ranges::find(k_library32_exact_dirs, dir) != std::end(k_library32_exact_dirs)) {
    return true;
  }
  return std::ranges::any_of(split(dir, '/'), [](std::string_view part) {
    return std::ranges::find(k_library32_markers, part) != std::end(k_library32_markers);
  });
}

// Firmware: anything in the kernel's standard firmware directories, and GSP firmware as the driver loads
// it from any firmware directory (firmware_class.path): "<firmware dir>/nvidia/<version>/gsp*.bin".
bool is_firmware(std::string_view path) {
  if (path.starts_with("/lib/firmware/") || path.starts_with("/usr/lib/firmware/")) {
    return true;
  }
  const auto name = basename_of(path);
  if (!name.starts_with("gsp") || !name.ends_with(".bin") || name.size() == path.size()) {
    return false;
  }
  const auto version_dir = dirname_of(path);        // <firmware dir>/nvidia/<version>
  const auto nvidia_dir = dirname_of(version_dir);  // <firmware dir>/nvidia
  return version_dir.size() > nvidia_dir.size() + 1 && basename_of(nvidia_dir) == "nvidia";
}

bool is_own_version_library(std::string_view name) {
  return std::ranges::any_of(k_own_version_libraries,
                             [&](std::string_view p) { return name.starts_with(p); });
}

bool is_unversioned_library(std::string_view name) {
  return std::ranges::find(k_unversioned_libraries, name) != std::end(k_unversioned_libraries);
}

// The target of a link at `link_dir` (a container directory) that reaches `path` (a container path) by a
// relative route: "../nvidia/current/libnvidia-allocator.so.1" from /usr/lib/x86_64-linux-gnu/gbm.
std::string relative_target(std::string_view link_dir, std::string_view path) {
  const auto from = split(link_dir, '/');
  const auto to = split(path, '/');
  size_t common = 0;
  while (common < from.size() && common + 1 < to.size() && from[common] == to[common]) {
    ++common;
  }
  std::string target;
  for (size_t i = common; i < from.size(); ++i) {
    if (!from[i].empty()) {
      target += "../";
    }
  }
  for (size_t i = common; i < to.size(); ++i) {
    target += std::string(to[i]) + (i + 1 < to.size() ? "/" : "");
  }
  return target;
}

class Collector {
 public:
  Collector(const DriverFilesInput& input, std::vector<std::string>& warnings)
      : m_in(input),
        m_resolver(input.driver_root),
        m_root(m_resolver.root()),
        m_suffix(".so." + input.driver_version),
        m_warnings(warnings) {}

  Result<DriverFiles> run() {
    GPUCTK_TRY(collect_libraries(false));
    if (m_libraries64 == 0) {
      return fail("no driver libraries (*" + m_suffix + ") under " + m_root + " (searched " +
                  std::to_string(m_dirs_searched) + " directories and the ld.so.cache)");
    }
    GPUCTK_TRY(collect_libraries(true));
    GPUCTK_TRY(collect_indirect_links());
    collect_binaries();
    collect_xorg_modules();
    collect_firmware();
    collect_ipc();
    collect_configs();

    std::ranges::sort(m_out.files, {}, &DriverFile::container_path);
    const auto [first, last] = std::ranges::unique(m_out.files, {}, &DriverFile::container_path);
    m_out.files.erase(first, last);
    std::ranges::sort(m_out.links);
    const auto [lfirst, llast] = std::ranges::unique(m_out.links);
    m_out.links.erase(lfirst, llast);
    // The update-ldcache folders: every directory a mounted library is in (vdpau/ too).
    std::set<std::string> dirs;
    for (const auto& file : m_out.files) {
      if (file.kind == FileKind::library || file.kind == FileKind::library32) {
        dirs.emplace(dirname_of(file.container_path));
      }
    }
    m_out.library_dirs.assign(dirs.begin(), dirs.end());
    m_out.driver_library_dirs = m_container_library_dirs64;
    std::ranges::sort(m_out.driver_library_dirs);
    m_out.driver_library_dirs.erase(std::ranges::unique(m_out.driver_library_dirs).begin(),
                                    m_out.driver_library_dirs.end());
    return std::move(m_out);
  }

  Result<LibraryVersion> find_version() {
    LibraryVersion out;
    constexpr std::string_view k_stems[] = {"libcuda.so.", "libnvidia-ml.so."};
    // The cache's SONAME entries first: the libraries the dynamic linker would load.
    std::vector<std::string> dirs;
    const auto add_dir = [&dirs](std::string dir) {
      if (std::ranges::find(dirs, dir) == dirs.end()) {
        dirs.push_back(std::move(dir));
      }
    };
    for (const auto stem : k_stems) {
      for (const auto& entry : m_in.cache) {
        if (entry.is_32bit || entry.soname != std::string(stem) + "1") {
          continue;
        }
        if (auto resolved = locate(entry.path)) {
          if (auto version = library_driver_version(basename_of(*resolved), stem)) {
            out.version = std::move(*version);
            out.library = std::move(*resolved);
            return out;
          }
          add_dir(std::string(dirname_of(*resolved)));  // libcuda.so.1 a regular file: look beside it
        }
      }
    }
    for (const auto& dir : m_in.library_search_paths) {
      if (auto host = locate_dir(dir)) {
        add_dir(std::move(*host));
      }
    }
    for (const auto dir : k_library_dirs) {
      if (auto host = locate_dir(dir)) {
        add_dir(std::move(*host));
      }
    }
    // Then the directories, libcuda before libnvidia-ml: one version per library, or the driver is
    // ambiguous (an upgrade's leftovers) and guessing would mount the wrong libraries.
    for (const auto stem : k_stems) {
      for (const auto& dir : dirs) {
        GPUCTK_TRY_ASSIGN(const auto entries, list_dir(dir));
        std::set<std::string> versions;
        for (const auto& entry : entries) {
          if (entry.type == DT_REG) {
            if (auto version = library_driver_version(entry.name, stem)) {
              versions.insert(std::move(*version));
            }
          }
        }
        if (versions.size() > 1) {
          std::string list;
          for (const auto& v : versions) {
            list += (list.empty() ? "" : ", ") + std::string(stem) + v;
          }
          return fail(dir + ": libraries of several driver versions (" + list +
                      "); cannot tell which is the driver's");
        }
        if (versions.size() == 1) {
          out.version = *versions.begin();
          out.library = dir + "/" + std::string(stem) + out.version;
          return out;
        }
      }
    }
    out.searched = std::move(dirs);
    return out;
  }

 private:
  // Records a file with the need the one classifier (file_need) gives its container path.
  void add(FileKind kind, std::string host_path, std::string container_path) {
    const FileNeed need = file_need(container_path);
    std::optional<Capability> cap;
    if (need.kind == FileNeed::Kind::capability) {
      cap = need.capability;
    }
    DriverFile file{kind, std::move(host_path), std::move(container_path), cap};
    if (recorded_need(file) != need) {
      // Only a library whose directory name misleads the classifier gets here (64-bit libraries in
      // /usr/lib, Arch's layout): the hook's capability filter will treat it by its directory name.
      m_out.notes.push_back(file.host_path + ": " + (kind == FileKind::library32 ? "32" : "64") +
                            "-bit library in a directory the capability filter takes for " +
                            (need.is_32bit ? "32" : "64") + "-bit");
    }
    m_out.files.push_back(std::move(file));
  }

  // The host path of `path` (inside the driver root), resolved in the root; nothing when it does not
  // exist. A path that exists but cannot be used (its links leave the root, dangle or loop; lstat
  // fails) is a warning that names it and where it points.
  std::optional<std::string> locate(std::string_view path) {
    auto resolved = m_resolver.resolve_or_why(path);
    if (resolved) {
      return std::move(*resolved);
    }
    const auto& why = resolved.error();
    // One warning per bad link: /lib/firmware and /usr/lib/firmware may both lead through it.
    if (!why.link.empty() && !m_reported_links.insert(why.link).second) {
      return std::nullopt;
    }
    if (auto what = describe_unresolved(m_root, path, why); !what.empty()) {
      m_warnings.push_back(std::move(what) + "; skipped");
    }
    return std::nullopt;
  }

  // stat of a located file; nothing when it is gone, and a warning (with the errno text) when it cannot be
  // examined: a file we cannot see is skipped, but not silently as if it were missing.
  std::optional<struct stat> examine(const std::string& host, bool follow = true) {
    auto st = follow ? stat_path(host) : lstat_path(host);
    if (!st) {
      m_warnings.push_back(st.error().message + "; skipped");
      return std::nullopt;
    }
    return *st;
  }

  // locate() for a directory: nothing when it resolves to something that is not a directory.
  std::optional<std::string> locate_dir(std::string_view path) {
    auto host = locate(path);
    if (host && !examine(*host)
                     .transform([](const struct stat& st) { return S_ISDIR(st.st_mode); })
                     .value_or(false)) {
      return std::nullopt;
    }
    return host;
  }

  // Library directories (resolved host paths): the built-in ones plus every directory where the cache
  // finds a file of this driver version. A directory searched for 64-bit libraries is not searched
  // again for 32-bit ones (RHEL's /usr/lib holds 32-bit libraries, Arch's 64-bit ones).
  std::set<std::string> library_dirs(bool is_32bit) {
    std::set<std::string> dirs;
    const auto add_dir = [&](std::string_view dir) {
      if (auto resolved = locate_dir(dir)) {
        dirs.insert(std::move(*resolved));
      }
    };
    if (!is_32bit) {
      for (const auto& dir : m_in.library_search_paths) {
        add_dir(dir);
      }
      for (const auto dir : k_library_dirs) {
        add_dir(dir);
      }
    } else {
      for (const auto dir : k_library32_dirs) {
        add_dir(dir);
      }
    }
    for (const auto& entry : m_in.cache) {
      if (entry.is_32bit != is_32bit) {
        continue;
      }
      const auto resolved = m_resolver.resolve(entry.path);
      if (resolved && resolved->ends_with(m_suffix)) {
        dirs.emplace(dirname_of(*resolved));
      }
    }
    if (is_32bit) {
      for (const auto& dir : m_host_library_dirs64) {
        dirs.erase(dir);
      }
    }
    return dirs;
  }

  Result<void> collect_libraries(bool is_32bit) {
    for (const auto& dir : library_dirs(is_32bit)) {
      ++m_dirs_searched;
      m_searched_library_dirs.push_back(dir);
      GPUCTK_TRY_ASSIGN(const bool found, collect_library_dir(dir, is_32bit));
      if (!is_32bit) {
        m_host_library_dirs64.push_back(dir);
        if (found) {
          m_container_library_dirs64.push_back(strip_root(m_root, dir));
        }
      }
      // vdpau/ beside the libraries holds libvdpau_nvidia; resolved like everything else, so a link
      // there cannot list a directory outside the root.
      if (found) {
        if (auto vdpau = locate_dir(strip_root(m_root, dir) + "/vdpau")) {
          GPUCTK_TRY(collect_library_dir(*vdpau, is_32bit));
        }
      }
    }
    return {};
  }

  // Adds the driver libraries of one directory (a resolved host path) and the links beside them; true
  // if it held any.
  Result<bool> collect_library_dir(const std::string& dir, bool is_32bit) {
    GPUCTK_TRY_ASSIGN(const auto entries, list_dir(dir));
    std::set<std::string> libraries;
    const std::string container_dir = strip_root(m_root, dir);
    for (const auto& entry : entries) {
      if (entry.type != DT_REG) {
        continue;
      }
      const bool ours = entry.name.ends_with(m_suffix) || is_own_version_library(entry.name) ||
                        is_unversioned_library(entry.name);
      if (!ours || !entry.name.starts_with("lib")) {
        continue;
      }
      libraries.insert(entry.name);
    }
    // A directory is the driver's when it holds a library of the driver's own version (or an EGL
    // platform library of its own); an unversioned name alone (libnvidia-api.so.1) could be anyone's.
    if (std::ranges::all_of(libraries, is_unversioned_library)) {
      return false;
    }
    for (const auto& name : libraries) {
      add(is_32bit ? FileKind::library32 : FileKind::library, dir + "/" + name, container_dir + "/" + name);
      if (!is_32bit) {
        ++m_libraries64;
      }
    }
    // Links in the directory that lead to a driver library (possibly through another link): the SONAME
    // links (libcuda.so.1) and development links (libcuda.so) the container needs.
    std::map<std::string, std::string> links;  // link name -> verbatim target
    for (const auto& entry : entries) {
      if (entry.type == DT_LNK) {
        if (auto target = read_link(dir + "/" + entry.name);
            target && target->find('/') == std::string::npos) {
          links.emplace(entry.name, *target);
        }
      }
    }
    // The name a link target ends at, through the links of this directory.
    const auto end_of = [&links](std::string end) {
      for (int hops = 0; hops < 8 && links.contains(end); ++hops) {
        end = links.at(end);
      }
      return end;
    };
    std::set<std::string> linked;  // names given a link here
    for (const auto& [name, target] : links) {
      if (libraries.contains(end_of(target))) {
        m_out.links.push_back({target, container_dir + "/" + name});
        linked.insert(name);
      }
    }
    // Links applications expect even when the host lacks them. Only when it lacks them: a link name
    // gets one target (create-symlinks refuses a spec that gives it two). libcuda.so.1 is what every
    // CUDA program loads, and libcuda.so what builds link against: both come with libcuda.so.<version>,
    // whatever the host has (a copied libcuda.so.1, no links at all).
    if (const std::string cuda = "libcuda" + m_suffix; libraries.contains(cuda)) {
      if (!linked.contains("libcuda.so.1")) {
        m_out.links.push_back({cuda, container_dir + "/libcuda.so.1"});
      }
      if (!linked.contains("libcuda.so")) {
        m_out.links.push_back({"libcuda.so.1", container_dir + "/libcuda.so"});
      }
    }
    if (links.contains("libGLX_nvidia.so.0") && !links.contains("libGLX_indirect.so.0")) {
      m_out.links.push_back({"libGLX_nvidia.so.0", container_dir + "/libGLX_indirect.so.0"});
    }
    // gbm/nvidia-drm_gbm.so -> ../libnvidia-allocator.so.1: the GBM loader's backend is a link one
    // directory down that climbs back to a driver library here (so gbm/ must be a real directory). It
    // comes with the allocator whatever the host has, as nvidia-ctk makes it (Debian's packages keep
    // their backend link beside the library, not in gbm/); a link the host has here is taken as it is.
    const std::string gbm_link = container_dir + "/gbm/nvidia-drm_gbm.so";
    bool gbm_linked = false;
    if (auto gbm = locate_dir(container_dir + "/gbm"); gbm && *gbm == dir + "/gbm") {
      GPUCTK_TRY_ASSIGN(const auto gbm_entries, list_dir(*gbm));
      for (const auto& entry : gbm_entries) {
        if (entry.type != DT_LNK) {
          continue;
        }
        const auto target = read_link(*gbm + "/" + entry.name);
        if (target && target->starts_with("../") && target->find('/', 3) == std::string::npos &&
            libraries.contains(end_of(target->substr(3)))) {
          m_out.links.push_back({*target, strip_root(m_root, *gbm) + "/" + entry.name});
          gbm_linked = gbm_linked || entry.name == "nvidia-drm_gbm.so";
        }
      }
    }
    if (libraries.contains("libnvidia-allocator" + m_suffix) && !gbm_linked) {
      m_out.links.push_back({"../libnvidia-allocator.so.1", gbm_link});
    }
    return true;
  }

  // Links in the library directories and their loader subdirectories (gbm/, vdpau/) that reach a
  // mounted library through links elsewhere. Debian's update-alternatives makes
  // /usr/lib/<triplet>/libcuda.so.1 -> /etc/alternatives/nvidia--libcuda.so.1-<triplet> ->
  // /usr/lib/<triplet>/nvidia/current/libcuda.so.1, and the loaders with a fixed path (GBM's backend,
  // VDPAU's driver) find the driver only there. The container gets each as one link straight to the
  // mounted file, relative, so it holds inside any root; /etc/alternatives itself is never copied. Links
  // with a plain name are the directory's own (collect_library_dir).
  Result<void> collect_indirect_links() {
    std::map<std::string, std::string> mounted;  // host path -> container path of every library
    for (const auto& file : m_out.files) {
      if (file.kind == FileKind::library || file.kind == FileKind::library32) {
        mounted.emplace(file.host_path, file.container_path);
      }
    }
    // A link already taken as the host has it (gbm/nvidia-drm_gbm.so -> ../libnvidia-allocator.so.1 of
    // collect_library_dir) keeps its one target.
    std::set<std::string> linked;
    for (const auto& link : m_out.links) {
      linked.insert(link.link);
    }
    std::set<std::string> seen;
    for (const auto& dir : m_searched_library_dirs) {
      for (const auto sub : k_loader_subdirs) {
        const std::string container_dir = strip_root(m_root, dir) + std::string(sub);
        const auto host_dir = locate_dir(container_dir);
        if (!host_dir || *host_dir != dir + std::string(sub) || !seen.insert(*host_dir).second) {
          continue;  // missing, or itself a link (listed where it leads, if anywhere)
        }
        GPUCTK_TRY_ASSIGN(const auto entries, list_dir(*host_dir));
        for (const auto& entry : entries) {
          const std::string link = container_dir + "/" + entry.name;
          if (entry.type != DT_LNK || linked.contains(link) ||
              read_link(*host_dir + "/" + entry.name).value_or("").find('/') == std::string::npos) {
            continue;
          }
          const auto resolved = m_resolver.resolve(link);
          const auto it = resolved ? mounted.find(*resolved) : mounted.end();
          if (it != mounted.end()) {
            m_out.links.push_back({relative_target(container_dir, it->second), link});
          }
        }
      }
    }
    return {};
  }

  void collect_binaries() {
    for (const auto name : known_binaries()) {
      bool found = false;
      for (const auto dir : k_binary_dirs) {
        const std::string path = std::string(dir) + "/" + std::string(name);
        const auto host = locate(path);
        if (!host) {
          continue;
        }
        const auto st = examine(*host);
        if (st && S_ISREG(st->st_mode) && (st->st_mode & 0111) != 0) {
          add(FileKind::binary, *host, path);
          found = true;
          break;
        }
      }
      if (!found) {
        (binary_is_optional(name) ? m_out.notes : m_warnings)
            .push_back("binary " + std::string(name) + ": not found under " + m_root);
      }
    }
  }

  void collect_xorg_modules() {
    const std::string glx = "libglxserver_nvidia.so." + m_in.driver_version;
    for (const std::string& name : {std::string("nvidia_drv.so"), glx}) {
      bool found = false;
      for (const auto pattern : k_xorg_dirs) {
        std::vector<std::string> dirs;  // container paths
        if (pattern.starts_with("<lib>")) {
          for (const auto& lib : m_container_library_dirs64) {
            dirs.push_back(lib + std::string(pattern.substr(5)));
          }
        } else {
          dirs.emplace_back(pattern);
        }
        for (const auto& dir : dirs) {
          auto host = locate(dir + "/" + name);
          if (!host && name == glx) {
            // Debian keeps only the link libglxserver_nvidia.so in the modules directory (through
            // update-alternatives to /usr/lib/nvidia/current): the module it leads to is this one.
            host = locate(dir + "/libglxserver_nvidia.so");
            if (host && basename_of(*host) != glx) {
              host.reset();
            }
          }
          const auto st = host ? examine(*host) : std::nullopt;
          if (!st || !S_ISREG(st->st_mode)) {
            continue;
          }
          add(FileKind::xorg_module, *host, dir + "/" + name);
          if (name == glx) {
            m_out.links.push_back({glx, dir + "/libglxserver_nvidia.so"});
          }
          found = true;
          break;
        }
        if (found) {
          break;
        }
      }
    }
  }

  void collect_firmware() {
    std::vector<std::string> dirs;
    // A custom firmware path (firmware_class.path) comes first, as in the kernel.
    if (!m_in.firmware_class_path.empty()) {
      dirs.push_back(m_in.firmware_class_path);
    }
    for (const auto dir : k_firmware_dirs) {
      dirs.emplace_back(dir);
    }
    for (const auto& dir : dirs) {
      const std::string fw_dir = dir + "/nvidia/" + m_in.driver_version;  // container path
      const auto host_dir = locate_dir(fw_dir);
      if (!host_dir) {
        continue;
      }
      auto entries = list_dir(*host_dir);
      if (!entries) {
        m_warnings.push_back(entries.error().message);
        continue;
      }
      bool found = false;
      for (const auto& entry : *entries) {
        if (entry.name.starts_with("gsp") && entry.name.ends_with(".bin") && entry.type == DT_REG) {
          add(FileKind::firmware, *host_dir + "/" + entry.name, fw_dir + "/" + entry.name);
          found = true;
        }
      }
      if (found) {
        break;  // the kernel loads from the first directory that has it
      }
    }
  }

  // Whether a daemon's socket or directory at host path `host` (its last component not followed) can
  // be mounted into every GPU container; a warning says why not. Owned by root means owned by root or
  // by whoever runs discovery (a user generating a spec for their own rootless containers).
  bool ipc_trusted(const IpcRow& row, const std::string& host, const struct stat& st) {
    const auto is_root = [](uid_t uid) { return uid == 0 || uid == ::geteuid(); };
    const auto shared = [](const struct stat& s) { return (s.st_mode & (S_IWGRP | S_IWOTH)) != 0; };
    std::string problem;
    if (S_ISLNK(st.st_mode)) {
      problem = "a symbolic link to " + read_link(host).value_or("?") + ", not the daemon's own " +
                (row.directory ? "directory" : "socket");
    } else if (row.directory ? !S_ISDIR(st.st_mode) : !S_ISSOCK(st.st_mode)) {
      problem = std::string("not a ") + (row.directory ? "directory" : "socket");
    } else if (row.directory && !is_root(st.st_uid)) {
      problem = "owned by uid " + std::to_string(st.st_uid) + ", not root";
    } else if (row.directory && shared(st)) {
      problem = "writable by group or others (mode " + std::to_string((st.st_mode >> 6) & 7) +
                std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) + ")";
    } else if (!row.directory && !is_root(st.st_uid)) {
      // nvidia-persistenced --user (NVIDIA's and the distributions' default) makes its socket as that
      // user, in the runtime directory root made and handed to it: trusted when only that user could
      // have put it there (its own directory, in a directory only root can write).
      const std::string dir(dirname_of(host));
      const auto parent = examine(dir, false);
      const auto grandparent = examine(std::string(dirname_of(dir)), false);
      if (!parent || !grandparent || parent->st_uid != st.st_uid || shared(*parent) ||
          !is_root(grandparent->st_uid) || shared(*grandparent)) {
        problem = "owned by uid " + std::to_string(st.st_uid) +
                  ", neither root nor a service user in its own directory";
      }
    }
    if (problem.empty()) {
      return true;
    }
    m_warnings.push_back(host + ": " + problem + "; not mounted");
    return false;
  }

  void collect_ipc() {
    for (const auto& row : k_ipc) {
      std::vector<std::string> candidates{std::string(row.path)};
      if (row.path.starts_with("/run/")) {
        candidates.push_back("/var" + std::string(row.path));
      }
      for (const auto& path : candidates) {
        // The parent is resolved in the root; the socket or directory itself must not be a link.
        const auto parent = locate_dir(dirname_of(path));
        if (!parent) {
          continue;
        }
        const std::string host = (*parent == "/" ? "" : *parent) + "/" + std::string(basename_of(path));
        struct stat st {};
        if (::lstat(host.c_str(), &st) != 0) {
          if (errno != ENOENT) {
            m_warnings.push_back(host + ": " + std::strerror(errno) + "; not mounted");
          }
          continue;
        }
        if (ipc_trusted(row, host, st)) {
          add(FileKind::ipc, host, path);
        }
        break;  // the first one that exists is the daemon's, whether it is usable or not
      }
    }
  }

  void collect_configs() {
    for (const auto& row : k_configs) {
      if (row.arch && row.arch != m_in.arch) {
        continue;  // another architecture's file: its driver is not this one
      }
      for (const auto dir : k_config_dirs) {
        const auto host = locate(std::string(dir) + "/" + std::string(row.relative));
        const auto st = host ? examine(*host) : std::nullopt;
        if (st && S_ISREG(st->st_mode)) {
          add(FileKind::config, *host, std::string(row.container));
          break;
        }
      }
    }
  }

  const DriverFilesInput& m_in;
  RootResolver m_resolver;  // shared by every lookup of this pass
  std::string m_root;       // the driver root as messages show it
  std::string m_suffix;
  std::vector<std::string>& m_warnings;
  DriverFiles m_out;
  std::vector<std::string> m_host_library_dirs64;       // every 64-bit library directory searched
  std::vector<std::string> m_searched_library_dirs;     // every library directory searched, both kinds
  std::vector<std::string> m_container_library_dirs64;  // those that held driver libraries
  std::set<std::string> m_reported_links;               // links a warning has named
  size_t m_libraries64 = 0;
  size_t m_dirs_searched = 0;
};

}  // namespace

FileNeed file_need(std::string_view container_path) {
  const std::string_view dir = dirname_of(container_path);
  const std::string_view name = basename_of(container_path);
  FileNeed need;
  const auto with = [&need](Capability c) {
    need.kind = FileNeed::Kind::capability;
    need.capability = c;
    return need;
  };
  if (is_firmware(container_path)) {
    need.kind = FileNeed::Kind::always;
    return need;
  }
  if (const auto* row = ipc_row(container_path)) {
    return with(row->capability);
  }
  for (const auto& row : k_configs) {
    if (container_path == row.container) {
      return with(row.capability);
    }
  }
  if (const auto cap = binary_capability(name);
      cap && std::ranges::any_of(k_binary_dirs, [&](auto d) { return d == dir; })) {
    return with(*cap);
  }
  if (const auto cap = library_capability(name)) {
    need.is_32bit = is_library32_dir(dir);
    return with(*cap);
  }
  return need;
}

FileNeed recorded_need(const DriverFile& file) {
  FileNeed need;
  if (file.kind == FileKind::firmware) {
    need.kind = FileNeed::Kind::always;
  } else if (file.capability) {
    need.kind = FileNeed::Kind::capability;
    need.capability = *file.capability;
    need.is_32bit = file.kind == FileKind::library32;
  }
  return need;
}

bool is_ipc_directory(std::string_view container_path) {
  const auto* row = ipc_row(container_path);
  return row != nullptr && row->directory;
}

Result<DriverFiles> discover_driver_files(const DriverFilesInput& input, std::vector<std::string>& warnings) {
  return Collector(input, warnings).run();
}

Result<LibraryVersion> find_library_version(const DriverFilesInput& input,
                                            std::vector<std::string>& warnings) {
  return Collector(input, warnings).find_version();
}

}  // namespace gpuctk::discover
