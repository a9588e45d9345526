#pragma once
// The driver's files on a host: libraries (64- and 32-bit), binaries, X.Org modules, GSP firmware, IPC
// sockets and configuration files, each with its host path (driver root included) and container path.
//
// Every file is found by resolving its path inside the driver root (host_fs.hpp's RootResolver, links
// followed as if the root were "/"), and the host path recorded is the resolved one: a link in a driver
// container's root never makes a spec mount a file of the host. A path whose links lead out of the root,
// dangle or loop is skipped with a warning naming the link and its target.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/inventory.hpp"
#include "ldcache/cache_file.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

// A library the dynamic linker cache of the driver root knows (key = SONAME, value = path in the root).
struct CachedLibrary {
  std::string soname;
  std::string path;
  bool is_32bit = false;
  uint32_t flags = 0;      // the entry's LibType | Arch, as the cache has it
  uint32_t osversion = 0;  // the entry's minimum kernel version, as the cache has it
};

struct DriverFilesInput {
  std::string driver_root = "/";
  std::string driver_version;        // "550.54.15": driver libraries are the files "*.so.<version>"
  std::vector<CachedLibrary> cache;  // from <driver root>/etc/ld.so.cache; may be empty
  // Extra directories (inside the driver root) searched for driver libraries before the built-in ones.
  std::vector<std::string> library_search_paths;
  // The kernel's custom firmware directory (/sys/module/firmware_class/parameters/path), if set.
  std::string firmware_class_path;
  // The architecture of the driver whose files are looked for: only its own arch-named files (RPM's
  // vulkan/icd.d/nvidia_icd.<arch>.json) are mounted. This build's own by default.
  std::optional<ldcache::Arch> arch = ldcache::native_arch();
};

struct DriverFiles {
  std::vector<DriverFile> files;  // sorted by container path, no duplicates
  // Container paths of every directory holding a mounted library (64- and 32-bit, vdpau/ included):
  // the update-ldcache hook's folders.
  std::vector<std::string> library_dirs;
  // Container paths of the 64-bit directories that held driver libraries (not their gbm/ or vdpau/).
  std::vector<std::string> driver_library_dirs;
  std::vector<Symlink> links;      // links next to the libraries (SONAME, dev, GLX indirect, gbm)
  std::vector<std::string> notes;  // optional components the host lacks (IMEX): not warnings
};

// Which driver capabilities a file mounted at `container_path` (as a generated spec mounts it) serves,
// so that a container asking for NVIDIA_DRIVER_CAPABILITIES=utility gets only what it needs.
//
// This is THE classification of driver files: discovery records what it says for every file it finds
// (DriverFile::capability, FileKind::firmware = always, FileKind::library32 = is_32bit) and the hook's
// capability filter asks it about the container paths of a spec's mounts, so the two cannot disagree.
// It needs nothing but the container path: firmware is any "nvidia/<version>/gsp*.bin" (wherever
// firmware_class.path puts it), a library is 32-bit when its directory says so (i386-linux-gnu,
// lib32, RHEL's /usr/lib; see k_library32_markers).
struct FileNeed {
  enum class Kind {
    always,      // firmware: every GPU container needs it
    capability,  // needs `capability` (and compat32 as well when `is_32bit`)
    unknown,     // a file the tables do not know: mounted only for "all"
  };
  Kind kind = Kind::unknown;
  Capability capability = Capability::utility;
  bool is_32bit = false;
  bool operator==(const FileNeed&) const = default;
};
FileNeed file_need(std::string_view container_path);

// The need discovery recorded for `file` (what file_need says for its container path, by construction).
FileNeed recorded_need(const DriverFile& file);

// Whether the IPC file at `container_path` is a directory (the MPS pipe directory) rather than a
// daemon's socket: directories are mounted writable, sockets read-only.
bool is_ipc_directory(std::string_view container_path);

// The driver version as the library search sees it, for a host where neither NVML nor /proc says: the
// suffix of libcuda.so.<version>, else of libnvidia-ml.so.<version>. The ld.so.cache's libcuda.so.1 and
// libnvidia-ml.so.1 are followed first; then the directories discover_driver_files searches for 64-bit
// libraries (--library-search-path, the built-in ones, and the directory of a cache entry that is a
// regular file) are listed. A directory with two versions of one library is an error naming them.
// input.driver_version is not used.
struct LibraryVersion {
  std::string version;                // empty: not found
  std::string library;                // the host path it was read from
  std::vector<std::string> searched;  // when not found: the directories looked in, in order
};
Result<LibraryVersion> find_library_version(const DriverFilesInput& input,
                                            std::vector<std::string>& warnings);

// Finds every driver file. Nothing found at all for the 64-bit libraries is an error (no driver under the
// root); every other missing piece is a warning.
Result<DriverFiles> discover_driver_files(const DriverFilesInput& input, std::vector<std::string>& warnings);

}  // namespace gpuctk::discover
