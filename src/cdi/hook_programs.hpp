#pragma once
// Whether the programs a spec's hooks run are there on this host. A spec names its hooks' program by
// absolute path; the runtime runs it at every container start, so a program that went away (a build tree
// deleted, a copy in /tmp cleaned up) fails every container given one of the spec's devices, while the
// spec file itself stays valid. These checks need the host, not the file: `cdi validate` and `info` warn
// with them, `cdi generate` warns before writing such a path.

#include <string>
#include <vector>

#include "cdi/spec.hpp"

namespace gpuctk::cdi {

// One line per program of `spec`'s hooks (spec-wide and per device, each path once, in the order first
// met) that is not an executable file here:
//   hook program /opt/gpuctk/gpuctk does not exist: every container given a device of this spec fails
//   hook program /etc/cdi is not an executable file: every container given a device of this spec fails
std::vector<std::string> missing_hook_programs(const Spec& spec);

// Why `path` is a poor program for gpuctk's hooks in a spec, one line each (none: fine):
//   "<path> does not exist" / "<path> is not an executable file" (and nothing else then),
//   "<path> is not gpuctk" (an executable that is neither this process's binary nor has gpuctk's error
//     line "gpuctk: error: " in it: another program would be run as `gpuctk hook create-symlinks …`),
//   "<path> lies under a temporary directory (/tmp)" (/tmp, /var/tmp, /dev/shm or $TMPDIR),
//   "<path> lies in a build tree (/src/build/CMakeCache.txt)" (a directory above it holds a
//     CMakeCache.txt).
std::vector<std::string> hook_path_problems(const std::string& path);

}  // namespace gpuctk::cdi
