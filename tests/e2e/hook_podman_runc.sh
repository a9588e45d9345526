#!/usr/bin/env bash
# End to end for the OCI hook: (1) podman 4.3.1 runs `gpuctk hook precreate` from a hooks.d file, and a
# busybox container with -e NVIDIA_VISIBLE_DEVICES=0 sees its GPU node, the control nodes, driver files
# and env, while a container without the variable is unchanged; (2) runc started through the
# `gpuctk runtime` shim on a busybox bundle sees the same; a failing request leaves config.json as it was.
#   usage: hook_podman_runc.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
gpuctk=$1
fixture=$2
e2e_init
e2e_busybox_rootfs

e2e_t4_host_with_spec "$gpuctk" "$fixture"

# --- (1) podman + hooks.d precreate -------------------------------------------------------------
if command -v podman >/dev/null; then
  e2e_podman_init
  mkdir -p "$LAB/hooks.d"
  cat >"$LAB/hooks.d/gpuctk.json" <<JSON
{"version": "1.0.0",
 "hook": {"path": "$gpuctk", "args": ["gpuctk", "hook", "precreate", "--config", "$LAB/gpuctk.yaml"],
          "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]},
 "when": {"always": true}, "stages": ["precreate"]}
JSON
  PODMAN+=(--hooks-dir "$LAB/hooks.d")
  out=$(e2e_podman_run -e NVIDIA_VISIBLE_DEVICES=0 --rootfs "$LAB/rootfs" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
    e2e_fail "podman run with NVIDIA_VISIBLE_DEVICES=0 failed: $out"
  e2e_check_t4_gpu0 "$out" "podman hooks.d precreate"
  out=$(e2e_podman_run --rootfs "$LAB/rootfs" /bin/sh -c "$e2e_t4_probe" 2>&1) || true
  e2e_expect_no_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_no_line "$out" "file /usr/bin/nvidia-smi"
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES="
  grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
    e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"
  # A bad request refuses the container with one clear line.
  out=$(e2e_podman_run -e NVIDIA_VISIBLE_DEVICES=7 --rootfs "$LAB/rootfs" /bin/true 2>&1) &&
    e2e_fail "podman started a container asking for a GPU that does not exist"
  # podman shows only the hook's exit status; the reason is in gpuctk's log.
  grep -qF "executing [gpuctk hook precreate --config $LAB/gpuctk.yaml]: exit status 1" <<<"$out" ||
    e2e_fail "unexpected error: $out"
  grep -qF 'error: unknown device "nvidia.com/gpu=7" (devices: 0, GPU-' "$LAB/gpuctk.log" ||
    e2e_fail "the log does not name the bad device: $(cat "$LAB/gpuctk.log")"
  echo "ok: podman refuses NVIDIA_VISIBLE_DEVICES=7"
else
  echo "note: podman is not installed; the podman part did not run" >&2
fi

# --- (2) runc through the gpuctk runtime shim --------------------------------------------------
command -v runc >/dev/null || e2e_skip "runc is not installed"
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
echo "PASS: podman precreate hook and runc shim injected GPU 0; failures left the config untouched"
