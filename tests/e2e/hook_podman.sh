#!/usr/bin/env bash
# End to end for the OCI hook: podman 4.3.1 runs `gpuctk hook precreate` from a hooks.d file, against a
# spec generated with default output (so the container also gets the spec's createContainer hooks). A
# glibc container with -e NVIDIA_VISIBLE_DEVICES=0 sees its GPU node, the control nodes, driver files and
# env, loads libcuda.so.1 and gets the fixture's CUDA version, has the driver libraries in its
# ld.so.cache and GPU 0's /dev/dri/by-path links; a container without the variable is unchanged; a bad
# request refuses the container.
#   usage: hook_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_podman_init
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"

e2e_precreate_hook_dir "$LAB/hooks.d" "$gpuctk" "$LAB/gpuctk.yaml"
PODMAN+=(--hooks-dir "$LAB/hooks.d")
out=$(e2e_podman_run -e NVIDIA_VISIBLE_DEVICES=0 --rootfs "$(e2e_rootfs_copy gpu0)" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "podman run with NVIDIA_VISIBLE_DEVICES=0 failed: $out"
e2e_check_t4_gpu0 "$out" "podman hooks.d precreate"
out=$(e2e_podman_run --rootfs "$(e2e_rootfs_copy none)" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "podman run without a request failed: $out"
e2e_check_t4_nothing "$out" "podman without a request"
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"
# A bad request refuses the container with one clear line.
out=$(e2e_podman_run -e NVIDIA_VISIBLE_DEVICES=7 --rootfs "$(e2e_rootfs_copy bad)" /bin/true 2>&1) &&
  e2e_fail "podman started a container asking for a GPU that does not exist"
# podman shows only the hook's exit status; the reason is in gpuctk's log, on a line naming the container
# by its hostname (podman's short id: all the precreate hook has).
grep -qF "executing [gpuctk hook precreate --config $LAB/gpuctk.yaml]: exit status 1" <<<"$out" ||
  e2e_fail "unexpected error: $out"
grep -qE ' error: container with hostname [0-9a-f]{12}: unknown device "nvidia\.com/gpu=7" \(devices: 0, 1, GPU-' \
  "$LAB/gpuctk.log" || e2e_fail "the log does not name the bad device and its container: $(cat "$LAB/gpuctk.log")"
echo "ok: podman refuses NVIDIA_VISIBLE_DEVICES=7"
echo "PASS: the podman precreate hook injected GPU 0; libcuda.so.1 loads"
