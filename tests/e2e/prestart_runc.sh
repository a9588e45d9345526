#!/usr/bin/env bash
# End to end for the OCI prestart hook under plain runc: config.json lists
# `gpuctk hook prestart` (env GPUCTK_CONFIG only) in hooks.prestart, and the process env asks for GPU 0.
# On the busybox root and on the glibc root, against the spec `cdi generate` writes (and once against the
# spec built in memory), the hook injects live into the created container: GPU 0's nodes and the control
# nodes (type, major, minor), allowed in the device cgroup while an unrequested node (/dev/nvidia1,
# 195:1, made by runc without an allow rule) stays refused; the driver files read-only, nosuid, nodev;
# the createContainer hooks (links, linker cache); the glibc container loads libcuda.so.1; the env keeps
# NVIDIA_VISIBLE_DEVICES=0. The same hook under hooks.createRuntime works too; a container without a
# request is untouched; a bad request makes `runc run` fail with the hook's one-line reason. The host's
# mount table is exactly the same after every run.
#   usage: prestart_runc.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs runc "python3 (it writes config.json)"
e2e_prestart_lab "$gpuctk" "$fixture"
# The in-memory spec: a second config whose spec directory is empty (as `e2e_t4_host_with_spec ... none`).
mkdir -p "$LAB/cdi-none"
sed -e "s|^spec-dirs: .*|spec-dirs: [$LAB/cdi-none]|" -e "s|^log-file: .*|log-file: $LAB/gpuctk-none.log|" \
  "$LAB/gpuctk.yaml" >"$LAB/gpuctk-none.yaml"
grep -qx "spec-dirs: \[$LAB/cdi-none\]" "$LAB/gpuctk-none.yaml" || e2e_fail "could not write gpuctk-none.yaml"

e2e_mounts_snapshot "$LAB/mountinfo.before"

# runc_run NAME KIND ENV STAGE CONFIG: `runc run` of a bundle from e2e_prestart_bundle on the KIND root;
# prints runc's output (the probe's, or runc's error), returns runc's status.
runc_run() {
  local name=$1 kind=$2 env=$3 stage=$4 config=$5 bundle id=gpuctk-e2e-prestart-$1-$$
  bundle=$(e2e_prestart_bundle "$name" "$LAB/root-$kind" "$env" "$hook" "$stage" "$config")
  e2e_cleanup_add "runc delete -f $id"
  runc run --bundle "$bundle" "$id" 2>&1
}

for kind in busybox glibc; do
  out=$(runc_run "gpu0-$kind" "$kind" NVIDIA_VISIBLE_DEVICES=0 prestart "$LAB/gpuctk.yaml") ||
    e2e_fail "runc run with the prestart hook ($kind root) failed: $out"
  e2e_check_prestart_gpu0 "$out" "runc hooks.prestart, $kind root, generated spec" "$kind" 0
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "runc hooks.prestart ($kind root)"

  out=$(runc_run "runtime-$kind" "$kind" NVIDIA_VISIBLE_DEVICES=0 createRuntime "$LAB/gpuctk.yaml") ||
    e2e_fail "runc run with the hook under createRuntime ($kind root) failed: $out"
  e2e_check_prestart_gpu0 "$out" "runc hooks.createRuntime, $kind root" "$kind" 0
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "runc hooks.createRuntime ($kind root)"

  out=$(runc_run "mem-$kind" "$kind" NVIDIA_VISIBLE_DEVICES=0 prestart "$LAB/gpuctk-none.yaml") ||
    e2e_fail "runc run with the prestart hook and no spec installed ($kind root) failed: $out"
  e2e_check_prestart_gpu0 "$out" "runc hooks.prestart, $kind root, spec built in memory" "$kind" 0
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "runc hooks.prestart, in-memory spec ($kind root)"

  # No request: the hook exits 0 and touches nothing; apart from what runc itself leaves (nothing on
  # these roots: every mount point exists), the root directory is byte for byte the image.
  out=$(runc_run "none-$kind" "$kind" "" prestart "$LAB/gpuctk.yaml") ||
    e2e_fail "runc run with the prestart hook and no request ($kind root) failed: $out"
  e2e_check_prestart_nothing "$out" "runc hooks.prestart without a request, $kind root" "$kind"
  changes=$(diff -r --no-dereference "$LAB/root-$kind" "$LAB/rootfs-none-$kind" 2>&1) ||
    e2e_fail "the container without a request changed its root directory: $changes"
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "runc hooks.prestart without a request ($kind root)"

  # A bad request: runc aborts the start and shows the hook's reason; nothing is left mounted.
  bad=GPU-00000000-0000-0000-0000-000000000000
  if out=$(runc_run "bad-$kind" "$kind" "NVIDIA_VISIBLE_DEVICES=$bad" prestart "$LAB/gpuctk.yaml"); then
    e2e_fail "runc started a container asking for $bad ($kind root): $out"
  fi
  e2e_expect_hook_refusal "$out" "runc with the prestart hook ($kind root)" "$bad"
  if runc list -q | grep -qx "gpuctk-e2e-prestart-bad-$kind-$$"; then
    e2e_fail "runc kept the refused container gpuctk-e2e-prestart-bad-$kind-$$"
  fi
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "a refused prestart hook ($kind root)"
done

grep -qF "$LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not name the spec file the hook used: $(cat "$LAB/gpuctk.log")"
grep -qF "in-memory spec" "$LAB/gpuctk-none.log" ||
  e2e_fail "the log does not say that the spec was built in memory: $(cat "$LAB/gpuctk-none.log" 2>&1)"
[ -z "$(ls -A "$LAB/cdi-none")" ] || e2e_fail "the hook wrote into the empty spec directory: $(ls -A "$LAB/cdi-none")"
echo "PASS: runc ran gpuctk hook prestart (prestart and createRuntime, generated and in-memory spec, busybox and glibc roots); no request untouched, a bad request refused, host mounts unchanged"
