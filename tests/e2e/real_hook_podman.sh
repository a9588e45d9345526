#!/usr/bin/env bash
# End to end on the real-package host (tests/realhost): podman 4.3.1 runs `gpuctk hook precreate` from a
# hooks.d file against the spec `cdi generate` writes with default options; a glibc image holding the real
# CUDA 11.8 runtime with -e NVIDIA_VISIBLE_DEVICES=0 gets cudaErrorNoDevice from the real libcuda.so.1, the
# real nvidia-smi fails only at the driver, the linker cache lists the mounted libcuda.so.1; without the
# variable the runtime gets cudaErrorInsufficientDriver.
#   usage: real_hook_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_podman_init
e2e_real_host_with_spec "$gpuctk" "$fixture"
e2e_real_cuda_rootfs

e2e_precreate_hook_dir "$LAB/hooks.d" "$gpuctk" "$LAB/gpuctk.yaml"
PODMAN+=(--hooks-dir "$LAB/hooks.d")
out=$(e2e_podman_run -e NVIDIA_VISIBLE_DEVICES=0 --rootfs "$(e2e_rootfs_copy gpu0)" /bin/sh -c "$e2e_real_probe" 2>&1) ||
  e2e_fail "podman run with NVIDIA_VISIBLE_DEVICES=0 failed: $out"
e2e_check_real_gpu "$out" "podman hooks.d precreate" void
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"

out=$(e2e_podman_run --rootfs "$(e2e_rootfs_copy none)" /bin/sh -c "$e2e_real_probe" 2>&1) ||
  e2e_fail "podman run without a request failed: $out"
e2e_check_real_nothing "$out" "podman without a request"
echo "PASS: the podman precreate hook gave the real CUDA runtime Debian's real $real_version driver"
