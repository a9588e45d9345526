#!/usr/bin/env bash
# End to end on the real-package host (tests/realhost): plain runc runs `gpuctk hook prestart` from
# config.json's hooks.prestart (env GPUCTK_CONFIG only) for a process asking for GPU 0, against the spec
# `cdi generate` writes with default options; the hook injects live into the created container, where a
# glibc image holding the real CUDA 11.8 runtime gets cudaErrorNoDevice from the real libcuda.so.1, the
# real nvidia-smi fails only at the driver and the linker cache lists the mounted libcuda.so.1; without the
# request the runtime gets cudaErrorInsufficientDriver. The linker cache is the image's own merged with the
# spec's driver entries (no ldconfig run), as the log says. The host's mount table is the same afterwards.
#   usage: real_prestart_runc.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs runc "python3 (it writes config.json)"
e2e_real_host_with_spec "$gpuctk" "$fixture"
e2e_real_cuda_rootfs
hook=$(realpath "$gpuctk")
# e2e_prestart_bundle's container runs $e2e_prestart_probe: here, the real host's probe.
e2e_prestart_probe=$e2e_real_probe
e2e_mounts_snapshot "$LAB/mountinfo.before"

run() {  # run NAME ENV: `runc run` of a prestart bundle on the image; prints runc's output, returns its status
  local bundle
  bundle=$(e2e_prestart_bundle "$1" "$LAB/rootfs" "$2" "$hook" prestart "$LAB/gpuctk.yaml")
  runc run --bundle "$bundle" "gpuctk-e2e-real-prestart-$1-$$" 2>&1
}
# run's containers are deleted at the end: registered here, since run's own shell is a $(...) subshell
# whose cleanup list is lost ($$ is this shell's pid there too).
for name in gpu0 none; do
  e2e_cleanup_add "runc delete -f gpuctk-e2e-real-prestart-$name-$$"
done

out=$(run gpu0 NVIDIA_VISIBLE_DEVICES=0) || e2e_fail "runc run with the prestart hook failed: $out"
e2e_check_real_gpu "$out" "runc hooks.prestart" 0
# The image's glibc cache (e2e_real_cuda_rootfs made it) was merged with the spec's driver entries, not
# rebuilt by ldconfig (config ld-cache: merge, the default; issue 24): the debug log says so.
grep -q "update-ldcache: merge: [1-9][0-9]* entries added to the image's linker cache" "$LAB/gpuctk.log" ||
  e2e_fail "update-ldcache did not merge the image's cache: $(grep 'update-ldcache' "$LAB/gpuctk.log")"
e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "runc hooks.prestart"

out=$(run none "") || e2e_fail "runc run with the prestart hook and no request failed: $out"
e2e_check_real_nothing "$out" "runc hooks.prestart without a request"
e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "runc hooks.prestart without a request"
echo "PASS: the prestart hook gave the real CUDA runtime Debian's real $real_version driver under runc"
