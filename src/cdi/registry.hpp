#pragma once
// CDI spec directories: which qualified device names resolve, and to which spec file.
//
// Mirrors how CDI runtimes read their spec directories (the CDI library's pkg/cdi/cache.go):
//  - each directory is read non-recursively; only regular files (symlinks followed) named *.json or
//    *.yaml are read ("*.yml" is ignored, as runtimes ignore it), in name order;
//  - a missing directory is skipped silently; an unreadable one is an error;
//  - each file is parsed and validated (cdi/validate.hpp); an unusable file is recorded as errors and
//    skipped, the other files still load;
//  - a later directory has higher priority: its device replaces a lower one's silently;
//  - the same device in two files of one directory is a conflict: it is reported and the device is
//    removed (both files otherwise still load). Unlike the reference library, a conflict in a lower
//    directory does not hide the device when a higher directory defines it.

#include <array>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cdi/names.hpp"
#include "cdi/spec.hpp"

namespace gpuctk::cdi {

// One spec file, read, parsed and validated.
struct LoadedSpec {
  std::shared_ptr<const Spec> spec;  // null when the file cannot be used
  // Why it cannot be used, without the file name: one read error ("No such file or directory"),
  // one parse error, or one "<where>: <what>" per validation problem.
  std::vector<std::string> errors;
};

// Reads, parses (format from the extension) and validates the spec file at `path`.
LoadedSpec load_spec_file(const std::string& path);

// A device that resolves.
struct ResolvedDevice {
  QualifiedName name{};
  std::string spec_file{};             // the file it comes from
  std::shared_ptr<const Spec> spec{};  // that file's spec (its spec-wide edits apply too)
  size_t device_index = 0;             // index in spec->devices

  [[nodiscard]] const Device& device() const { return spec->devices[device_index]; }
};

struct Registry {
  // Resolvable devices by qualified name ("vendor/class=name"), sorted.
  std::map<std::string, ResolvedDevice> devices;
  // Everything that went wrong, in scan order, one complete line each:
  //   "<file>: <where>: <what>", "<file>: <parse or read error>", "<dir>: <errno text>",
  //   `conflicting device "vendor/class=name" (specs "<file>", "<file>")`.
  std::vector<std::string> errors;
};

// Scans `dirs` (lowest priority first; each normalised, "/etc/cdi/" is "/etc/cdi").
Registry scan_spec_dirs(std::span<const std::string> dirs);

}  // namespace gpuctk::cdi
