#!/usr/bin/env bash
# End to end: a spec written before a reboot still names the right devices after it. `cdi generate`
# leaves out the major and minor of nodes whose major the kernel hands out when the module loads
# (nvidia-uvm here); then the host's /dev/nvidia-uvm is made again with another major, as after a reboot
# or a driver reload. Through each way the spec reaches a container, the container gets the node with
# the new major and the device cgroup lets it open it (ENXIO from the absent driver, not EPERM):
#   - podman reading the spec from /etc/cdi (--device nvidia.com/gpu=0);
#   - podman running `gpuctk hook precreate` from hooks.d (NVIDIA_VISIBLE_DEVICES=0);
#   - runc through the shim `gpuctk-runtime`.
#   usage: dynamic_major.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init --own-cdi gpuctk fixture -- "$@"
e2e_podman_init
e2e_needs runc "python3 (it writes config.json)"
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture" generate "${e2e_podman431_spec_options[@]}"
export GPUCTK_CONFIG=$LAB/gpuctk.yaml
spec=$LAB/cdi/nvidia.yaml

# The spec has the fixed majors (195) and no major for nvidia-uvm.
uvm_block=$(awk '/- path: "\/dev\/nvidia-uvm"$/ {p=1; print; next} p && /- path:/ {p=0} p' "$spec")
[ -n "$uvm_block" ] || e2e_fail "the spec has no /dev/nvidia-uvm node"
grep -q "major:" <<<"$uvm_block" && e2e_fail "the spec pins nvidia-uvm's major: $uvm_block"
grep -q 'type: "c"' <<<"$uvm_block" || e2e_fail "the nvidia-uvm node has no type: $uvm_block"
grep -q "major: 195" "$spec" || e2e_fail "the spec has no fixed major 195"

# The reboot: nvidia-uvm comes back with another major.
old=$(stat -c %t "$dev_root/dev/nvidia-uvm")
new_major=487
[ "$((16#$old))" != "$new_major" ] || e2e_fail "the fixture's nvidia-uvm already has major $new_major"
rm -f "$dev_root/dev/nvidia-uvm"
mknod -m 0666 "$dev_root/dev/nvidia-uvm" c "$new_major" 0

# shellcheck disable=SC2016  # expanded in the container
probe='ls -l /dev/nvidia-uvm /dev/nvidia0 | while read -r mode _ _ _ major minor _ _ _ path; do echo "$mode $major $minor $path"; done
cat /dev/nvidia-uvm 2>&1 | sed -E "s#^(cat|/bin/sh): ##"'
check() {
  local out=$1 who=$2
  e2e_expect_line "$out" "crw-rw-rw- $new_major, 0 /dev/nvidia-uvm"
  e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_line "$out" "can't open '/dev/nvidia-uvm': No such device or address"
  echo "ok: $who"
}

# 1. podman reads the spec itself.
etc_spec=/etc/cdi/gpuctk-e2e.yaml  # the test's own /etc/cdi (e2e_own_cdi_dirs)
cp "$spec" "$etc_spec"
out=$(e2e_podman_run --device nvidia.com/gpu=0 --rootfs "$(e2e_rootfs_copy cdi)" /bin/sh -c "$probe" 2>&1) ||
  e2e_fail "podman run --device nvidia.com/gpu=0 failed: $out"
check "$out" "podman --device nvidia.com/gpu=0 (spec in /etc/cdi)"
rm -f "$etc_spec"

# 2. podman runs the precreate hook, which applies the same spec.
e2e_precreate_hook_dir "$LAB/hooks.d" "$gpuctk" "$LAB/gpuctk.yaml"
out=$(e2e_podman_run --hooks-dir "$LAB/hooks.d" -e NVIDIA_VISIBLE_DEVICES=0 --rootfs "$(e2e_rootfs_copy hook)" \
  /bin/sh -c "$probe" 2>&1) || e2e_fail "podman run with the precreate hook failed: $out"
check "$out" "podman hooks.d precreate"
grep -q "injected nvidia.com/gpu=0 from $spec" "$LAB/gpuctk.log" ||
  e2e_fail "the hook did not use the installed spec: $(cat "$LAB/gpuctk.log")"

# 3. runc through the shim.
e2e_shim_run shim NVIDIA_VISIBLE_DEVICES=0 "$probe" || e2e_fail "runc via the shim failed: $out"
check "$out" "runc via gpuctk-runtime"
echo "PASS: a spec written before nvidia-uvm changed major gave every container the new major (podman CDI, precreate hook, shim)"
