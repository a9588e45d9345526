#!/usr/bin/env bash
# End to end for the runtime shim: runc started through `gpuctk-runtime` on a busybox bundle whose
# config.json asks for GPU 0 sees the GPU node, the control nodes, driver files and env; a failing
# request leaves config.json exactly as it was and never starts runc.
#   usage: shim_runc.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
gpuctk=$1
fixture=$2
e2e_init
command -v runc >/dev/null || e2e_skip "runc is not installed"
e2e_busybox_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"

mkdir -p "$LAB/bundle"
(cd "$LAB/bundle" && runc spec)
python3 - "$LAB/bundle/config.json" "$LAB/rootfs" "$e2e_t4_probe" <<'PY'
import json, sys
path, rootfs, probe = sys.argv[1:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "-c", probe]
c["process"]["env"].append("NVIDIA_VISIBLE_DEVICES=0")
c["root"] = {"path": rootfs, "readonly": False}
json.dump(c, open(path, "w"))
PY
cp "$LAB/bundle/config.json" "$LAB/config.orig.json"
export GPUCTK_CONFIG=$LAB/gpuctk.yaml
e2e_cleanup_add "runc delete -f gpuctk-e2e-$$"
out=$("$LAB/bin/gpuctk-runtime" run --bundle "$LAB/bundle" "gpuctk-e2e-$$" 2>&1) || e2e_fail "runc via the shim failed: $out"
e2e_check_t4_gpu0 "$out" "runc via gpuctk-runtime"

# A failing injection leaves config.json exactly as it was and never starts runc.
cp "$LAB/config.orig.json" "$LAB/bundle/config.json"
sed -i 's/NVIDIA_VISIBLE_DEVICES=0/NVIDIA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000000/' "$LAB/bundle/config.json"
cp "$LAB/bundle/config.json" "$LAB/config.bad.json"
if out=$("$LAB/bin/gpuctk-runtime" run --bundle "$LAB/bundle" "gpuctk-e2e-bad-$$" 2>&1); then
  e2e_fail "the shim started a container asking for GPU-00000000-0000-0000-0000-000000000000: $out"
fi
grep -qF "gpuctk: error: could not inject GPUs into $LAB/bundle/config.json: unknown device \"nvidia.com/gpu=GPU-00000000-0000-0000-0000-000000000000\"" <<<"$out" ||
  e2e_fail "unexpected error: $out"
cmp -s "$LAB/bundle/config.json" "$LAB/config.bad.json" || e2e_fail "a failed injection changed config.json"
echo "PASS: runc through the gpuctk runtime shim got GPU 0; a failure left the config untouched"
