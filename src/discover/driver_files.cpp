#include "discover/driver_files.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "discover/host_fs.hpp"

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

// Libraries that are NVIDIA's but carry their own version instead of the driver's.
constexpr std::string_view k_own_version_libraries[] = {
    "libnvidia-egl-gbm.so.",       // EGL external platform for GBM
    "libnvidia-egl-wayland.so.",   // EGL external platform for Wayland
    "libnvidia-egl-wayland2.so.",  // its successor
    "libnvidia-egl-xcb.so.",       // EGL external platform for XCB
    "libnvidia-egl-xlib.so.",      // EGL external platform for Xlib
};

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
// Sockets and directories of driver daemons; /run is tried before /var/run.
constexpr IpcRow k_ipc[] = {
    {"/run/nvidia-persistenced/socket", false, Capability::utility},   // persistence daemon
    {"/run/nvidia-fabricmanager/socket", false, Capability::utility},  // NVSwitch fabric manager
    {"/tmp/nvidia-mps", true, Capability::compute},                    // default MPS pipe directory
};

struct ConfigRow {
  std::string_view relative;   // searched under /etc, /usr/local/share, /usr/share of the driver root
  std::string_view container;  // where it goes in the container, wherever the host keeps it
  Capability capability;
};
// Configuration files of the driver, mounted at their canonical container paths.
constexpr ConfigRow k_configs[] = {
    {"glvnd/egl_vendor.d/10_nvidia.json", "/usr/share/glvnd/egl_vendor.d/10_nvidia.json", Capability::graphics},
    {"egl/egl_external_platform.d/09_nvidia_wayland2.json", "/usr/share/egl/egl_external_platform.d/09_nvidia_wayland2.json", Capability::graphics},
    {"egl/egl_external_platform.d/10_nvidia_wayland.json", "/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json", Capability::graphics},
    {"egl/egl_external_platform.d/15_nvidia_gbm.json", "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json", Capability::graphics},
    {"egl/egl_external_platform.d/20_nvidia_xcb.json", "/usr/share/egl/egl_external_platform.d/20_nvidia_xcb.json", Capability::graphics},
    {"egl/egl_external_platform.d/20_nvidia_xlib.json", "/usr/share/egl/egl_external_platform.d/20_nvidia_xlib.json", Capability::graphics},
    {"nvidia/nvoptix.bin", "/usr/share/nvidia/nvoptix.bin", Capability::graphics},                  // OptiX denoiser data
    {"X11/xorg.conf.d/10-nvidia.conf", "/usr/share/X11/xorg.conf.d/10-nvidia.conf", Capability::display},
    {"X11/xorg.conf.d/nvidia-drm-outputclass.conf", "/usr/share/X11/xorg.conf.d/nvidia-drm-outputclass.conf", Capability::display},
    {"OpenCL/vendors/nvidia.icd", "/etc/OpenCL/vendors/nvidia.icd", Capability::compute},           // OpenCL ICD loader entry
    {"vulkan/icd.d/nvidia_icd.json", "/etc/vulkan/icd.d/nvidia_icd.json", Capability::graphics},    // Vulkan ICD
    {"vulkan/icd.d/nvidia_icd.x86_64.json", "/etc/vulkan/icd.d/nvidia_icd.x86_64.json", Capability::graphics},  // RPM layout
    {"vulkan/icd.d/nvidia_layers.json", "/etc/vulkan/icd.d/nvidia_layers.json", Capability::graphics},
    {"vulkan/implicit_layer.d/nvidia_layers.json", "/etc/vulkan/implicit_layer.d/nvidia_layers.json", Capability::graphics},
};
constexpr std::string_view k_config_dirs[] = {"/etc", "/usr/local/share", "/usr/share"};

std::string_view dirname_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string_view("/") : path.substr(0, slash);
}

bool is_own_version_library(std::string_view name) {
  return std::ranges::any_of(k_own_version_libraries, [&](std::string_view p) { return name.starts_with(p); });
}

class Collector {
 public:
  Collector(const DriverFilesInput& input, std::vector<std::string>& warnings)
      : m_in(input),
        m_root(input.driver_root),
        m_resolver(input.driver_root),
        m_suffix(".so." + input.driver_version),
        m_warnings(warnings) {}

  Result<DriverFiles> run() {
    if (auto r = collect_libraries(false); !r) {
      return std::unexpected(r.error());
    }
    if (m_libraries64 == 0) {
      return fail("no driver libraries (*" + m_suffix + ") under " + m_root + " (searched " +
                  std::to_string(m_dirs_searched) + " directories and the ld.so.cache)");
    }
    if (auto r = collect_libraries(true); !r) {
      return std::unexpected(r.error());
    }
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
    m_out.library_dirs.assign(m_library_dirs.begin(), m_library_dirs.end());
    return std::move(m_out);
  }

 private:
  void add(FileKind kind, const std::string& host_path, std::string container_path, std::optional<Capability> cap) {
    m_out.files.push_back({kind, host_path, std::move(container_path), cap});
  }

  // Library directories (host paths): the built-in ones plus every directory where the cache finds a
  // file of this driver version.
  std::set<std::string> library_dirs(bool is_32bit) {
    std::set<std::string> dirs;
    const auto add_dir = [&](std::string_view dir) {
      const auto resolved = m_resolver.resolve(dir);
      if (resolved && stat_path(*resolved).transform([](const struct stat& st) { return S_ISDIR(st.st_mode); })
                          .value_or(false)) {
        dirs.insert(*resolved);
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
        dirs.insert(std::string(dirname_of(*resolved)));
      }
    }
    return dirs;
  }

  Result<void> collect_libraries(bool is_32bit) {
    for (const auto& dir : library_dirs(is_32bit)) {
      ++m_dirs_searched;
      bool found_here = false;
      for (const std::string& sub : {dir, dir + "/vdpau"}) {
        auto found = collect_library_dir(sub, is_32bit);
        if (!found) {
          return std::unexpected(found.error());
        }
        found_here = found_here || *found;
      }
      if (found_here) {
        m_library_dirs.insert(strip_root(m_root, dir));
        m_host_library_dirs.push_back(dir);
      }
    }
    return {};
  }

  // Adds the driver libraries of one directory and the links beside them; true if it held any.
  Result<bool> collect_library_dir(const std::string& dir, bool is_32bit) {
    auto entries = list_dir(dir);
    if (!entries) {
      return std::unexpected(entries.error());
    }
    std::set<std::string> libraries;
    for (const auto& entry : *entries) {
      if (entry.type != DT_REG) {
        continue;
      }
      const bool ours = entry.name.ends_with(m_suffix) || is_own_version_library(entry.name);
      if (!ours || !entry.name.starts_with("lib")) {
        continue;
      }
      const std::string host = dir + "/" + entry.name;
      const auto cap = library_capability(entry.name);
      add(is_32bit ? FileKind::library32 : FileKind::library, host, strip_root(m_root, host), cap);
      libraries.insert(entry.name);
      if (!is_32bit) {
        ++m_libraries64;
      }
    }
    if (libraries.empty()) {
      return false;
    }
    // Links in the directory that lead to a driver library (possibly through another link): the SONAME
    // links (libcuda.so.1) and development links (libcuda.so) the container needs.
    std::map<std::string, std::string> links;  // link name -> verbatim target
    for (const auto& entry : *entries) {
      if (entry.type == DT_LNK) {
        if (auto target = read_link(dir + "/" + entry.name); target && target->find('/') == std::string::npos) {
          links.emplace(entry.name, *target);
        }
      }
    }
    const std::string container_dir = strip_root(m_root, dir);
    for (const auto& [name, target] : links) {
      std::string end = target;
      for (int hops = 0; hops < 8 && links.contains(end); ++hops) {
        end = links.at(end);
      }
      if (libraries.contains(end)) {
        m_out.links.push_back({target, container_dir + "/" + name});
      }
    }
    // Links applications expect even when the host lacks them. Only when it lacks them: a link name
    // gets one target (create-symlinks refuses a spec that gives it two).
    if (links.contains("libcuda.so.1") && !links.contains("libcuda.so")) {
      m_out.links.push_back({"libcuda.so.1", container_dir + "/libcuda.so"});
    }
    if (links.contains("libGLX_nvidia.so.0") && !links.contains("libGLX_indirect.so.0")) {
      m_out.links.push_back({"libGLX_nvidia.so.0", container_dir + "/libGLX_indirect.so.0"});
    }
    return true;
  }

  void collect_binaries() {
    for (const auto name : known_binaries()) {
      bool found = false;
      for (const auto dir : k_binary_dirs) {
        const std::string path = std::string(dir) + "/" + std::string(name);
        const auto host = m_resolver.resolve(path);
        if (!host) {
          continue;
        }
        const auto st = stat_path(*host);
        if (st && S_ISREG(st->st_mode) && (st->st_mode & 0111) != 0) {
          add(FileKind::binary, under_root(m_root, path), path, binary_capability(name));
          found = true;
          break;
        }
      }
      if (!found) {
        m_warnings.push_back("binary " + std::string(name) + ": not found under " + m_root);
      }
    }
  }

  void collect_xorg_modules() {
    const std::string glx = "libglxserver_nvidia.so." + m_in.driver_version;
    for (const std::string& name : {std::string("nvidia_drv.so"), glx}) {
      bool found = false;
      for (const auto pattern : k_xorg_dirs) {
        std::vector<std::string> dirs;
        if (pattern.starts_with("<lib>")) {
          for (const auto& lib : m_host_library_dirs) {
            dirs.push_back(lib + std::string(pattern.substr(5)));
          }
        } else {
          dirs.push_back(under_root(m_root, pattern));
        }
        for (const auto& dir : dirs) {
          const std::string host = dir + "/" + name;
          const auto st = lstat_path(host);
          if (!st || !S_ISREG(st->st_mode)) {
            continue;
          }
          add(FileKind::xorg_module, host, strip_root(m_root, host), Capability::display);
          if (name == glx) {
            m_out.links.push_back({glx, strip_root(m_root, dir) + "/libglxserver_nvidia.so"});
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
      dirs.push_back(std::string(dir));
    }
    bool found = false;
    for (const auto& dir : dirs) {
      const std::string fw_dir = under_root(m_root, dir + "/nvidia/" + m_in.driver_version);
      auto entries = list_dir(fw_dir);
      if (!entries) {
        m_warnings.push_back(entries.error().message);
        continue;
      }
      for (const auto& entry : *entries) {
        if (entry.name.starts_with("gsp") && entry.name.ends_with(".bin") && entry.type == DT_REG) {
          const std::string host = fw_dir + "/" + entry.name;
          add(FileKind::firmware, host, strip_root(m_root, host), std::nullopt);
          found = true;
        }
      }
      if (found) {
        break;  // the kernel loads from the first directory that has it
      }
    }
  }

  void collect_ipc() {
    for (const auto& row : k_ipc) {
      std::vector<std::string> candidates{std::string(row.path)};
      if (row.path.starts_with("/run/")) {
        candidates.push_back("/var" + std::string(row.path));
      }
      for (const auto& path : candidates) {
        const std::string host = under_root(m_root, path);
        const auto st = lstat_path(host);
        if (st && (row.directory ? S_ISDIR(st->st_mode) : S_ISSOCK(st->st_mode))) {
          add(FileKind::ipc, host, path, row.capability);
          break;
        }
      }
    }
  }

  void collect_configs() {
    for (const auto& row : k_configs) {
      for (const auto dir : k_config_dirs) {
        const std::string host = under_root(m_root, std::string(dir) + "/" + std::string(row.relative));
        const auto st = stat_path(host);
        if (st && S_ISREG(st->st_mode)) {
          add(FileKind::config, host, std::string(row.container), row.capability);
          break;
        }
      }
    }
  }

  const DriverFilesInput& m_in;
  std::string m_root;
  RootResolver m_resolver;  // shared by every lookup of this pass
  std::string m_suffix;
  std::vector<std::string>& m_warnings;
  DriverFiles m_out;
  std::set<std::string> m_library_dirs;
  std::vector<std::string> m_host_library_dirs;
  size_t m_libraries64 = 0;
  size_t m_dirs_searched = 0;
};

}  // namespace

FileNeed file_need(std::string_view container_path) {
  const auto slash = container_path.rfind('/');
  const std::string_view dir = slash == std::string_view::npos ? std::string_view() : container_path.substr(0, slash);
  const std::string_view name = container_path.substr(slash + 1);
  FileNeed need;
  const auto with = [&need](Capability c) {
    need.kind = FileNeed::Kind::capability;
    need.capability = c;
    return need;
  };
  if (container_path.starts_with("/lib/firmware/") || container_path.starts_with("/usr/lib/firmware/")) {
    need.kind = FileNeed::Kind::always;
    return need;
  }
  for (const auto& row : k_ipc) {
    if (container_path == row.path || container_path == "/var" + std::string(row.path)) {
      return with(row.capability);
    }
  }
  for (const auto& row : k_configs) {
    if (container_path == row.container) {
      return with(row.capability);
    }
  }
  if (const auto cap = binary_capability(name); cap && std::ranges::any_of(k_binary_dirs, [&](auto d) { return d == dir; })) {
    return with(*cap);
  }
  if (const auto cap = library_capability(name)) {
    std::string_view lib_dir = dir;
    if (lib_dir.ends_with("/vdpau")) {
      lib_dir.remove_suffix(6);
    }
    need.is_32bit = std::ranges::any_of(k_library32_dirs, [&](auto d) { return d == lib_dir; });
    return with(*cap);
  }
  return need;
}

Result<DriverFiles> discover_driver_files(const DriverFilesInput& input, std::vector<std::string>& warnings) {
  return Collector(input, warnings).run();
}

}  // namespace gpuctk::discover
