#pragma once
// The driver's files on a host: libraries (64- and 32-bit), binaries, X.Org modules, GSP firmware, IPC
// sockets and configuration files, each with its host path (driver root included) and container path.

#include <string>
#include <string_view>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::discover {

// A library the dynamic linker cache of the driver root knows (key = SONAME, value = path in the root).
struct CachedLibrary {
  std::string soname;
  std::string path;
  bool is_32bit = false;
};

struct DriverFilesInput {
  std::string driver_root = "/";
  std::string driver_version;  // "550.54.15": driver libraries are the files "*.so.<version>"
  std::vector<CachedLibrary> cache;  // from <driver root>/etc/ld.so.cache; may be empty
  // Extra directories (inside the driver root) searched for driver libraries before the built-in ones.
  std::vector<std::string> library_search_paths;
  // The kernel's custom firmware directory (/sys/module/firmware_class/parameters/path), if set.
  std::string firmware_class_path;
};

struct DriverFiles {
  std::vector<DriverFile> files;            // sorted by container path, no duplicates
  std::vector<std::string> library_dirs;    // container paths of the 64- and 32-bit library directories
  std::vector<Symlink> links;               // links next to the libraries (SONAME, dev, GLX indirect)
};

// Which driver capabilities a file mounted at `container_path` (as a generated spec mounts it) serves,
// so that a container asking for NVIDIA_DRIVER_CAPABILITIES=utility gets only what it needs.
struct FileNeed {
  enum class Kind {
    always,      // firmware: every GPU container needs it
    capability,  // needs `capability` (and compat32 as well when `is_32bit`)
    unknown,     // a file the tables do not know: mounted only for "all"
  };
  Kind kind = Kind::unknown;
  Capability capability = Capability::utility;
  bool is_32bit = false;
};
FileNeed file_need(std::string_view container_path);

// Finds every driver file. Nothing found at all for the 64-bit libraries is an error (no driver under the
// root); every other missing piece is a warning.
Result<DriverFiles> discover_driver_files(const DriverFilesInput& input, std::vector<std::string>& warnings);

}  // namespace gpuctk::discover
