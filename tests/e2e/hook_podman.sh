#!/usr/bin/env bash
# End to end for the OCI hook: podman 4.3.1 runs `gpuctk hook precreate` from a hooks.d file. A busybox
# container with -e NVIDIA_VISIBLE_DEVICES=0 sees its GPU node, the control nodes, driver files and env;
# a container without the variable is unchanged; a bad request refuses the container.
#   usage: hook_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
gpuctk=$1
fixture=$2
e2e_init
e2e_podman_init
e2e_busybox_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"

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
out=$(e2e_podman_run --rootfs "$LAB/rootfs" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "podman run without a request failed: $out"
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
echo "PASS: the podman precreate hook injected GPU 0"
