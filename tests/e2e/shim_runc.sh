#!/usr/bin/env bash
# End to end for the runtime shim: runc started through `gpuctk-runtime` on a glibc bundle whose
# config.json asks for GPU 0, against a spec generated with default output (createContainer hooks), sees
# the GPU node, the control nodes, driver files and env, loads libcuda.so.1 and gets the fixture's CUDA
# version, has the driver libraries in its ld.so.cache and GPU 0's /dev/dri/by-path links; a container
# without a request is unchanged; a failing request leaves config.json exactly as it was and never
# starts runc.
#   usage: shim_runc.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs runc "python3 (it writes config.json)"
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"
export GPUCTK_CONFIG=$LAB/gpuctk.yaml

e2e_shim_run gpu0 NVIDIA_VISIBLE_DEVICES=0 || e2e_fail "runc via the shim failed: $out"
e2e_check_t4_gpu0 "$out" "runc via gpuctk-runtime"
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"

e2e_shim_run none "" ||
  e2e_fail "runc via the shim without a request failed: $out"
e2e_check_t4_nothing "$out" "runc via gpuctk-runtime without a request"

# A failing injection leaves config.json exactly as it was and never starts runc.
e2e_expect_shim_refuses bad NVIDIA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000000 \
  'unknown device "nvidia.com/gpu=GPU-00000000-0000-0000-0000-000000000000"'
echo "PASS: runc through the gpuctk runtime shim got GPU 0 and loads libcuda.so.1; a failure left the config untouched"
