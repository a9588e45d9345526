#pragma once
// Which low-level runtime (runc, crun) the runtime shim execs.
//
// The shim runs with the bundle as its working directory (containerd's shim starts the runtime there),
// and the bundle is a directory the container's owner may be able to write. So the lookup never resolves
// anything against the working directory: in PATH an empty element (a leading, trailing or doubled ':',
// which a shell reads as ".") and a relative element ("bin", "./bin") are skipped, and a configured
// runtime with a '/' must be an absolute path.

#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::oci {

// The search path when PATH is unset or empty (what a login shell of root gets on Debian).
inline constexpr std::string_view k_default_search_path =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The directories of the PATH value `path_env` that are searched, in order: the absolute ones.
std::vector<std::string_view> runtime_search_dirs(std::string_view path_env);

// The first of `runtimes` (the config's list, in order) that is an executable file and not `self` (the
// real path of the running gpuctk: a PATH entry named runc that is gpuctk would loop). An absolute name is
// taken as it is, a bare name is looked up in runtime_search_dirs(`path_env`, or k_default_search_path
// when it is empty), a relative name with a '/' is skipped. The result is an absolute path. Error:
//   no low-level runtime found (tried runc, crun on PATH /usr/bin:/bin)
Result<std::string> find_runtime(const std::vector<std::string>& runtimes, std::string_view path_env,
                                 const std::string& self);

}  // namespace gpuctk::oci
