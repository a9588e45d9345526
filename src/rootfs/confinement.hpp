#pragma once
// What a process does to itself last before it executes a program on a container root (the sandbox
// child, rootfs/sandbox.hpp): sets no_new_privs, drops capabilities (bounding, ambient, inheritable,
// permitted, effective) and loads a seccomp allow-list of the plain file and memory system calls a static
// glibc program such as ldconfig needs; mount, ptrace, bpf, keyctl, kexec, module loading, sockets,
// clone/unshare/setns, chroot, mknod and everything else then fail with EPERM. Made (libseccomp) before the
// process forks, applied with plain system calls: what runs between clone and exec allocates nothing.
// Knows nothing of GPUs.

#include <linux/filter.h>
#include <sys/capability.h>

#include <cstdint>
#include <span>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::rootfs {

struct Confinement {
  std::vector<sock_filter> filter;  // the allow-list, as the BPF program libseccomp makes of it
  uint64_t keep = 0;                // the capabilities kept, as a bit mask
};

// The confinement that keeps the capabilities `keep`. Errors: "seccomp: ...".
Result<Confinement> make_confinement(std::span<const cap_value_t> keep);

// Applies `confinement` to the calling process, irreversibly. Returns nullptr, or the step that failed
// ("load the seccomp filter") with errno set. Async-signal-safe.
const char* apply_confinement(const Confinement& confinement);

// make_confinement then apply_confinement, in the calling process (tests, in a forked child).
Result<void> restrict_self(std::span<const cap_value_t> keep);

}  // namespace gpuctk::rootfs
