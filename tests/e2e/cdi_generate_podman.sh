#!/usr/bin/env bash
# End to end: real podman 4.3.1 (CDI library 0.5.x, strict parsing, cdiVersion <= 0.5.0) refuses the spec
# `gpuctk cdi generate` writes by default on a materialised fixture host (its DRM nodes are 0660: the
# devices have additionalGids, cdiVersion 0.7.0), and accepts the one written with --feature-flag
# no-additional-gids-for-device-nodes (otherwise default output, with its createContainer hooks), and a glibc container started with --device nvidia.com/gpu=0 / =all sees the device nodes, the
# mounted driver files and the env, loads the host's libcuda.so.1 and gets its CUDA version, has the
# driver libraries in its ld.so.cache and GPU 0's /dev/dri/by-path links; GPU 1's only with =all.
#   usage: cdi_generate_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init --own-cdi gpuctk fixture -- "$@"
e2e_podman_init
e2e_glibc_rootfs

e2e_t4_host "$fixture"

# The default spec is one podman 4.3.1 cannot load: the container fails, and podman's debug log says why.
"$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --hook-path "$(realpath "$gpuctk")" \
  --output /etc/cdi/gpuctk-e2e.yaml 2>/dev/null || e2e_fail "cdi generate failed"
grep -qx 'cdiVersion: "0.7.0"' /etc/cdi/gpuctk-e2e.yaml || e2e_fail "the default spec is not cdiVersion 0.7.0"
grep -qx '      additionalGids:' /etc/cdi/gpuctk-e2e.yaml || e2e_fail "the default spec has no additionalGids"
if out=$("${PODMAN[@]}" --log-level=debug run --rm --network=none --device nvidia.com/gpu=0 \
  --rootfs "$(e2e_rootfs_copy refused)" /bin/true 2>&1); then
  e2e_fail "podman 4.3.1 ran a container from a spec with additionalGids"
fi
grep -q 'unknown field \\*"additionalGids\\*"' <<<"$out" ||
  e2e_fail "podman 4.3.1 did not refuse the spec for additionalGids: $(grep -i cdi <<<"$out")"
grep -q 'unresolvable CDI devices nvidia.com/gpu=0' <<<"$out" ||
  e2e_fail "podman 4.3.1 did not fail on the device: $(tail -3 <<<"$out")"
echo "ok: podman 4.3.1 refuses the default spec (unknown field \"additionalGids\")"

# With the flag, otherwise default output: the spec-wide steps are ONE createContainer hook of this gpuctk,
# container-start, with the options of its steps (links, compat, linker cache, params); the by-path links
# are each device's own.
e2e_cdi_spec_in_etc "$gpuctk"
[ "$(stat -c %a "$spec")" = 644 ] || e2e_fail "spec mode is $(stat -c %a "$spec"), want 644"
grep -qx 'cdiVersion: "0.5.0"' "$spec" || e2e_fail "spec is not cdiVersion 0.5.0"
for hook in create-symlinks container-start; do
  grep -qE "^ *- \"$hook\"\$" "$spec" || e2e_fail "the spec has no $hook hook"
done
for option in --link --folder --disable-device-node-modification; do
  grep -qE "^ *- \"$option\"\$" "$spec" || e2e_fail "the spec's hooks have no $option"
done
! grep -qE '^ *- "(update-ldcache|enable-cuda-compat|disable-device-node-modification)"$' "$spec" ||
  e2e_fail "a spec-wide step is a hook process of its own"

probe='ls -l /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm | while read -r mode _ _ _ major minor _ _ _ path; do echo "$mode $major $minor $path"; done
for f in /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.183.01 /usr/bin/nvidia-smi /etc/vulkan/icd.d/nvidia_icd.json; do [ -s "$f" ] && echo "file $f"; done
grep -q " /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01 .*ro," /proc/self/mountinfo && echo "libcuda read-only"
cat /dev/nvidia0 2>&1 | sed -E "s#^(cat|/bin/sh): ##"
echo "env NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"'
# ... and the driver library load, the linker cache and GPU 0's by-path links.
probe+=$'\n'$e2e_t4_probe

out=$(e2e_podman_run --device nvidia.com/gpu=0 --rootfs "$(e2e_rootfs_copy gpu0)" /bin/sh -c "$probe" 2>&1) ||
  e2e_fail "podman run --device nvidia.com/gpu=0 failed: $out"
e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
e2e_expect_line "$out" "crw-rw-rw- 195, 255 /dev/nvidiactl"
e2e_expect_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
e2e_expect_line "$out" "file /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.183.01"
e2e_expect_line "$out" "file /usr/bin/nvidia-smi"
e2e_expect_line "$out" "file /etc/vulkan/icd.d/nvidia_icd.json"
e2e_expect_line "$out" "libcuda read-only"
# The node is real and allowed by the device cgroup: the missing driver answers ENXIO, not EPERM.
e2e_expect_gpu0_enxio "$out"
e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=void"
e2e_check_t4_driver_loads "$out"
e2e_check_t4_no_gpu1 "$out"
echo "ok: podman --device nvidia.com/gpu=0"

out=$(e2e_podman_run --device nvidia.com/gpu=all --rootfs "$(e2e_rootfs_copy all)" /bin/sh -c "$probe" 2>&1) ||
  e2e_fail "podman run --device nvidia.com/gpu=all failed: $out"
e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
e2e_expect_line "$out" "file /usr/bin/nvidia-smi"
e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=void"
e2e_check_t4_driver_loads "$out"
e2e_check_t4_gpu1 "$out"
echo "ok: podman --device nvidia.com/gpu=all"

# Without a device request nothing is injected and no hook runs.
out=$(e2e_podman_run --rootfs "$(e2e_rootfs_copy none)" /bin/sh -c "$probe" 2>&1) ||
  e2e_fail "podman run without a device failed: $out"
e2e_check_t4_nothing "$out" "podman without a device"
echo "PASS: podman 4.3.1 refused the default spec (additionalGids) and ran nvidia.com/gpu=0 and nvidia.com/gpu=all from the one without them; libcuda.so.1 loads"
