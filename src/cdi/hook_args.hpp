#pragma once
// gpuctk's own hook lines, typed: `gpuctk hook container-start [options]` (the spec-wide steps) and
// `gpuctk hook create-symlinks --link TARGET::LINK ...` (a device's by-path links). This is the one place
// that writes and reads them and that holds their names and option strings: the spec builders
// (cdi/spec_builder.cpp, cdi/vendor_spec.cpp) encode with to_args(), the capability filter
// (inject/capability_filter.cpp) edits the parsed struct, the hooks (steps/root_edits.cpp) split links
// with split_link. CLI11 (cli/container_hook.cpp) still parses the same options for people typing them.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/inventory.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

// The explicit environment of every hook a generated spec holds (NVIDIA's, AMD's, Intel's): a hook must
// never inherit the container's (an image's LD_PRELOAD would run inside the privileged hook,
// CVE-2025-23266).
inline const std::vector<std::string> k_hook_env{"GPUCTK_DEBUG=false"};

// The environment every hook gpuctk runs or adds gets when its entry names none: a fixed PATH, never the
// container's (an image's LD_PRELOAD would run inside a privileged hook).
inline const std::vector<std::string> k_safe_hook_env{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};

// Bounds on what reaches a hook: values of one option, arguments of one line.
inline constexpr size_t k_max_hook_args = 8192;

// The steps of the createContainer hooks a generated spec can carry (each also a `gpuctk hook <name>`
// subcommand, NVIDIA's names; --disable-hook and --enable-hook take them). A device's by-path links are a
// create-symlinks hook of the device; the spec-wide steps are ONE hook, `gpuctk hook container-start` with
// each enabled step's options, run in one process (a hook process per step costs the runtime a fork, an
// exec and the state each time).
inline constexpr std::string_view k_hook_create_symlinks = "create-symlinks";
inline constexpr std::string_view k_hook_enable_cuda_compat = "enable-cuda-compat";
inline constexpr std::string_view k_hook_update_ldcache = "update-ldcache";
inline constexpr std::string_view k_hook_disable_device_node_modification =
    "disable-device-node-modification";
// The driver's application profile: EGL and Vulkan see only the container's GPUs (NVIDIA's v1.20 specs
// run it for every container; gpuctk's as a step of container-start).
inline constexpr std::string_view k_hook_update_application_profile = "update-application-profile";
// Mode 755 on a device's /dev/dri (and the management device's /dev/nvidia-caps): off unless
// --enable-hook chmod, as in NVIDIA's v1.20 (a workaround for old crun's nested /dev directories). A hook
// of the device, like its links.
inline constexpr std::string_view k_hook_chmod = "chmod";
inline constexpr std::string_view k_hook_container_start = "container-start";

// The options of the two lines (steps/commands.cpp's rows take the same). Names and options are string
// literals: their .data() is NUL-terminated, as the table's `const char*` fields need.
inline constexpr std::string_view k_opt_link = "--link";
inline constexpr std::string_view k_opt_host_driver_version = "--host-driver-version";
inline constexpr std::string_view k_opt_host_cuda_version = "--host-cuda-version";
inline constexpr std::string_view k_opt_cuda_compat_container_root = "--cuda-compat-container-root";
inline constexpr std::string_view k_opt_ldconfig_path = "--ldconfig-path";
inline constexpr std::string_view k_opt_folder = "--folder";
inline constexpr std::string_view k_opt_ld_cache_entry = "--ld-cache-entry";
inline constexpr std::string_view k_opt_disable_device_node_modification =
    "--disable-device-node-modification";
inline constexpr std::string_view k_opt_update_application_profile = "--update-application-profile";

// One `--link TARGET::LINK`.
struct HookLink {
  std::string target;  // the link's text, verbatim (relative targets are read against LINK's folder)
  std::string link;    // a container path
  bool operator==(const HookLink&) const = default;
};

// "TARGET::LINK".
std::string link_arg(const HookLink& link);

// Splits "TARGET::LINK": exactly one "::", both sides non-empty. Nothing else is checked (the hook checks
// LINK inside the root, rootfs::split_container_path). Error: `--link "x": expected TARGET::LINK`.
Result<HookLink> split_link(std::string_view value);

// An `--ld-cache-entry` value, FLAGS:OSVERSION:SONAME:PATH, written by ldcache::entry_arg (and parsed by
// the hook with that header's parse_entry_arg), e.g.
// "0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1".
std::string ld_cache_entry_arg(const discover::LibraryCacheEntry& entry);
// Its PATH as ldcache::parse_entry_arg reads it, or "" for a value it refuses (the merge refuses it too).
std::string ld_cache_entry_path(std::string_view value);

// `gpuctk hook container-start`: each step runs when one of its options is given (steps/commands.cpp).
struct ContainerStartArgs {
  std::vector<HookLink> links;                            // create-symlinks
  std::optional<std::string> host_driver_version;         // enable-cuda-compat
  std::optional<std::string> host_cuda_version;           // enable-cuda-compat
  std::optional<std::string> cuda_compat_container_root;  // enable-cuda-compat's folder
  std::optional<std::string> ldconfig_path;               // update-ldcache's host ldconfig
  std::vector<std::string> folders;                       // update-ldcache
  std::vector<std::string> ld_cache_entries;  // update-ldcache's merge, FLAGS:OSVERSION:SONAME:PATH
  bool disable_device_node_modification = false;
  bool update_application_profile = false;
  bool operator==(const ContainerStartArgs&) const = default;

  // No option: a line that would run nothing.
  [[nodiscard]] bool empty() const;
  // {"gpuctk", "hook", "container-start", options...}: links, then the versions, the compat folder, the
  // ldconfig path, folders, ld-cache entries and the two flags, each list in its order.
  [[nodiscard]] std::vector<std::string> to_args() const;
  // The reverse, strictly (argv[0] is not looked at): anything but "hook container-start" after it, an
  // unknown option, an option without its value, a malformed or relative LINK, more than k_max_hook_args
  // arguments are errors, e.g.
  //   hook line: unknown option "--frobnicate"
  //   hook line: "--folder" needs a value
  //   --link "a:/b": expected TARGET::LINK
  //   --link "a::b": LINK must be an absolute container path without "." or ".."
  // A value option given twice keeps the last, and "--name=VALUE" is "--name VALUE", as CLI11 takes them
  // ("--flag=VALUE" is an error).
  static Result<ContainerStartArgs> parse(std::span<const std::string> args);
};

// `gpuctk hook create-symlinks --link TARGET::LINK...`.
struct CreateSymlinksArgs {
  std::vector<HookLink> links;
  bool operator==(const CreateSymlinksArgs&) const = default;

  [[nodiscard]] std::vector<std::string> to_args() const;
  // As ContainerStartArgs::parse, for "hook create-symlinks" and --link only.
  static Result<CreateSymlinksArgs> parse(std::span<const std::string> args);
};

// Whether `args` is a `<argv0> hook <name> ...` line.
bool is_hook_line(std::span<const std::string> args, std::string_view name);

}  // namespace gpuctk::cdi
