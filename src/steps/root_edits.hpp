#pragma once
// The in-container hooks that generated specs reference, run by the engine as `createContainer` hooks
// (in the container's mount namespace, before pivot_root: the container root is visible at its host
// path, and so is the host). What to do is decided here; how to do it safely inside the root is
// rootfs/. Every path inside the container root is attacker-controlled (see rootfs/in_root.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cdi/hook_args.hpp"
#include "config/config.hpp"
#include "config/log.hpp"
#include "ldcache/paths.hpp"
#include "rootfs/in_root.hpp"
#include "steps/cuda_compat.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::steps {

// Bounds on what reaches a hook (the state comes from the runtime, config.json from the bundle).
inline constexpr size_t k_max_state_size = 1 << 20;
using cdi::k_max_hook_args;

// The container root of the OCI state `state_json`: crun's non-standard `root` when present, else
// `root.path` of <bundle>/config.json (read by oci::read_config: O_NOFOLLOW, a regular file, bounded), made
// absolute against the bundle. Errors start with "OCI state: ", or name the config file when it cannot be
// read or parsed, or are oci::rootfs_path's ("config.json: root.path is missing").
Result<std::string> container_root_from_state(std::string_view state_json);

// One `--link TARGET::LINK` of create-symlinks.
using Link = cdi::HookLink;

// Splits "TARGET::LINK" values (cdi::split_link), at most k_max_hook_args of them.
Result<std::vector<Link>> split_links(const std::vector<std::string>& values);

// Checks links for create_symlinks: LINK absolute without "." or ".." (rootfs::split_container_path).
// Duplicates are dropped; the same LINK with two targets is an error.
Result<std::vector<Link>> check_links(const std::vector<Link>& links);

// split_links, then check_links.
Result<std::vector<Link>> parse_links(const std::vector<std::string>& values);

// Creates every link in the root (rootfs::create_symlink); returns how many were created or replaced.
Result<size_t> create_symlinks(const rootfs::Root& root, const std::vector<Link>& links);

// The program update-ldcache runs, from `--ldconfig-path`: always the HOST's ldconfig, as NVIDIA's
// toolkit reads the option ("the path to ldconfig on the host"; nvidia-ctk writes `--ldconfig-path
// /sbin/ldconfig` into its specs), so "/sbin/ldconfig" and "@/sbin/ldconfig" (the default; a leading "@"
// is dropped, as NVIDIA's toolkit drops it) are the same program. "/sbin/ldconfig.real" is preferred
// beside "/sbin/ldconfig" when it exists (Ubuntu's ldconfig is a script around it). An image's ldconfig
// is never run. Returns the program sealed in a memfd (rootfs::seal_host_program), opened where host
// paths are the host's (hook prestart: before it enters the container's namespace). Errors:
// "--ldconfig-path \"sbin/ldconfig\": expected an absolute host path", seal_host_program's.
Result<UniqueFd> open_host_ldconfig(std::string_view ldconfig_path);

// enable-cuda-compat: when the image's compat folder `compat_dir` (a container path: absolute, no "." or
// "..", resolved inside the root) holds exactly one `libcuda.so.*.*` and use_cuda_compat
// (steps/cuda_compat.hpp) accepts it for `host`, writes /etc/ld.so.conf.d/00-gpuctk-compat.conf (sorted
// before update-ldcache's drop-in) naming the folder. Returns whether it did. Neither host version, no
// folder or no library: nothing to do. Several libraries: one warning in `log`, nothing done. A library
// whose note cannot be read (not ELF, truncated, not JSON, values of the wrong type, over 512 MiB, or
// the file cannot be opened or mapped): one warning, then the rule for a library without a note. Errors
// only for a `compat_dir` that is not a container path and for a drop-in that cannot be written.
using ldcache::k_cuda_compat_dropin;  // where the drop-in goes
inline constexpr const char* k_cuda_compat_dir = "/usr/local/cuda/compat";
Result<bool> enable_cuda_compat(const rootfs::Root& root, const CudaCompatHost& host,
                                std::string_view compat_dir, const config::Log& log);

// The text of /proc/driver/nvidia/params with `ModifyDeviceFiles: 0`, or nullopt when it already says 0
// or does not say (nothing to hide).
std::optional<std::string> params_without_device_modification(std::string_view params);

// disable-device-node-modification: when the host's `host_params` (normally /proc/driver/nvidia/params)
// lets the driver create device nodes, mounts a read-only copy that does not over the container's
// /proc/driver/nvidia/params. Returns whether it did. No host file (no driver) or no file in the
// container: nothing to do.
Result<bool> disable_device_node_modification(const rootfs::Root& root, const std::string& host_params);

// Its two halves. The host's: the text to show the container (params_without_device_modification of
// `host_params`), or nullopt when there is nothing to hide (no host file, or it already says 0); read
// where host paths are the host's (hook prestart: before it enters the container's namespace). The
// container's: mounts `params` over the container's file; false when the container has none.
Result<std::optional<std::string>> read_hidden_params(const std::string& host_params);
Result<bool> mount_hidden_params(const rootfs::Root& root, const std::string& params);

// chmod: sets `mode` on each path inside the root (never following a symlink as the last component).
// EPERM is ignored (a /dev bind-mounted from the host). Returns how many changed.
Result<size_t> chmod_paths(const rootfs::Root& root, unsigned mode, const std::vector<std::string>& paths);

// update-application-profile (NVIDIA's v1.20 hook): the GPUs the container was given are the minors of the
// character devices /dev/nvidia<N> of its /dev; the driver's EGL and Vulkan see only those when its
// application profile sets EGLVisibleDGPUDevices to their mask (bit N for minor N). Written as
// k_application_profile (its folder made 0555, the file 0444, replaced atomically, as write_file does);
// nothing is written when no such node is there (no /dev, or none with a minor under 64: each such minor
// is a warning in `log`, as NVIDIA's). The container's /dev is the image's where the runtime mounts none:
// it is read through the root (a link followed inside it), at most k_max_dev_entries entries, each only
// looked at (fstatat, never opened). Returns the mask written, or nullopt.
inline constexpr std::string_view k_application_profile =
    "/etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf";
inline constexpr size_t k_max_dev_entries = 65536;
Result<std::optional<uint64_t>> update_application_profile(const rootfs::Root& root, const config::Log& log);
// The profile's text for `mask`, byte for byte as NVIDIA's hook writes it.
std::string application_profile_text(uint64_t mask);

}  // namespace gpuctk::steps
