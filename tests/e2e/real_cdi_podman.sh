#!/usr/bin/env bash
# End to end on the real-package host (Debian 12's real NVIDIA driver packages, tests/realhost): podman
# 4.3.1 runs a glibc image holding the real CUDA 11.8 runtime with --device nvidia.com/gpu=0 from the spec
# `gpuctk cdi generate` writes with default options. In the container cudaGetDeviceCount reaches the
# kernel boundary through the real libcuda.so.1 (cudaErrorNoDevice, 100), the real nvidia-smi fails only
# at the driver, and the container's ld.so.cache lists the mounted libcuda.so.1; the same image without
# a device gets cudaErrorInsufficientDriver (35): the probe can fail.
#   usage: real_cdi_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init --own-cdi gpuctk fixture -- "$@"
e2e_podman_init
e2e_real_host_with_spec "$gpuctk" "$fixture" "${e2e_podman431_spec_options[@]}"
e2e_real_cuda_rootfs

# podman reads the spec from the test's own /etc/cdi (e2e_own_cdi_dirs). Its hooks also get
# GPUCTK_CONFIG, a config that only sends their log at debug level to $LAB/hook.log: the linker cache step
# says there whether it merged the image's cache or ran ldconfig.
spec=/etc/cdi/gpuctk-e2e-real.yaml
printf 'log-level: debug\nlog-file: %s\n' "$LAB/hook.log" >"$LAB/hook.yaml"
sed "s|^\( *\)- \"GPUCTK_DEBUG=false\"\$|&\n\1- \"GPUCTK_CONFIG=$LAB/hook.yaml\"|" "$LAB/cdi/nvidia.yaml" >"$spec"
grep -q "GPUCTK_CONFIG=$LAB/hook.yaml" "$spec" || e2e_fail "could not give the spec's hooks a config"

out=$(e2e_podman_run --device nvidia.com/gpu=0 --rootfs "$(e2e_rootfs_copy gpu0)" /bin/sh -c "$e2e_real_probe" 2>&1) ||
  e2e_fail "podman run --device nvidia.com/gpu=0 failed: $out"
e2e_check_real_gpu "$out" "podman --device nvidia.com/gpu=0" void
# Every driver library of the real packages has its cache entry in the spec (VDPAU's, with a GNU ABI tag
# note; libnvidia-vulkan-producer, without a SONAME): the image's cache was merged, no ldconfig ran.
grep -q "update-ldcache: merge: [1-9][0-9]* entries added to the image's linker cache" "$LAB/hook.log" ||
  e2e_fail "update-ldcache did not merge the image's cache: $(grep 'update-ldcache' "$LAB/hook.log")"

out=$(e2e_podman_run --rootfs "$(e2e_rootfs_copy none)" /bin/sh -c "$e2e_real_probe" 2>&1) ||
  e2e_fail "podman run without a device failed: $out"
e2e_check_real_nothing "$out" "podman without a device"
echo "PASS: podman ran the real CUDA runtime on Debian's real $real_version driver from a gpuctk spec"
