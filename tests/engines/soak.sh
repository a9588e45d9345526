#!/usr/bin/env bash
# Soak (not in the default suite; 1000 pods take about 9 minutes on two cores): CYCLES pods (default
# 1000), one after another, through the kubelet stand-in on containerd 2.x (Debian unstable), set up as
# tests/e2e/engines_containerd.sh sets it up, each pod running the real CUDA runtime's probe, the device
# plugin's request forms taken in turn:
#   CDI devices (GPU 0; MIG device 1:0), a cdi.k8s.io annotation (all), NVIDIA_VISIBLE_DEVICES=<uuid> and
#   <uuid>::1 through the "nvidia" handler, the volume-mounts answer (1:1) through it, and a pod without a
#   GPU through it.
# Each pod must get what it asked for (its --expect lines). After a warm-up of one pod per form, and again
# after the last cycle, it takes: the host's mount points, containerd's open fds, the cgroups below the pods'
# parent and in all hierarchies, the processes of the lab (containerd only; no shim), containerd's records
# (CRI pods and containers, containers, tasks, leases and snapshots of the k8s.io namespace), what the runc
# shim keeps under /run/containerd, the CDI directory, and the lines gpuctk logged as errors. Any
# difference is a leak: the figures are printed and the soak fails.
#   usage: soak.sh <gpuctk> <gpuctk-fixture> [CYCLES]
#   e.g.   sudo bash tests/engines/soak.sh build/src/gpuctk build/fixtures/builder/gpuctk-fixture 1000
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../e2e/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$here/lib.sh"
gpuctk=$1
fixture=$2
cycles=${3:-1000}
e2e_init
e2e_needs runc
engines_python_check
engines_fetch sid
engines_real_host "$gpuctk" "$fixture"
engines_probe_image
engines_pause_image
c=$LAB/containerd
engines_containerd_config "$c"
out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" \
  --runtime-path "$LAB/bin/gpuctk-runtime" --cdi 2>&1) || e2e_fail "runtime configure failed: $out"
engines_containerd_start "$c"
engines_import "$LAB/images/pause.tar" "$LAB/images/probe.tar"

uuid0=$(sed -n '/^  - minor: 0$/,/uuid:/s/^    uuid: //p' "$LAB/devices/manifest/host.yaml")
gpu="--expect 'cudaGetDeviceCount: 100 cudaErrorNoDevice'"
nodes() { echo "--expect 'gpu nodes: $(engines_spec_nodes "$1")'"; }
forms=(
  "--cdi-device nvidia.com/gpu=0 $gpu $(nodes 0)"
  "--cdi-device nvidia.com/gpu=1:0 $gpu $(nodes 1:0)"
  "--annotation cdi.k8s.io/soak=nvidia.com/gpu=all $gpu $(nodes all)"
  "--handler nvidia --env NVIDIA_VISIBLE_DEVICES=$uuid0 $gpu $(nodes 0)"
  "--handler nvidia --env NVIDIA_VISIBLE_DEVICES=$uuid0::1 $gpu $(nodes 0)"
  "--handler nvidia --env NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices --mount /dev/null:/var/run/nvidia-container-devices/1:1 $gpu $(nodes 1:1)"
  "--handler nvidia --expect 'cudaGetDeviceCount: 35 cudaErrorInsufficientDriver' --expect 'gpu nodes: '"
)
soak() {  # soak NAME CYCLES
  local args=() form
  for form in "${forms[@]}"; do args+=(--form "$form --image gpuctk.test/probe:1 --log-dir $LAB/pods --cgroup-parent /$engines_cgroup"); done
  engines_cri soak --name "$1-$$" --cycles "$2" "${args[@]}" -- /bin/sh -c "$engines_probe"
}

# figures FILE: one "what: value" line per thing a pod must not leave behind.
figures() {
  local ns=(-n k8s.io)
  {
    echo "mount points: $(awk '{ print $5 }' /proc/self/mountinfo | sort | sha256sum | cut -c1-16) ($(wc -l </proc/self/mountinfo))"
    echo "mounts under the lab: $(awk -v d="$LAB/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l)"
    echo "containerd fds: $(find "/proc/$containerd_pid/fd" -mindepth 1 | wc -l)"
    echo "cgroups below the pods' parent: $(find /sys/fs/cgroup/*/"$engines_cgroup" -mindepth 1 -type d 2>/dev/null | wc -l)"
    echo "cgroups: $(find /sys/fs/cgroup -type d 2>/dev/null | grep -c "$engines_cgroup\|/k8s.io\|gpuctk" || true)"
    echo "lab processes: $(pgrep -f -- "$LAB/" | grep -vx "$containerd_pid" | wc -l)"
    echo "shims: $(pgrep -f -- "-address $containerd_sock" | wc -l)"
    echo "CRI: $(engines_cri state | tr '\n' ' ')"
    echo "containers: $("${CTR[@]}" "${ns[@]}" containers ls -q | wc -l)"
    echo "tasks: $("${CTR[@]}" "${ns[@]}" tasks ls -q | wc -l)"
    echo "leases: $("${CTR[@]}" "${ns[@]}" leases ls -q | wc -l)"
    echo "snapshots: $("${CTR[@]}" "${ns[@]}" snapshots ls | tail -n +2 | wc -l)"
    echo "task state dirs: $(find "$c/state/io.containerd.runtime.v2.task/k8s.io" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
    echo "runc state dirs: $(find /run/containerd/runc/k8s.io -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
    echo "CDI directory: $(cat "$LAB"/cdi/* | sha256sum | cut -c1-16) ($(ls "$LAB/cdi" | wc -l) files)"
    echo "gpuctk errors: $(grep -ci 'error' "$LAB/gpuctk.log" || true)"
  } >"$1"
}

soak warmup "${#forms[@]}" >/dev/null || e2e_fail "the warm-up pods failed"
sleep 2
figures "$LAB/before"
start=$(date +%s)
soak soak "$cycles" || e2e_fail "the soak failed"
seconds=$(($(date +%s) - start))
sleep 2
figures "$LAB/after"
echo "figures after the warm-up and after $cycles pods ($seconds s, $((seconds * 1000 / cycles)) ms a pod):"
paste -d'|' "$LAB/before" "$LAB/after" | sed 's/|/   ->   /'
diff "$LAB/before" "$LAB/after" >/dev/null || e2e_fail "something leaked (before -> after above)"
engines_containerd_stop
left=$(pgrep -f -- "$LAB/" || true)
[ -z "$left" ] || e2e_fail "processes left after containerd stopped: $left"
echo "PASS: $cycles pods through CRI on containerd $containerd_version, ${#forms[@]} request forms, nothing leaked"
