#!/usr/bin/env bash
# End to end for the OCI prestart hook under crun: crun's state has its own flavour (status "created", a
# `root` key holding the raw, here relative, root.path), so the hook must find the root from the bundle.
# The bundle lists `gpuctk hook prestart` (env GPUCTK_CONFIG only) in hooks.prestart and asks for GPU 0;
# on the busybox root and on the glibc root the container gets GPU 0's nodes and the control nodes,
# allowed in the device cgroup while an unrequested node (/dev/nvidia1, 195:1, made by crun without an
# allow rule) stays refused, the driver files read-only, nosuid, nodev, the createContainer hooks' links
# and linker cache, and the glibc container loads libcuda.so.1; the env keeps NVIDIA_VISIBLE_DEVICES=0.
# A container without a request is untouched; a bad request makes crun fail, the hook writing one line.
# crun 1.8 refuses hybrid cgroups, so it runs in a private mount namespace without the unified hierarchy.
#   usage: prestart_crun.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs crun "runc (runc spec writes the bundle)" "python3 (it writes config.json)"
e2e_prestart_lab "$gpuctk" "$fixture"

e2e_mounts_snapshot "$LAB/mountinfo.before"

# crun_run NAME KIND ENV: crun runs a bundle from e2e_prestart_bundle (the hook in hooks.prestart) whose
# root is moved inside the bundle and named by a relative root.path; the hooks' stderr goes to
# $LAB/hook-stderr-NAME (crun shows none of it otherwise). Prints crun's output, returns its status.
crun_run() {
  local name=$1 kind=$2 env=$3 bundle id=gpuctk-e2e-prestart-crun-$1-$$
  bundle=$(e2e_prestart_bundle "$name" "$LAB/root-$kind" "$env" "$hook" prestart "$LAB/gpuctk.yaml")
  mv "$LAB/rootfs-$name" "$bundle/rootfs"
  python3 - "$bundle/config.json" "$LAB/hook-stderr-$name" <<'PY' || e2e_fail "could not write the config"
import json, sys
path, stderr = sys.argv[1:]
c = json.load(open(path))
c["root"] = {"path": "rootfs", "readonly": False}
c.setdefault("annotations", {})["run.oci.hooks.stderr"] = stderr
json.dump(c, open(path, "w"), indent=1)
PY
  e2e_cleanup_add "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun delete -f $id'"
  # shellcheck disable=SC2016  # expanded by the inner shell
  unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun "$@"' sh run --bundle "$bundle" "$id" 2>&1
}

for kind in busybox glibc; do
  out=$(crun_run "gpu0-$kind" "$kind" NVIDIA_VISIBLE_DEVICES=0) ||
    e2e_fail "crun run with the prestart hook ($kind root) failed: $out
hook stderr: $(cat "$LAB/hook-stderr-gpu0-$kind" 2>&1)"
  e2e_check_prestart_gpu0 "$out" "crun hooks.prestart, $kind root" "$kind" 0
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "crun hooks.prestart ($kind root)"

  out=$(crun_run "none-$kind" "$kind" "") ||
    e2e_fail "crun run with the prestart hook and no request ($kind root) failed: $out
hook stderr: $(cat "$LAB/hook-stderr-none-$kind" 2>&1)"
  e2e_check_prestart_nothing "$out" "crun hooks.prestart without a request, $kind root" "$kind"
  changes=$(diff -r --no-dereference "$LAB/root-$kind" "$LAB/bundle-none-$kind/rootfs" 2>&1) ||
    e2e_fail "the container without a request changed its root directory: $changes"
  [ ! -s "$LAB/hook-stderr-none-$kind" ] ||
    e2e_fail "the hook wrote to stderr for a container without a request: $(cat "$LAB/hook-stderr-none-$kind")"

  bad=GPU-00000000-0000-0000-0000-000000000000
  if out=$(crun_run "bad-$kind" "$kind" "NVIDIA_VISIBLE_DEVICES=$bad"); then
    e2e_fail "crun started a container asking for $bad ($kind root): $out"
  fi
  grep -qF "error executing hook \`$hook\`" <<<"$out" || e2e_fail "crun does not say that the hook failed: $out"
  stderr=$(cat "$LAB/hook-stderr-bad-$kind" 2>&1)
  [ "$(grep -c . <<<"$stderr")" = 1 ] || e2e_fail "expected one line from the failing hook, got: $stderr"
  grep -qE "^gpuctk: error: .*unknown device \"nvidia.com/gpu=$bad\"" <<<"$stderr" ||
    e2e_fail "unexpected hook error: $stderr"
  echo "ok: crun refused $bad: $stderr"
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "crun with a refused prestart hook ($kind root)"
done
echo "PASS: crun ran gpuctk hook prestart on busybox and glibc roots; no request untouched, a bad request refused with one line, host mounts unchanged"
