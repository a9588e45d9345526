#!/usr/bin/env bash
# End to end for the OCI prestart hook under podman 4.3.1 (runc): a hooks.d file with
# `"stages": ["prestart"]` runs `gpuctk hook prestart` (env GPUCTK_CONFIG only) for every container.
# With --env NVIDIA_VISIBLE_DEVICES=0 and --rootfs on the busybox root and on the glibc root, the
# container gets GPU 0's nodes and the control nodes, allowed in the device cgroup while an unrequested
# node (195:1, in the image at /tmp/nvidia1: podman's default capabilities have no CAP_MKNOD) stays
# refused, the driver files read-only, nosuid, nodev, the createContainer hooks' links and linker cache,
# and the glibc container loads libcuda.so.1; the env keeps NVIDIA_VISIBLE_DEVICES=0. A container
# without a request is untouched; a bad request refuses the container with the hook's reason. The host's
# mount table is the same after every run as after podman set its storage up.
#   usage: prestart_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_podman_init
e2e_prestart_lab "$gpuctk" "$fixture"

mkdir -p "$LAB/hooks.d"
cat >"$LAB/hooks.d/gpuctk-prestart.json" <<JSON
{"version": "1.0.0",
 "hook": {"path": "$hook", "args": ["gpuctk", "hook", "prestart"], "env": ["GPUCTK_CONFIG=$LAB/gpuctk.yaml"]},
 "when": {"always": true}, "stages": ["prestart"]}
JSON
PODMAN+=(--hooks-dir "$LAB/hooks.d")

# The host's mounts are compared with what they are once podman's storage is set up, except for the bind
# mount of its overlay home, which podman 4.3.1 itself makes after a failed run and removes after the next
# run (the cleanup of e2e_podman_init unmounts it).
"${PODMAN[@]}" info >/dev/null 2>"$LAB/podman-info.err" || e2e_fail "podman info failed: $(cat "$LAB/podman-info.err")"
e2e_mounts_snapshot "$LAB/mountinfo.before"
own_mount=$LAB/podman/root/overlay

# podman_root NAME KIND: a copy of the KIND root with the unrequested node 195:1 at /tmp/nvidia1.
podman_root() {
  local rootfs
  rootfs=$(e2e_root_copy "$LAB/root-$2" "$1")
  mknod -m 666 "$rootfs/tmp/nvidia1" c 195 1 || e2e_fail "mknod $rootfs/tmp/nvidia1 failed"
  echo "$rootfs"
}

for kind in busybox glibc; do
  out=$(e2e_podman_run --env NVIDIA_VISIBLE_DEVICES=0 --rootfs "$(podman_root "gpu0-$kind" "$kind")" \
    /bin/sh -c "$e2e_prestart_probe" 2>&1) || e2e_fail "podman run with the prestart hook ($kind root) failed: $out"
  e2e_check_prestart_gpu0 "$out" "podman hooks.d prestart, $kind root" "$kind" 0
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "podman with the prestart hook ($kind root)" "$own_mount"

  out=$(e2e_podman_run --rootfs "$(podman_root "none-$kind" "$kind")" /bin/sh -c "$e2e_prestart_probe" 2>&1) ||
    e2e_fail "podman run with the prestart hook and no request ($kind root) failed: $out"
  e2e_check_prestart_nothing "$out" "podman hooks.d prestart without a request, $kind root" "$kind"
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "podman with the prestart hook, no request ($kind root)" \
    "$own_mount"

  bad=GPU-00000000-0000-0000-0000-000000000000
  if out=$(e2e_podman_run --env "NVIDIA_VISIBLE_DEVICES=$bad" --rootfs "$(podman_root "bad-$kind" "$kind")" \
    /bin/true 2>&1); then
    e2e_fail "podman started a container asking for $bad ($kind root): $out"
  fi
  # podman shows runc's error, which carries the hook's stderr.
  e2e_expect_hook_refusal "$out" "podman with the prestart hook ($kind root)" "$bad"
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "podman with a refused prestart hook ($kind root)" "$own_mount"
done
grep -qF "$LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not name the spec file the hook used: $(cat "$LAB/gpuctk.log")"
echo "PASS: podman ran gpuctk hook prestart from hooks.d on busybox and glibc roots; no request untouched, a bad request refused, host mounts unchanged (but podman's own storage mount)"
