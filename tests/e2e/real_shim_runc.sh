#!/usr/bin/env bash
# End to end on the real-package host (tests/realhost): runc started through `gpuctk-runtime` on a bundle
# whose config.json asks for GPU 0 (NVIDIA_VISIBLE_DEVICES=0), against the spec `cdi generate` writes with
# default options; a glibc image holding the real CUDA 11.8 runtime gets cudaErrorNoDevice from the real
# libcuda.so.1, the real nvidia-smi fails only at the driver, the linker cache lists the mounted
# libcuda.so.1; a bundle without the request gets cudaErrorInsufficientDriver.
#   usage: real_shim_runc.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs runc "python3 (it writes config.json)"
e2e_real_host_with_spec "$gpuctk" "$fixture"
e2e_real_cuda_rootfs
export GPUCTK_CONFIG=$LAB/gpuctk.yaml
# e2e_runc_bundle's container runs $e2e_t4_probe: here, the real host's probe.
e2e_t4_probe=$e2e_real_probe

e2e_shim_run gpu0 NVIDIA_VISIBLE_DEVICES=0 || e2e_fail "runc via the shim failed: $out"
e2e_check_real_gpu "$out" "runc via gpuctk-runtime" void
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"

e2e_shim_run none "" ||
  e2e_fail "runc via the shim without a request failed: $out"
e2e_check_real_nothing "$out" "runc via gpuctk-runtime without a request"
echo "PASS: runc through the gpuctk runtime shim gave the real CUDA runtime Debian's real $real_version driver"
