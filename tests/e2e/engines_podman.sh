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
#   - both hooks and no request: nothing injected.
# Afterwards no process of podman is left and the host's mounts are what they were.
#   usage: engines_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$(dirname "$0")/../engines/lib.sh"
gpuctk=$1
fixture=$2
e2e_init
e2e_cleanup_add "e2e_umount_under '$LAB'"
command -v cc >/dev/null || e2e_skip "no C compiler (cc) to build the image's programs"
command -v debootstrap >/dev/null || e2e_skip "debootstrap is not installed (scripts/deps.sh test)"
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
for name in cdi precreate prestart none; do e2e_rootfs_copy "$name" >/dev/null; done

printf '%s\n' "$engines_probe" >"$LAB/probe.sh"

# What runs in the Debian 13 root: each case's output in $LAB/out/<case>, ending "container exit N".
cat >"$LAB/inside.sh" <<SH
set -u
podman=(podman --root $LAB/podman/root --runroot $LAB/podman/runroot --cgroup-manager=cgroupfs
  --events-backend=file --runtime crun)
# run NAME HOOKS-DIRS RUN-OPTIONS...: the probe on its own copy of the image's root (podman --rootfs).
run() {
  local name=\$1 hooks=() dir status=0
  for dir in \$2; do hooks+=(--hooks-dir "\$dir"); done
  shift 2
  "\${podman[@]}" "\${hooks[@]}" run --rm --network=none --ulimit nofile=20000:20000 \\
    --ulimit nproc=32768:32768 "\$@" --rootfs $LAB/rootfs-\$name /bin/sh -c "\$(cat $LAB/probe.sh)" \\
    >$LAB/out/\$name 2>&1 || status=\$?
  echo "container exit \$status" >>$LAB/out/\$name
}
{ podman --version; crun --version | head -1; } >$LAB/out/version 2>&1
mkdir -p /etc/cdi
cp $LAB/cdi/nvidia.yaml /etc/cdi/nvidia.yaml
run cdi "" --device nvidia.com/gpu=0
run precreate "$LAB/hooks-precreate" -e NVIDIA_VISIBLE_DEVICES=1
run prestart "$LAB/hooks-prestart" -e NVIDIA_VISIBLE_DEVICES=0
run none "$LAB/hooks-precreate $LAB/hooks-prestart"
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
if grep -i 'error' "$LAB/gpuctk.log"; then e2e_fail "gpuctk logged an error"; fi

left=$(pgrep -f -- "$LAB/" || true)
[ -z "$left" ] || e2e_fail "processes of podman left: $(ps -o pid,args -p "${left//$'\n'/,}")"
e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "podman $podman_version in the Debian 13 root"
echo "PASS: podman $podman_version with crun $crun_version (Debian 13): CDI --device, hooks.d precreate and prestart each gave exactly the GPU asked for; without a request nothing"
