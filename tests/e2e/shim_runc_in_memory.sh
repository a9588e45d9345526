#!/usr/bin/env bash
# End to end for the runtime shim with NO spec installed: the configured spec directory is empty, so
# `gpuctk-runtime` builds the spec in memory from the fixture host (driver-root, dev-root) and its
# createContainer hooks run the gpuctk named by the config's hook-path. runc on a glibc bundle asking for
# GPU 0 then sees the GPU node, the control nodes, driver files and env, loads libcuda.so.1 and gets the
# fixture's CUDA version, has the driver libraries in its ld.so.cache and GPU 0's /dev/dri/by-path
# links; an unknown GPU is refused with the devices the in-memory spec has.
#   usage: shim_runc_in_memory.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs runc "python3 (it writes config.json)"
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture" none
[ -z "$(ls -A "$LAB/cdi")" ] || e2e_fail "the spec directory $LAB/cdi is not empty"
grep -qx "hook-path: $(realpath "$gpuctk")" "$LAB/gpuctk.yaml" || e2e_fail "the config has no hook-path"
export GPUCTK_CONFIG=$LAB/gpuctk.yaml

e2e_shim_run gpu0 NVIDIA_VISIBLE_DEVICES=0 ||
  e2e_fail "runc via the shim with an in-memory spec failed: $out"
e2e_check_t4_gpu0 "$out" "runc via gpuctk-runtime, spec built in memory"
grep -qF "no spec for nvidia.com/gpu in the spec directories; building the spec in memory" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say that the spec was built in memory: $(cat "$LAB/gpuctk.log")"
grep -qF "injected nvidia.com/gpu=0 from in-memory spec (driver 535.183.01)" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"
[ -z "$(ls -A "$LAB/cdi")" ] || e2e_fail "the shim wrote into the spec directory: $(ls -A "$LAB/cdi")"

# An unknown GPU is refused, naming what the in-memory spec has; runc never starts.
e2e_expect_shim_refuses bad NVIDIA_VISIBLE_DEVICES=7 \
  'unknown device "nvidia.com/gpu=7" (devices: 0, 1, GPU-473708f2-6eb9-5708-a0c1-d913c026ccc9, GPU-5c2f8e1a-9d3b-5f7c-b1e4-6a8d0c2e4f61, all)'
echo "PASS: runc through the gpuctk runtime shim, with no spec installed, got GPU 0 and loads libcuda.so.1"
