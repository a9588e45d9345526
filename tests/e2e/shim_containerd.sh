#!/usr/bin/env bash
# End to end for the runtime shim under containerd 1.6 (Debian 12's; it has no CDI, so the shim is the
# way GPUs reach its containers): a containerd daemon with all its state in the lab, `ctr run` with
# gpuctk-runtime as the runc binary of the runc v2 shim, against a spec generated with default output
# (createContainer hooks). A glibc container with NVIDIA_VISIBLE_DEVICES=0 sees GPU 0, its control node,
# driver files and env, loads libcuda.so.1 and gets the fixture's CUDA version, has the driver libraries
# in its ld.so.cache and GPU 0's /dev/dri/by-path links; one without the variable is unchanged; a bad
# request stops the container from starting, with gpuctk's reason.
#   usage: shim_containerd.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs containerd "ctr (containerd)" runc
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"

e2e_containerd_start

# ctr_run NAME ENV COMMAND...: a container on its own copy of the glibc rootfs; ENV is "KEY=VALUE" or
# empty. (ctr takes the rootfs path as the first argument after the flags: --rootfs is a switch.)
ctr_run() {
  local name=$1 env=$2 rootfs
  shift 2
  rootfs=$(e2e_rootfs_copy "$name")
  local flags=(--rm --runc-binary "$LAB/bin/gpuctk-runtime" --rootfs)
  [ -n "$env" ] && flags=(--env "$env" "${flags[@]}")
  e2e_cleanup_add "${CTR[*]} task kill -s KILL $name; ${CTR[*]} container rm $name"
  "${CTR[@]}" run "${flags[@]}" "$rootfs" "$name" "$@"
}

out=$(ctr_run "gpuctk-e2e-gpu0-$$" NVIDIA_VISIBLE_DEVICES=0 /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "ctr run with NVIDIA_VISIBLE_DEVICES=0 failed: $out"
e2e_check_t4_gpu0 "$out" "containerd 1.6 with gpuctk-runtime as its runc"
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"

out=$(ctr_run "gpuctk-e2e-none-$$" "" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "ctr run without a request failed: $out"
e2e_check_t4_nothing "$out" "containerd without a request is unchanged"

if out=$(ctr_run "gpuctk-e2e-bad-$$" NVIDIA_VISIBLE_DEVICES=7 /bin/true 2>&1); then
  e2e_fail "containerd started a container asking for a GPU that does not exist: $out"
fi
grep -qF 'unknown device \"nvidia.com/gpu=7\"' <<<"$out" || grep -qF 'unknown device "nvidia.com/gpu=7"' <<<"$out" ||
  e2e_fail "ctr does not show gpuctk's reason: $out"
echo "ok: containerd refuses NVIDIA_VISIBLE_DEVICES=7: ${out//$'\n'/ }"
echo "PASS: containerd 1.6 ran gpuctk-runtime as its runc binary; libcuda.so.1 loads"
