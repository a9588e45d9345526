#!/usr/bin/env bash
# End to end for the runtime shim in front of crun: crun runs the createContainer hooks in the container's
# namespaces with its own state flavour (a `root` key holding the raw, here relative, root.path; pid 0),
# so the hooks must find the root from the state. A glibc container asking for GPU 0 loads libcuda.so.1;
# with a read-only root (crun makes it read-only before createContainer) the hooks refuse with one line.
# crun 1.8 refuses hybrid cgroups, so it runs in a private mount namespace without the unified hierarchy.
#   usage: shim_crun.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs crun "runc (runc spec writes the bundle)" "python3 (it writes config.json)"
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"
echo "runtimes: [crun]" >>"$LAB/gpuctk.yaml"
export GPUCTK_CONFIG=$LAB/gpuctk.yaml

# crun_bundle NAME READONLY: a bundle for GPU 0 whose rootfs is inside it, named by a relative root.path.
crun_bundle() {
  local bundle
  bundle=$(e2e_runc_bundle "$1" NVIDIA_VISIBLE_DEVICES=0)
  mv "$LAB/rootfs-$1" "$bundle/rootfs"
  python3 - "$bundle/config.json" "$2" "$LAB/hook-stderr-$1" <<'PY' || e2e_fail "could not write the config"
import json, sys
path, readonly, stderr = sys.argv[1:]
c = json.load(open(path))
c["root"] = {"path": "rootfs", "readonly": readonly == "true"}
c.setdefault("annotations", {})["run.oci.hooks.stderr"] = stderr
json.dump(c, open(path, "w"))
PY
  echo "$bundle"
}

crun_run() {
  unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' sh "$LAB/bin/gpuctk-runtime" run --bundle "$1" "$2"
}

bundle=$(crun_bundle gpu0 false)
e2e_cleanup_add "crun delete -f gpuctk-e2e-crun-$$"
out=$(crun_run "$bundle" "gpuctk-e2e-crun-$$" 2>&1) || e2e_fail "crun via the shim failed: $out
hooks: $(cat "$LAB/hook-stderr-gpu0" 2>/dev/null)"
e2e_check_t4_gpu0 "$out" "crun via gpuctk-runtime"

# A read-only root: crun has remounted it before createContainer, so the first hook that must write
# refuses, with one line (the first link, or the directory of one, e.g. gbm/), and the container does not
# start.
bundle=$(crun_bundle ro true)
e2e_cleanup_add "crun delete -f gpuctk-e2e-crun-ro-$$"
if out=$(crun_run "$bundle" "gpuctk-e2e-crun-ro-$$" 2>&1); then
  e2e_fail "crun started a GPU container on a read-only root: $out"
fi
errors=$(grep -c . "$LAB/hook-stderr-ro") || true
[ "$errors" = 1 ] || e2e_fail "expected one line from the failing hook, got: $(cat "$LAB/hook-stderr-ro")"
grep -qE "^gpuctk: error: create-symlinks: create (link|directory) /.* in container root $bundle/rootfs: Read-only file system$" \
  "$LAB/hook-stderr-ro" || e2e_fail "unexpected hook error: $(cat "$LAB/hook-stderr-ro")"
echo "PASS: crun through the gpuctk runtime shim loads libcuda.so.1; a read-only root is refused with one line"
