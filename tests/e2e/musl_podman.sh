#!/usr/bin/env bash
# End to end for musl (Alpine-like) images: podman starts a container on a musl root (e2e_musl_rootfs:
# musl's loader as /lib/ld-musl-x86_64.so.1, no ldconfig, no ld.so.cache, no musl path file) with
# --device nvidia.com/gpu=0 from the spec `gpuctk cdi generate` writes for the t4-debian fixture host.
# The spec's update-ldcache step (of its container-start hook) writes the driver's 64-bit folders into /etc/ld-musl-x86_64.path ahead of
# musl's default list (the 32-bit folders, whose libcuda.so.1 musl cannot load, are left out) and runs no
# ldconfig. A program built with musl-gcc then finds libcuda.so.1 in /usr/lib/x86_64-linux-gnu and gets
# the fixture's CUDA version from it, and the image's own library on musl's default path still loads.
# The control: the same container without the path file does not find libcuda.so.1, and a container
# without a GPU is unchanged.
#   usage: musl_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init --own-cdi gpuctk fixture -- "$@"
e2e_podman_init
e2e_musl_rootfs
e2e_t4_host "$fixture"
e2e_cdi_spec_in_etc "$gpuctk"
grep -qE '^ *- "container-start"$' "$spec" || e2e_fail "the spec has no container-start hook"
grep -qE '^ *- "--folder"$' "$spec" || e2e_fail "the spec's container-start hook has no update-ldcache step"

# shellcheck disable=SC2016  # expanded in the container
probe='/bin/cuda-version; echo "cuda-version exit $?"
if [ -e /etc/ld-musl-x86_64.path ]; then echo "path file: $(tr "\n" " " </etc/ld-musl-x86_64.path)"; else echo "no path file"; fi
for f in /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d; do [ -e "$f" ] && echo "found $f"; done
if [ -e /etc/ld-musl-x86_64.path ]; then mv /etc/ld-musl-x86_64.path /tmp/path; echo "without the path file:"; /bin/cuda-version; fi
true'

out=$(e2e_podman_run --device nvidia.com/gpu=0 --rootfs "$(e2e_rootfs_copy gpu0)" /bin/sh -c "$probe" 2>&1) ||
  e2e_fail "podman run --device nvidia.com/gpu=0 on a musl root failed: $out"
e2e_expect_line "$out" "libgpuctk-e2e-musl.so.1 loaded from /usr/local/lib/libgpuctk-e2e-musl.so.1"
e2e_expect_line "$out" "libcuda.so.1 loaded from /usr/lib/x86_64-linux-gnu/libcuda.so.1"
e2e_expect_line "$out" "cuDriverGetVersion: $e2e_t4_cuda_version"
e2e_expect_line "$out" "cuda-version exit 0"
e2e_expect_line "$out" "path file: /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/vdpau /lib /usr/local/lib /usr/lib "
for f in /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d; do
  e2e_expect_no_line "$out" "found $f"
done
e2e_expect_line "$out" "without the path file:"
e2e_expect_line "$out" "dlopen libcuda.so.1: Error loading shared library libcuda.so.1: No such file or directory"
echo "ok: podman --device nvidia.com/gpu=0 on a musl root"

out=$(e2e_podman_run --rootfs "$(e2e_rootfs_copy none)" /bin/sh -c "$probe" 2>&1) ||
  e2e_fail "podman run without a device on a musl root failed: $out"
e2e_expect_line "$out" "libgpuctk-e2e-musl.so.1 loaded from /usr/local/lib/libgpuctk-e2e-musl.so.1"
e2e_expect_line "$out" "dlopen libcuda.so.1: Error loading shared library libcuda.so.1: No such file or directory"
e2e_expect_line "$out" "cuda-version exit 1"
e2e_expect_line "$out" "no path file"
echo "ok: podman without a device on a musl root"
echo "PASS: a musl container finds and calls the driver's libcuda.so.1 through the musl path file update-ldcache wrote; no ldconfig ran"
