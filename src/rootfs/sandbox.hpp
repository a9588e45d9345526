#pragma once
// Runs a program (the host's ldconfig, or an image's when a config allows it) on an untrusted container
// root, confined so that whatever the program does, or is made to do by what it reads, stays inside
// that root and cannot change it:
//   - a child in new mount, PID, IPC, UTS and network namespaces, then in a new user namespace whose root
//     is k_sandbox_host_id outside it: on the host it is an unprivileged user, with no capability and no
//     access to root's files (a write to a host sysctl or to core_pattern is refused however it is
//     reached);
//   - its "/" is a copy of the container root's mount tree (open_tree, taken in the caller: no path is
//     looked up in the child, which also works for a caller that runs chrooted) made read-only, nosuid,
//     nodev and noexec, recursively, and private: the program can write nothing of the root, and no
//     device node of the image (a library-named link to a watchdog's node) opens; the host's mounts are
//     detached (pivot_root); the copy's top mount (the root's own filesystem, no mount below it) is
//     idmapped so that the owner of the root's top directory is the sandbox's own id: the program reads a
//     file or folder only that owner may read (a 0600 ld.so.conf.d file) as root's ldconfig would, and
//     still writes nothing; where the filesystem refuses idmapping it reads as nobody (limits.note says);
//   - an empty read-only tmpfs over every procfs in the root: no /proc/sys, no sysrq-trigger, no
//     /proc/<pid>/root links out of the root;
//   - one writable place, when the caller asks for it: a private tmpfs (Scratch) at a directory of the
//     root that the caller made, which the caller reads back after the run;
//   - no_new_privs, no capability (bounding set emptied), a seccomp allow-list of plain file and memory
//     system calls (rootfs/confinement.hpp): mount, ptrace, bpf, keyctl, kexec, module loading, sockets,
//     namespaces and everything else fail with EPERM;
//   - no descriptor of the caller but stdin (an empty pipe), stdout and stderr (a pipe to the caller),
//     and the program, which is executed from an fd opened on the host before any of this (a sealed,
//     execute-only memfd: the unprivileged program cannot read it, so the kernel makes it non-dumpable)
//     with an empty environment: nothing of the image, not even its dynamic loader, is ever executed;
//   - optionally started in given cgroups (a container's: its device rules, pids and memory limits
//     apply), and killed at a deadline (an image's FIFO can make a program block for ever).
// Needs root (or root of a user namespace that maps k_sandbox_host_id) and Linux 5.12 (mount_setattr;
// also open_tree, clone3, pidfds, close_range). Where no user namespace can be made (the sysctl
// user.max_user_namespaces is 0, a security module refuses it) the program is not run: the sandbox never
// falls back to running it as root. Knows nothing of GPUs.

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rootfs/confinement.hpp"  // restrict_self
#include "rootfs/in_root.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::rootfs {

// Who the sandboxed program is on the host: the kernel's overflow id ("nobody"), as user and group.
// Inside its own user namespace it is root, which gives it nothing outside that namespace.
inline constexpr uid_t k_sandbox_host_id = 65534;

// How long run_sandboxed lets the program run by default (ldconfig needs well under a second; an image
// that makes it block, e.g. on a FIFO, must not hang the container start).
inline constexpr std::chrono::milliseconds k_sandbox_deadline{30'000};

// The size and file count of a Scratch tmpfs: room for a linker cache of any plausible image.
inline constexpr size_t k_scratch_size = size_t{64} << 20;
inline constexpr size_t k_scratch_files = 64;

// A copy of the host program `host_path` in a sealed, close-on-exec, execute-only (mode 0111) memfd,
// after checking that it is a statically linked ELF executable (a dynamically linked one would load the
// container's ld.so once inside the root). Errors: "host program /bin/true: dynamically linked; only a
// statically linked program can run inside a container root without loading the image's dynamic loader".
Result<UniqueFd> seal_host_program(const std::string& host_path);

// The cgroups the program starts in: a container's, so that the kernel checks its device accesses, and
// counts its processes and memory, as the container's.
struct SandboxCgroup {
  // Opens them from host paths ("" for none), where those are the host's (hook prestart: before it
  // enters the container's mount namespace): `v2_dir` a cgroup2 directory, the child is cloned into it
  // (CLONE_INTO_CGROUP); `v1_dir` a cgroup v1 directory (the devices hierarchy's), the child's pid is
  // written to its cgroup.procs before it may exec. Errors name the path: "cgroup
  // /sys/fs/cgroup/x: No such file or directory".
  static Result<SandboxCgroup> open(const std::string& v2_dir, const std::string& v1_dir);

  UniqueFd v2;         // O_PATH directory, or -1
  UniqueFd v1_procs;   // <v1_dir>/cgroup.procs, O_WRONLY, or -1
  std::string v2_dir;  // for messages
  std::string v1_dir;
};

// clone3 like fork (no new stack: the child goes on from the call on a copy of this process) with
// `flags`, a pidfd in `pidfd`, and into `cgroup`'s v2 directory when it has one (CLONE_INTO_CGROUP; may be
// null). Every signal is blocked across the call: the parent's mask is back when it returns, the child's
// stays blocked, `old` holds what it was. Returns 0 in the child, the pid in the parent, -1 and errno.
long clone_into_cgroup(uint64_t flags, const SandboxCgroup* cgroup, int& pidfd, sigset_t& old);

// How the program sees the root: as the owner of its top directory (the idmapped mount), or as nobody
// (idmapping refused, or not asked for); nobody_skipping is a caller's: as nobody, and the caller found
// something the program needs that only its owner can read (ldcache/library_search.cpp).
enum class SandboxView { owner, nobody, nobody_skipping };

// Where and for how long the program runs.
struct SandboxLimits {
  std::chrono::milliseconds deadline = k_sandbox_deadline;
  std::shared_ptr<const SandboxCgroup> cgroup;  // null: the caller's cgroups
  // Told how the root is seen, with a line that says it (and why not as the owner).
  std::function<void(SandboxView, const std::string&)> note;
  // false: the root is read as nobody even where the filesystem allows idmapping (tests of that path).
  bool idmap = true;
};

// The program's one writable directory: a private tmpfs (k_scratch_size bytes, k_scratch_files files,
// mode 0700, owned by k_sandbox_host_id) that the program sees at `path()`, a directory of the root that
// the caller has made (and removes afterwards; in the root it stays empty). Files are put there before
// the run and taken back after it, through the tmpfs's own fd: never through a path of the root. Good for
// one run.
class Scratch {
 public:
  // Errors: "sandbox scratch: fsopen tmpfs: <errno>" and the like.
  static Result<Scratch> make(std::string path);

  // Writes `content` to the file `name` (mode 0644): for the program to read.
  [[nodiscard]] Result<void> put(std::string_view name, std::string_view content) const;
  // The regular file `name` the program left, at most `max_size` bytes; never following a symlink.
  // Errors name it by its path in the root: "/etc/.x/ld.so.cache: No such file or directory",
  // "/etc/.x/ld.so.cache: not a regular file", "read /etc/.x/ld.so.cache: larger than N bytes".
  [[nodiscard]] Result<std::string> take(std::string_view name, size_t max_size) const;

  [[nodiscard]] const std::string& path() const { return m_path; }
  [[nodiscard]] int fd() const { return m_fd.get(); }

 private:
  std::string m_path;  // in the container root
  UniqueFd m_fd;       // the detached tmpfs (fsmount)
};

// Runs `program` (from seal_host_program) with `argv` in the sandbox described above, on `root`, with
// `scratch` (if any) at its path, and waits for it, at most `limits.deadline`. Success is exit status 0.
// A failure names the program, how it ended and the first line of what it wrote on stdout or stderr,
// escaped:
//   ldconfig exited with status 1: "ldconfig: Can't open cache file ..."
//   ldconfig was killed after its deadline of 30 s (a FIFO or a device in the image can block it)
// and a sandbox that cannot be made says why, e.g. (status 126, the child's own line):
//   ldconfig exited with status 126: "sandbox: create its user namespace: No space left on device
//   (user.max_user_namespaces is 0 or used up; the program is never run as root instead)"
Result<void> run_sandboxed(const Root& root, const UniqueFd& program, const std::vector<std::string>& argv,
                           const SandboxLimits& limits = {}, const Scratch* scratch = nullptr);

}  // namespace gpuctk::rootfs
