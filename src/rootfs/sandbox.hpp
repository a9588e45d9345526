#pragma once
// Runs a trusted host program (ldconfig) on an untrusted container root, confined:
//   - a child in new mount, PID, IPC, UTS and network namespaces; mount propagation made private first,
//     so nothing it mounts reaches the host or the container;
//   - the container root bind-mounted onto itself, a fresh procfs of the new PID namespace over its
//     /proc (so /proc/<pid>/root links of the container's or the host's processes do not exist in the
//     sandbox), then pivot_root into it and the old root detached: every path the program touches,
//     every symlink it follows, resolves inside the container root;
//   - no_new_privs, every capability dropped except `keep` (libcap), from the bounding set too;
//   - a seccomp allow-list of plain file and memory system calls (libseccomp): mount, ptrace, bpf,
//     keyctl, kexec, module loading, sockets, namespaces and everything else fail with EPERM;
//   - the program is executed from an fd opened on the host before any of this (a sealed memfd), with an
//     empty environment: nothing of the image, not even its dynamic loader, is ever executed.
// Knows nothing of GPUs.

#include <sys/capability.h>

#include <span>
#include <string>
#include <vector>

#include "rootfs/in_root.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::rootfs {

// The capabilities ldconfig keeps: it runs as root over files owned by the image's users, creates
// SONAME links in their directories and replaces /etc/ld.so.cache.
inline constexpr cap_value_t k_ldconfig_caps[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};

// In the calling process: sets no_new_privs, drops every capability but `keep` (effective, permitted,
// inheritable, ambient and bounding) and loads the seccomp allow-list. Irreversible; used by the
// sandbox child just before exec, and by tests in a forked child.
Result<void> restrict_self(std::span<const cap_value_t> keep);

// A copy of the host program `host_path` in a sealed, close-on-exec memfd, after checking that it is a
// statically linked ELF executable (a dynamically linked one would load the container's ld.so once
// inside the root). Errors: "host program /bin/true: dynamically linked; only a statically linked program
// can run inside a container root without loading the image's dynamic loader".
Result<UniqueFd> seal_host_program(const std::string& host_path);

// Runs `program` (from seal_host_program) with `argv` in the sandbox described above, on `root`, and
// waits for it. Success is exit status 0. A failure names the program, how it ended and the first
// line of what it wrote on stderr, escaped: "ldconfig exited with status 1: \"ldconfig: Can't create ...\"".
Result<void> run_sandboxed(const Root& root, const UniqueFd& program, const std::vector<std::string>& argv);

}  // namespace gpuctk::rootfs
