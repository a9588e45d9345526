#!/usr/bin/env bash
# podman 5 and crun 1.2x as distributions ship them today (Debian 13's: they need glibc 2.38, which
# Debian 12 lacks, so they run inside a Debian 13 root made by `debootstrap --variant=minbase
# --include=podman,crun,catatonit trixie`, cached). The root is entered as a container engine's host: a
# private mount namespace, a writable overlay on the cached root (which stays untouched), proc, sys and
# dev, a tmpfs over /sys/fs/cgroup/unified (crun refuses this machine's hybrid cgroups otherwise), a
# tmpfs /run, the lab and the real driver root bound in at their own paths, then pivot_root. gpuctk, built
# on Debian 12, runs there as it is (a copy in the lab; it needs only the C library). On the real-package
# host (two GPUs, GPU 1 in MIG mode) an image holding the real CUDA 11.8 runtime gets exactly the GPU it
# asked for and cudaGetDeviceCount reaches the kernel boundary through the real libcuda.so.1:
#   - `podman run --device nvidia.com/gpu=0` with gpuctk's spec in the root's /etc/cdi (CDI);
#   - a hooks.d `precreate` hook (`gpuctk hook precreate`) and NVIDIA_VISIBLE_DEVICES=1;
#   - a hooks.d `prestart` hook (`gpuctk hook prestart`) and NVIDIA_VISIBLE_DEVICES=0;
#   - both hooks and no request: nothing injected;
#   - GPU 0 through CDI for a process that is not root: the spec's additionalGids (as NVIDIA's v1.19+
#     specs have them) add the render node's group (0660, render) to the process's groups, and a process
#     that drops from root to uid 1000 keeping its groups (as an entrypoint that switches user does) opens
#     the node through that group; from the spec written with --feature-flag
#     no-additional-gids-for-device-nodes it has no such group and gets EACCES. With `--user 1000:1000`
#     podman's CDI makes the container user the node's owner (CDI gives an unowned node the process's
#     uid), so that process opens it either way.
# Afterwards no process of podman is left and the host's mounts are what they were.
#   usage: engines_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$(dirname "$0")/../engines/lib.sh"
e2e_init gpuctk fixture -- "$@"
command -v cc >/dev/null || e2e_skip "no C compiler (cc) to build the image's programs"
e2e_needs "debootstrap (scripts/deps.sh test)"
out=$(bash "$engines_dir/engines.sh" podman) || exit 1  # engines.sh said why, in its one FAIL line
trixie=$(sed -n 's/^root=//p' <<<"$out")
podman_version=$(sed -n 's/^podman_version=//p' <<<"$out")
crun_version=$(sed -n 's/^crun_version=//p' <<<"$out")
echo "engines: podman $podman_version, crun $crun_version (Debian trixie root $trixie)"

# gpuctk as the root sees it: a copy in the lab, which is bound in at its own path. A release build needs
# only the C library, which the root has (newer); a sanitizer build also needs its runtime libraries: those
# the root lacks go into the overlay's upper layer (the cached root stays as it is).
cp "$gpuctk" "$LAB/gpuctk"
mkdir -p "$LAB/upper" "$LAB/work"
# (Into usr/lib/<triplet>, a directory the loader searches by default: the root's /lib is a link there.)
libdir=/usr/lib/x86_64-linux-gnu
mkdir -p "$LAB/upper$libdir"
for lib in $(ldd "$gpuctk" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'); do
  if [ ! -e "$trixie$libdir/${lib##*/}" ]; then
    cp -L "$lib" "$LAB/upper$libdir/${lib##*/}"
    echo "engines: ${lib##*/} copied into the root for this gpuctk"
  fi
done
engines_real_host "$LAB/gpuctk" "$fixture"
e2e_real_cuda_rootfs
mkdir -p "$LAB/hooks-precreate" "$LAB/hooks-prestart" "$LAB/out"
cat >"$LAB/hooks-precreate/gpuctk.json" <<JSON
{"version": "1.0.0",
 "hook": {"path": "$LAB/gpuctk", "args": ["gpuctk", "hook", "precreate", "--config", "$LAB/gpuctk.yaml"],
          "env": ["GPUCTK_CONFIG=$LAB/gpuctk.yaml"]},
 "when": {"always": true}, "stages": ["precreate"]}
JSON
cat >"$LAB/hooks-prestart/gpuctk.json" <<JSON
{"version": "1.0.0",
 "hook": {"path": "$LAB/gpuctk", "args": ["gpuctk", "hook", "prestart"], "env": ["GPUCTK_CONFIG=$LAB/gpuctk.yaml"]},
 "when": {"always": true}, "stages": ["prestart"]}
JSON
for name in cdi precreate prestart none gids nogids gids-drop nogids-drop; do e2e_rootfs_copy "$name" >/dev/null; done

# The spec without additionalGids, under a kind of its own so that both specs sit in /etc/cdi.
"$LAB/gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --hook-path "$LAB/gpuctk" \
  --vendor nogids.gpuctk.test --feature-flag no-additional-gids-for-device-nodes \
  --output "$LAB/cdi-nogids.yaml" 2>/dev/null || e2e_fail "cdi generate --feature-flag no-additional-gids-for-device-nodes failed"
grep -q additionalGids "$LAB/cdi-nogids.yaml" && e2e_fail "--feature-flag no-additional-gids-for-device-nodes wrote additionalGids"
render=/dev/dri/renderD128  # GPU 0's (devices.yaml), 0660 of group render (105), as Debian makes it
[ "$(stat -c '%a %g' "$dev_root$render")" = "660 105" ] || e2e_fail "$dev_root$render is not 0660 of group 105"
grep -qx '      additionalGids:' "$LAB/cdi/nvidia.yaml" || e2e_fail "the default spec has no additionalGids"
# What the process can open, and with which groups: open(2)'s answer, not a shell's.
cat >"$LAB/open-node.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--as") == 0) {  /* drop to that uid and gid, keeping the groups */
    unsigned id = (unsigned)atoi(argv[2]);
    if (setresgid(id, id, id) != 0 || setresuid(id, id, id) != 0) {
      printf("drop to %u: %s\n", id, strerror(errno));
      return 1;
    }
    first = 3;
  }
  gid_t groups[64];
  int n = getgroups(64, groups);
  printf("uid %u groups", (unsigned)getuid());
  for (int i = 0; i < n; ++i) {
    printf(" %u", (unsigned)groups[i]);
  }
  printf("\n");
  for (int i = first; i < argc; ++i) {
    int fd = open(argv[i], O_RDWR | O_NONBLOCK | O_CLOEXEC);
    printf("open %s: %s\n", argv[i], fd >= 0 ? "ok" : strerror(errno));
  }
  return 0;
}
C
echo "/bin/open-node $render; ls -ln $render" >"$LAB/probe-gids.sh"
echo "/bin/open-node --as 1000 $render; ls -ln $render" >"$LAB/probe-drop.sh"
for name in gids nogids gids-drop nogids-drop; do
  cc -O2 -Wall -Werror -o "$LAB/rootfs-$name/bin/open-node" "$LAB/open-node.c" ||
    e2e_fail "could not build the in-container open probe"
done

printf '%s\n' "$engines_probe" >"$LAB/probe.sh"

# What runs in the Debian 13 root: each case's output in $LAB/out/<case>, ending "container exit N".
cat >"$LAB/inside.sh" <<SH
set -u
podman=(podman --root $LAB/podman/root --runroot $LAB/podman/runroot --cgroup-manager=cgroupfs
  --events-backend=file --runtime crun)
# run NAME HOOKS-DIRS RUN-OPTIONS...: the probe (\$probe: a file of shell) on its own copy of the image's
# root (podman --rootfs).
run() {
  local name=\$1 hooks=() dir status=0
  for dir in \$2; do hooks+=(--hooks-dir "\$dir"); done
  shift 2
  "\${podman[@]}" "\${hooks[@]}" run --rm --network=none --ulimit nofile=20000:20000 \\
    --ulimit nproc=32768:32768 "\$@" --rootfs $LAB/rootfs-\$name /bin/sh -c "\$(cat "\${probe:-$LAB/probe.sh}")" \\
    >$LAB/out/\$name 2>&1 || status=\$?
  echo "container exit \$status" >>$LAB/out/\$name
}
{ podman --version; crun --version | head -1; } >$LAB/out/version 2>&1
mkdir -p /etc/cdi
cp $LAB/cdi/nvidia.yaml /etc/cdi/nvidia.yaml
cp $LAB/cdi-nogids.yaml /etc/cdi/nogids.yaml
run cdi "" --device nvidia.com/gpu=0
run precreate "$LAB/hooks-precreate" -e NVIDIA_VISIBLE_DEVICES=1
run prestart "$LAB/hooks-prestart" -e NVIDIA_VISIBLE_DEVICES=0
run none "$LAB/hooks-precreate $LAB/hooks-prestart"
probe=$LAB/probe-gids.sh run gids "" --user 1000:1000 --device nvidia.com/gpu=0
probe=$LAB/probe-gids.sh run nogids "" --user 1000:1000 --device nogids.gpuctk.test/gpu=0
probe=$LAB/probe-drop.sh run gids-drop "" --device nvidia.com/gpu=0
probe=$LAB/probe-drop.sh run nogids-drop "" --device nogids.gpuctk.test/gpu=0
"\${podman[@]}" rm -af >/dev/null 2>&1
SH

# Enter the root as an engine's host: private mounts, an overlay so that the cached root stays as it is,
# then pivot_root (a chroot works too since the sandbox takes the root's mounts by fd: CONTRIBUTING.md,
# "The engine suite"; RunSandboxed.ACallerThatRunsChrootedGetsTheSameSandbox covers it).
new=$LAB/newroot
mkdir -p "$new"
e2e_mounts_snapshot "$LAB/mountinfo.before"
# podman's cgroup parent (cgroupfs driver) on the host's hierarchies: removed afterwards when this run made it.
if ! compgen -G '/sys/fs/cgroup/*/libpod_parent' >/dev/null; then
  e2e_cleanup_add "for d in /sys/fs/cgroup/*/libpod_parent; do [ -d \"\$d\" ] && find \"\$d\" -depth -type d -exec rmdir {} +; done"
fi
unshare -m --propagation private bash -c '
set -e
lab=$1 trixie=$2 driver_root=$3 new=$1/newroot
mount -t overlay overlay -o "lowerdir=$trixie,upperdir=$lab/upper,workdir=$lab/work" "$new"
mount -t proc proc "$new/proc"
mount --rbind /sys "$new/sys"
mount -t tmpfs tmpfs "$new/sys/fs/cgroup/unified"
mount --rbind /dev "$new/dev"
mount -t tmpfs tmpfs "$new/run"
mkdir -p "$new$lab" "$new$driver_root" "$new/oldroot"
mount --bind "$lab" "$new$lab"
mount --bind "$driver_root" "$new$driver_root"
mount -o remount,bind,ro "$new$driver_root"
cd "$new"
pivot_root . oldroot
umount -l /oldroot
exec bash "$lab/inside.sh"
' sh "$LAB" "$trixie" "$driver_root" >"$LAB/enter.log" 2>&1 || e2e_fail "entering the Debian 13 root failed: $(cat "$LAB/enter.log")"
echo "engines: in the root: $(tr '\n' ' ' <"$LAB/out/version")"

v="podman $podman_version, crun $crun_version"
engines_check_gpu "$(cat "$LAB/out/cdi")" "$v, --device nvidia.com/gpu=0 (CDI)" /dev/nvidia0
engines_check_gpu "$(cat "$LAB/out/precreate")" "$v, hooks.d precreate, NVIDIA_VISIBLE_DEVICES=1" /dev/nvidia1
grep -q "injected nvidia.com/gpu=1 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what the precreate hook injected: $(cat "$LAB/gpuctk.log")"
engines_check_gpu "$(cat "$LAB/out/prestart")" "$v, hooks.d prestart, NVIDIA_VISIBLE_DEVICES=0" /dev/nvidia0
grep -q "prestart: injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml into container" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what the prestart hook injected: $(cat "$LAB/gpuctk.log")"
engines_check_nothing "$(cat "$LAB/out/none")" "$v, both hooks, no request"
# Where permission passed the node answers: ENXIO where no DRM driver is bound to 226:128 (a test machine).
opened="open $render: (ok|No such device or address)"
out=$(cat "$LAB/out/gids")
engines_expect_match "$out" "uid 1000 groups( [0-9]+)* 105( [0-9]+)*"
engines_expect_match "$out" "$opened"
e2e_expect_line "$out" "container exit 0"
out=$(cat "$LAB/out/nogids")
engines_expect_match "$out" "uid 1000 groups( [0-9]+)*"
if grep -qE "^uid 1000 groups( [0-9]+)* 105( |\$)" <<<"$out"; then e2e_fail "group 105 without additionalGids: $out"; fi
engines_expect_match "$out" "crw-rw---- +1 +1000 +105 .*"  # CDI made the container user the owner
engines_expect_match "$out" "$opened"
echo "ok: $v, --user 1000:1000, CDI: group 105 from additionalGids, none without; the node is the user's either way"
out=$(cat "$LAB/out/gids-drop")
engines_expect_match "$out" "uid 1000 groups( [0-9]+)* 105( [0-9]+)*"
engines_expect_match "$out" "crw-rw---- +1 +0 +105 .*"
engines_expect_match "$out" "$opened"
e2e_expect_line "$out" "container exit 0"
out=$(cat "$LAB/out/nogids-drop")
e2e_expect_line "$out" "open $render: Permission denied"
e2e_expect_line "$out" "container exit 0"
echo "ok: $v, CDI, root dropping to uid 1000 with its groups: the render node (root:105, 0660) opens through additionalGids, EACCES without them"
if grep -i 'error' "$LAB/gpuctk.log"; then e2e_fail "gpuctk logged an error"; fi

left=$(pgrep -f -- "$LAB/" || true)
[ -z "$left" ] || e2e_fail "processes of podman left: $(ps -o pid,args -p "${left//$'\n'/,}")"
e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "podman $podman_version in the Debian 13 root"
echo "PASS: podman $podman_version with crun $crun_version (Debian 13): CDI --device, hooks.d precreate and prestart each gave exactly the GPU asked for; without a request nothing; additionalGids give a process the render node's group, which opens it (EACCES without)"
