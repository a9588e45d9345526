#pragma once
// The sandbox child of run_sandboxed (rootfs/sandbox.hpp), from its clone to the exec of the program:
// what it is given, made by the caller before the clone, and what it does with it. Between clone and exec
// it only makes system calls: the caller may have other threads, one of which may hold the allocator's
// lock. Internal to rootfs/sandbox.cpp. Knows nothing of GPUs.

#include "rootfs/confinement.hpp"

namespace gpuctk::rootfs {

struct ChildPlan {
  int tree;                        // the copy of the root's mounts (open_tree), read-only, private, its top
                                   // mount idmapped to the sandbox (where the filesystem allows it)
  const char* const* procfs;       // procfs mount points in the root ("proc"), nullptr-terminated
  int scratch;                     // the scratch tmpfs (fsmount), or -1
  const char* scratch_path;        // where it goes: its path in the root without the leading "/"
  int output;                      // write end: stdout and stderr
  int input;                       // read end of a pipe nobody writes: stdin
  int ready;                       // write end: a byte once the user namespace exists
  int go;                          // read end: a byte once its identity maps are written
  int program;                     // the sealed program
  char* const* argv;               // nullptr-terminated
  const Confinement* confinement;  // nothing kept
};

// In the child, just after the clone (new mount, PID, IPC, UTS and network namespaces): takes `plan`'s
// standard streams, default signal handling; leaves a chroot for its mount namespace's root; attaches
// the copy of the root there and pivots into it, detaching the caller's mounts; covers each procfs with
// an empty read-only tmpfs; attaches the scratch tmpfs; enters a new user namespace, tells the caller
// (`ready`), waits for its identity maps (`go`) and becomes root of it; marks every descriptor above 2
// close-on-exec; applies the confinement; executes the program from its fd with an empty environment.
// Never returns: a failed step writes "sandbox: <step>: <errno text>" on stderr and exits 126.
[[noreturn]] void child_main(const ChildPlan& plan);

}  // namespace gpuctk::rootfs
