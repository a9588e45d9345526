#pragma once
// The decisions of the `enable-cuda-compat` hook, without I/O.
//
// A CUDA image may ship forward-compatibility driver libraries (in /usr/local/cuda/compat by default:
// `libcuda.so.575.57.08` and friends; a Jetson Orin image in /usr/local/cuda/compat_orin, as
// `libcuda.so.1.1`). They let a newer CUDA run on an older host driver, but only on the host drivers they
// were made for and only when they are newer than the host driver: an older or foreign libcuda first in
// the linker path breaks the container. The hook decides as NVIDIA's enable-cuda-compat hook does, from
// the compat library's version (its file name), the ELF note the library carries
// (steps/cuda_compat_note.hpp), the host driver version and the CUDA version the host driver supports.
// Reading the folder and the file is the caller's job; these functions only look at names and versions.
//
// Rule: a compat decision never stops a container. A note that cannot be read makes the hook warn once
// and decide as without a note; an unknown version makes it decide without that version.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "steps/cuda_compat_note.hpp"

namespace gpuctk::steps {

// What the hook knows of the host, from its flags; "" when a flag is not given.
struct CudaCompatHost {
  std::string driver_version;  // --host-driver-version: "570.211.01"
  std::string cuda_version;    // --host-cuda-version: the CUDA version the host driver supports, "12.8"
};

// The compat libraries among the names of the regular files of the compat folder, sorted: the names
// matching the shell pattern `libcuda.so.*.*` (what NVIDIA's hook looks for: "libcuda.so.575.57.08",
// "libcuda.so.1.1", also "libcuda.so.550.x"). The hook uses the folder only when exactly one matches: two
// libraries mean a broken or hand-made image, and picking one would be a guess.
std::vector<std::string> compat_libraries(const std::vector<std::string>& regular_file_names);

// The compat version a library's name gives: what follows "libcuda.so." ("575.57.08", "1.1").
std::string_view compat_library_version(std::string_view library_name);

// Whether the compat folder goes first in the container's linker path, given the compat library's
// version, the note (nullopt when the library has none or it cannot be read) and the host's versions.
// Versions are read as NVIDIA reads them (Masterminds' semver, coercing): an optional "v", one to three
// numbers (each below 2^64, leading zeros allowed: "575.57.08" is 575.57.8, "12.9" is 12.9.0), then an
// optional "-prerelease" and "+metadata"; at most 256 bytes. Anything else is an unknown version.
// They compare by major, minor and patch, then a prerelease is older than none. With a note:
//  - compat and host driver versions both known: the host driver major must be one of
//    note->driver_majors AND the compat version newer than the host driver version;
//  - else, with a known host CUDA version: the note's CUDA version must be newer than it;
//  - else false.
// Without a note:
//  - host.cuda_version given (even if unknown): false (only a note can say which CUDA it brings);
//  - compat and host driver versions both known: the compat major must be greater than the host
//    driver's;
//  - else false.
bool use_cuda_compat(std::string_view compat_version, const std::optional<CudaCompatNote>& note,
                     const CudaCompatHost& host);

}  // namespace gpuctk::steps
