#pragma once
// Giving a created container's device cgroup access to more device nodes, from the host (an OCI prestart
// hook, which runs in the runtime's namespaces). The kernel checks an open or mknod of a device node in
// two places, and both must allow it: cgroup v1's devices controller (devices.allow) and the
// BPF_CGROUP_DEVICE programs of cgroup v2 (see device_filter.hpp). A hybrid host has both.
//
// Needs root (CAP_SYS_ADMIN for the v1 files and for bpf()). Linux >= 4.15 for cgroup v2 device programs.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "cgroup/device_filter.hpp"
#include "util/error.hpp"
#include "util/process.hpp"

namespace gpuctk::cgroup {

// (DeviceRule, one device a container must be able to use, is declared in cgroup/device_filter.hpp.)

// Where a process's device access is decided, as host paths; "" when that hierarchy does not apply.
struct DeviceCgroups {
  std::string v1_dir;  // the devices-controller cgroup directory (…/devices/<path>), when a v1 devices
                       // hierarchy is mounted and the process is in one
  std::string v2_dir;  // the unified (cgroup2) directory of the process, when cgroup2 is mounted
};

// The most bytes read of /proc/<pid>/cgroup, and its longest line; mountinfo has its own bounds
// (util/mountinfo.hpp: a host with many containers has thousands of mounts).
inline constexpr size_t k_max_proc_cgroup_size = size_t{1} << 20;
inline constexpr size_t k_max_line_size = size_t{64} << 10;

// Pure: from the text of /proc/<pid>/cgroup and of /proc/self/mountinfo (the caller's, host view).
//   v1: the line whose controller list contains "devices", and a mount of fstype "cgroup" whose super
//       options contain "devices";
//   v2: the "0::" line, and the first "cgroup2" mount.
// The directory is the mount point + the cgroup path with the mount's root stripped. Of several mounts
// of the devices hierarchy, the first whose root holds the cgroup path counts (they all show the same
// directories). Octal escapes of mountinfo (\040) are decoded.
// Errors (prefixed "/proc/<pid>/cgroup" or "/proc/self/mountinfo"): a malformed line, a line longer than
// its bound (k_max_line_size, k_max_mountinfo_line), text over its bound, a cgroup path that is not absolute
// or has "." or ".." components (a process in another cgroup namespace), a devices line with no devices mount
// or with a path outside every such mount's root, the "0::" path outside the cgroup2 mount's root, and a
// cgroup list with neither a devices line nor a "0::" line. No cgroup2 mount is not an error: v2_dir is "".
// A process in the root cgroup of a hierarchy ("/") gets "" for it: the root is the whole host's, never a
// container's own (v1 root allows everything; a v2 program there would filter every process).
Result<DeviceCgroups> parse_device_cgroups(std::string_view proc_cgroup, std::string_view mountinfo);

// The same from <proc_root>/<pid>/cgroup and <proc_root>/self/mountinfo (proc_root is for tests); errors
// name the file: "read /proc/42/cgroup: No such file or directory", "/proc/42/cgroup line 3: ...".
Result<DeviceCgroups> find_device_cgroups(int pid, const std::string& proc_root = "/proc");

// The same for `process`, its cgroup file read through its /proc directory (util/process.hpp): the
// cgroups found are this process's, never those of another that got the same pid since.
Result<DeviceCgroups> find_device_cgroups(const Process& process);

// What allow_devices did, for the caller's log.
struct AllowReport {
  size_t v1_rules = 0;              // lines written to devices.allow
  size_t v2_programs_replaced = 0;  // BPF_CGROUP_DEVICE programs of v2_dir replaced by widened ones
  bool v2_unrestricted = false;     // v2_dir given and no program attached there: nothing to widen
};

// Lets the processes of `cgroups` use `rules` in addition to what they may use now (every process of
// those cgroups: they are the container's own). Rules are checked first (check_rule): an invalid one
// changes nothing, and no rules touch nothing. Then, in this order:
//  1. v2 (v2_dir not ""): the BPF_CGROUP_DEVICE programs attached to v2_dir itself (BPF_PROG_QUERY,
//     flags 0: not inherited ones). None: nothing to do, v2_unrestricted (nothing at this cgroup filters
//     devices; on a hybrid host the runtime uses v1). Otherwise every program is fetched by id (a
//     program we may not fetch is an error, never skipped: it would still deny), its translated
//     instructions dumped, widened (widen_program) and the result loaded. Any failure here returns
//     with nothing changed, v1 included.
//  2. v1 (v1_dir not ""): one write() per rule of "c 1:3 rw" to <v1_dir>/devices.allow (opened O_WRONLY
//     | O_NOFOLLOW | O_CLOEXEC). The kernel takes each write as it comes: after a failed one, the rules
//     before it stay allowed.
//  3. v2: each new program is attached beside its old one (BPF_F_ALLOW_MULTI) and only then is the old
//     one detached: with several programs attached an access must pass every one, so in between the
//     old, narrower program still decides and the cgroup is never left unfiltered. A program attached
//     without BPF_F_ALLOW_MULTI (one per cgroup) is replaced by attaching the new one with the same
//     flags, which the kernel does in one step. A failure stops there: programs before it stay widened,
//     the rest as they were (a new program whose old one would not detach is detached again).
// Errors are one line naming the hierarchy, the directory and the step:
//   "cgroup v1 /sys/fs/cgroup/devices/x: write devices.allow \"c 1:3 rw\": Invalid argument",
//   "cgroup v2 /sys/fs/cgroup/x: program 42: BPF_PROG_GET_FD_BY_ID: Operation not permitted",
//   "cgroup v2 /sys/fs/cgroup/x: program 42: cannot widen it: instruction 3: tail call",
//   "cgroup v2 /sys/fs/cgroup/x: program 42: BPF_PROG_LOAD: Permission denied (verifier: <last line>)".
Result<AllowReport> allow_devices(const DeviceCgroups& cgroups, std::span<const DeviceRule> rules);

}  // namespace gpuctk::cgroup
