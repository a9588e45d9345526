#!/usr/bin/env bash
# End to end for the runtime shim under containerd 1.6 (Debian 12's; it has no CDI, so the shim is the
# way GPUs reach its containers): a containerd daemon with all its state in the lab, `ctr run` with
# gpuctk-runtime as the runc binary of the runc v2 shim, against a spec generated with default output
# (createContainer hooks). A glibc container with NVIDIA_VISIBLE_DEVICES=0 sees GPU 0, its control node,
# driver files and env, loads libcuda.so.1 and gets the fixture's CUDA version, has the driver libraries
# in its ld.so.cache and GPU 0's /dev/dri/by-path links; one without the variable is unchanged; a bad
# request stops the container from starting, with gpuctk's reason.
#   usage: shim_containerd.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
gpuctk=$1
fixture=$2
e2e_init
command -v containerd >/dev/null && command -v ctr >/dev/null || e2e_skip "containerd is not installed"
command -v runc >/dev/null || e2e_skip "runc is not installed"
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"

# containerd by hand (no systemd here), CRI off, every path in the lab. Its environment reaches the
# runc shim and from there gpuctk-runtime: GPUCTK_CONFIG points the shim at the lab's spec.
mkdir -p "$LAB/containerd"
cat >"$LAB/containerd/config.toml" <<TOML
version = 2
root = "$LAB/containerd/root"
state = "$LAB/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$LAB/containerd/containerd.sock"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""
TOML
GPUCTK_CONFIG=$LAB/gpuctk.yaml setsid containerd --config "$LAB/containerd/config.toml" \
  >"$LAB/containerd/containerd.log" 2>&1 &
containerd_pid=$!
# The runc shim keeps its sockets and fifos under /run/containerd whatever the state dir; remove what
# this run made there, and the cgroups ctr made, once the daemon is gone.
e2e_cleanup_add "rmdir /run/containerd/runc/default /run/containerd/runc /run/containerd/fifo /run/containerd/s /run/containerd 2>/dev/null"
e2e_cleanup_add "find /sys/fs/cgroup -depth -type d -name 'gpuctk-e2e-*' -exec rmdir {} + 2>/dev/null; rmdir /sys/fs/cgroup/*/default 2>/dev/null"
e2e_cleanup_add "kill $containerd_pid; wait $containerd_pid"
CTR=(ctr --address "$LAB/containerd/containerd.sock")
for _ in $(seq 100); do
  "${CTR[@]}" version >/dev/null 2>&1 && break
  kill -0 "$containerd_pid" 2>/dev/null || e2e_fail "containerd exited: $(cat "$LAB/containerd/containerd.log")"
  sleep 0.1
done
"${CTR[@]}" version >/dev/null 2>&1 || e2e_fail "containerd did not come up: $(tail -20 "$LAB/containerd/containerd.log")"

# ctr_run NAME ENV COMMAND...: a container on its own copy of the glibc rootfs; ENV is "KEY=VALUE" or
# empty. (ctr takes the rootfs path as the first argument after the flags: --rootfs is a switch.)
ctr_run() {
  local name=$1 env=$2 rootfs
  shift 2
  rootfs=$(e2e_rootfs_copy "$name")
  local flags=(--rm --runc-binary "$LAB/bin/gpuctk-runtime" --rootfs)
  [ -n "$env" ] && flags=(--env "$env" "${flags[@]}")
  e2e_cleanup_add "${CTR[*]} task kill -s KILL $name; ${CTR[*]} container rm $name"
  "${CTR[@]}" run "${flags[@]}" "$rootfs" "$name" "$@"
}

out=$(ctr_run "gpuctk-e2e-gpu0-$$" NVIDIA_VISIBLE_DEVICES=0 /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "ctr run with NVIDIA_VISIBLE_DEVICES=0 failed: $out"
e2e_check_t4_gpu0 "$out" "containerd 1.6 with gpuctk-runtime as its runc"
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"

out=$(ctr_run "gpuctk-e2e-none-$$" "" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "ctr run without a request failed: $out"
e2e_check_t4_nothing "$out" "containerd without a request is unchanged"

if out=$(ctr_run "gpuctk-e2e-bad-$$" NVIDIA_VISIBLE_DEVICES=7 /bin/true 2>&1); then
  e2e_fail "containerd started a container asking for a GPU that does not exist: $out"
fi
grep -qF 'unknown device \"nvidia.com/gpu=7\"' <<<"$out" || grep -qF 'unknown device "nvidia.com/gpu=7"' <<<"$out" ||
  e2e_fail "ctr does not show gpuctk's reason: $out"
echo "ok: containerd refuses NVIDIA_VISIBLE_DEVICES=7: ${out//$'\n'/ }"
echo "PASS: containerd 1.6 ran gpuctk-runtime as its runc binary; libcuda.so.1 loads"
