#pragma once
// Work done in a child process placed in a created container's cgroups, so that the container's device
// cgroup applies to what it opens: under `hook prestart` gpuctk's own createContainer hooks work on the
// image's files as host root, and an image's device node that the container may not open stays closed to
// them too (defence in depth below rootfs/in_root's rule of never opening what is not a regular file).

#include <functional>

#include "rootfs/sandbox.hpp"
#include "util/error.hpp"

namespace gpuctk::rootfs {

// Runs `body` in a child cloned into `cgroup`: its v2 directory with CLONE_INTO_CGROUP, and its pid written
// to the v1 devices cgroup.procs before `body` starts; the child shares this process's namespaces (a
// mount namespace entered before is the child's too). The child's error comes back as its message,
// unchanged. It is killed after k_cgroup_child_deadline (what `body` runs has shorter deadlines of its
// own). Errors besides `body`'s: "start a child in cgroup /sys/fs/cgroup/x: <errno>", "move a child into
// cgroup /sys/fs/cgroup/devices/x: <errno>", "the child in the container's cgroups ended with status N".
Result<void> run_in_cgroup(const SandboxCgroup& cgroup, const std::function<Result<void>()>& body);

}  // namespace gpuctk::rootfs
