#!/usr/bin/env bash
# Issue 25's end to end: gpuctk-device-plugin's own answers, handed to containerd as the kubelet hands them.
# The host is engines_containerd.sh's (the real-package host: Debian 12's real 535 driver user space, GPU
# 0 an A10, GPU 1 an A30 in MIG mode with two 2g.12gb MIG devices; the CUDA 11.8 probe image), with
# containerd 1.7 (Debian 13, trixie) or 2.1 (Debian unstable, sid) started once, its handler "nvidia" (the
# shim gpuctk-runtime) and CDI configured by `gpuctk runtime configure --cdi`.
#
# The plugin discovers the host the CDI spec was generated from: the same manifest, the same device
# nodes and /proc (dev root), through the fixture's mock NVML (the fixture's driver root, nvml mode). The
# real libnvidia-ml cannot initialise without a kernel module, and /proc alone has neither MIG profiles
# nor MIG UUIDs, which the plugin's MIG resources need; the mock serves the manifest's GPUs, UUIDs, minors
# and MIG devices, so the plugin's devices are the spec's. The spec itself has no MIG UUID names (cdi
# generate ran from /proc), so the MIG case answers by index (deviceIDStrategy index: "1:0", as the spec
# names it), the other two by UUID.
#
# For every deviceListStrategy (envvar, volume-mounts, cdi-annotations, cdi-cri; the config file in
# NVIDIA's format, as the plugin reads it) three allocations, each from a daemon started on its config
# and asked over the device plugin API by the kubelet stand-in (tests/plugin/kubelet.py allocate):
#   gpu      migStrategy mixed, nvidia.com/gpu: GPU 0 by UUID;
#   mig      migStrategy mixed, deviceIDStrategy index, nvidia.com/mig-2g.12gb: the MIG device 1:0;
#   replica  sharing.timeSlicing (2 replicas of nvidia.com/gpu): the replica <uuid of GPU 0>::1.
# Each answer runs one pod through the handler "nvidia" (cri.py --allocate-response: envs, mounts,
# devices, annotations and CDI devices as the kubelet passes them on over CRI), and the CDI strategies'
# GPU answers one more through the default handler (runc: CDI needs no runtime class). Each container
# loads the real libcuda.so.1, whose cudaGetDeviceCount reaches the kernel boundary, lists libcuda.so.1 in its
# linker cache and has exactly the allocated GPU's nodes (engines_check_gpu); after each pod nothing is
# left (engines_expect_clean), and after containerd stops no process or mount of it.
#   usage: engines_plugin_containerd.sh <gpuctk> <gpuctk-fixture> <trixie|sid> <gpuctk-device-plugin>
#          <the kubelet's deviceplugin api.proto>
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$(dirname "$0")/../engines/lib.sh"
gpuctk=$1
fixture=$2
suite=$3
plugin=$4
plugin_proto=$5
kubelet=$(cd "$(dirname "$0")/../plugin" && pwd)/kubelet.py
e2e_init
start_all=$SECONDS
e2e_needs runc
command -v cc >/dev/null || e2e_skip "no C compiler (cc) to build the images' programs"
engines_python_check
[ -x "$plugin" ] || e2e_fail "no gpuctk-device-plugin at $plugin"
[ -f "$plugin_proto" ] || e2e_fail "no device plugin api.proto at $plugin_proto (scripts/deps.sh plugin)"
engines_containerd_lab "$gpuctk" "$fixture" "$suite"
out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" --runtime-path "$shim" --cdi 2>&1) ||
  e2e_fail "runtime configure failed: $out"
engines_containerd_start "$c"
engines_import "$LAB/images/pause.tar" "$LAB/images/probe.tar"
v="containerd $containerd_version"

# The plugin's view of the host: the spec's dev root (its nodes and /proc) and, as driver root, the mock
# NVML's (engines_mock_nvml_root).
manifest=$LAB/devices/manifest/host.yaml
mock_driver_root=$(engines_mock_nvml_root "$fixture" plugin-host)
uuid0=$(sed -n '/^  - minor: 0$/,/uuid:/s/^    uuid: //p' "$manifest")
mig0=$(sed -n 's/^ *- {gi: 1, ci: 0, profile: 2g.12gb, uuid: \(MIG-[0-9a-f-]*\),.*/\1/p' "$manifest")
if [ -z "$uuid0" ] || [ -z "$mig0" ]; then e2e_fail "no GPU 0 UUID or MIG 1:0 UUID in $manifest"; fi
gpu0=$(engines_spec_nodes 0)
mig=$(engines_spec_nodes 1:0)
[ "$gpu0" = /dev/nvidia0 ] || e2e_fail "the spec gives nvidia.com/gpu=0 the nodes $gpu0"
caps=/dev/nvidia-caps/nvidia-cap
[ "$mig" = "${caps}147 ${caps}148 /dev/nvidia1" ] || e2e_fail "the spec gives nvidia.com/gpu=1:0 the nodes $mig"
setup_s=$((SECONDS - start_all))

# plugin_config FILE STRATEGY ID_STRATEGY [SHARING]: the plugin's config file in NVIDIA's format.
plugin_config() {
  cat >"$1" <<YAML
version: v1
flags:
  migStrategy: mixed
  plugin:
    deviceListStrategy: [$2]
    deviceIDStrategy: $3
YAML
  # The envvar answers also pass the device specs (passDeviceSpecs: CRI's Devices).
  [ "$2" != envvar ] || echo "    passDeviceSpecs: true" >>"$1"
  [ -z "${4:-}" ] || cat >>"$1" <<'YAML'
sharing:
  timeSlicing:
    resources:
      - name: nvidia.com/gpu
        replicas: 2
YAML
}

# The answers: one daemon life per case, all in one kubelet stand-in run.
strategies=(envvar volume-mounts cdi-annotations cdi-cri)
cases=()
mkdir -p "$LAB/plugin"
for s in "${strategies[@]}"; do
  plugin_config "$LAB/plugin/$s-gpu.yaml" "$s" uuid
  plugin_config "$LAB/plugin/$s-mig.yaml" "$s" index
  plugin_config "$LAB/plugin/$s-replica.yaml" "$s" uuid shared
  cases+=(--case "$s-gpu" "$LAB/plugin/$s-gpu.yaml" nvidia.com/gpu "$uuid0")
  cases+=(--case "$s-mig" "$LAB/plugin/$s-mig.yaml" nvidia.com/mig-2g.12gb "$mig0")
  cases+=(--case "$s-replica" "$LAB/plugin/$s-replica.yaml" nvidia.com/gpu "$uuid0::1")
done
start_allocate=$SECONDS
PYTHONDONTWRITEBYTECODE=1 "$engines_python" "$kubelet" allocate "$plugin" "$plugin_proto" "$LAB/plugin-stubs" "$LAB/answers" "${cases[@]}" -- \
  --driver-root "$mock_driver_root" --container-driver-root "$mock_driver_root" --dev-root "$dev_root" \
  --container-dev-root "$dev_root" --device-discovery-strategy nvml >"$LAB/allocate.out" 2>"$LAB/allocate.err" ||
  e2e_fail "kubelet.py allocate failed: $(cat "$LAB/allocate.err")"
allocate_s=$((SECONDS - start_allocate))
sed "s/: {.*//" "$LAB/allocate.out"  # per answer: what was listed, what was asked, Allocate's round trip
# The plugin's devices are the spec's host: under migStrategy mixed nvidia.com/gpu is GPU 0 alone (GPU 1
# is in MIG mode), nvidia.com/mig-2g.12gb GPU 1's two MIG devices, and time-slicing makes GPU 0 two replicas.
mig1=$(sed -n 's/^ *- {gi: 2, ci: 0, profile: 2g.12gb, uuid: \(MIG-[0-9a-f-]*\),.*/\1/p' "$manifest")
for s in "${strategies[@]}"; do
  for want in "$s-gpu: nvidia.com/gpu $uuid0" "$s-mig: nvidia.com/mig-2g.12gb $mig0,$mig1" \
    "$s-replica: nvidia.com/gpu $uuid0::0,$uuid0::1"; do
    grep -qxF "listed $want" "$LAB/allocate.out" ||
      e2e_fail "the plugin did not list ${want#*: } for ${want%%:*}: $(grep "^listed ${want%%:*}:" "$LAB/allocate.out")"
  done
done

# answer CASE: the answer as text, one item a line (env K=V, mount HOST CONTAINER ro|rw, device ...,
# annotation K=V, cdi NAME), sorted (as LC_ALL=C sort does); the CDI annotation's per-answer key suffix (a random UUID, as
# NVIDIA's plugin takes) as <id>.
answer() {
  "$engines_python" - "$LAB/answers/$1.json" <<'PY'
import json, re, sys
a = json.load(open(sys.argv[1]))
lines = [f"env {k}={v}" for k, v in a["envs"].items()]
lines += [f"mount {m['host_path']} {m['container_path']} {'ro' if m['read_only'] else 'rw'}" for m in a["mounts"]]
lines += [f"device {d['host_path']} {d['container_path']} {d['permissions']}" for d in a["devices"]]
lines += ["annotation " + re.sub(r"_[0-9a-f-]{36}=", "_<id>=", f"{k}={v}") for k, v in a["annotations"].items()]
lines += [f"cdi {n}" for n in a["cdi_devices"]]
print("\n".join(sorted(lines)))
PY
}

# want_answer STRATEGY ID NODES: the answer NVIDIA's plugin gives for the device answered as ID, whose
# nodes are NODES (envvar with passDeviceSpecs: the control nodes and NODES, host paths in the dev root).
want_answer() {
  local node
  case $1 in
    envvar)
      echo "env NVIDIA_VISIBLE_DEVICES=$2"
      for node in /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-modeset $3; do
        echo "device $dev_root$node $node rw"
      done
      ;;
    volume-mounts) printf '%s\n' "env NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices" \
      "mount /dev/null /var/run/nvidia-container-devices/$2 rw" ;;
    cdi-annotations) echo "annotation cdi.k8s.io/nvidia-device-plugin_<id>=nvidia.com/gpu=$2" ;;
    cdi-cri) echo "cdi nvidia.com/gpu=$2" ;;
  esac
}

start_pods=$SECONDS
for s in "${strategies[@]}"; do
  for kind in gpu mig replica; do
    case $kind in
      gpu) id=$uuid0 nodes=$gpu0 what="GPU 0 ($uuid0)" ;;
      mig) id=1:0 nodes=$mig what="MIG 1:0 ($mig0, nvidia.com/mig-2g.12gb)" ;;
      replica) id=$uuid0 nodes=$gpu0 what="time-sliced replica $uuid0::1" ;;
    esac
    got=$(answer "$s-$kind") || e2e_fail "$s-$kind: cannot read the answer"
    want=$(want_answer "$s" "$id" "$nodes" | LC_ALL=C sort)
    [ "$got" = "$want" ] || e2e_fail "$s-$kind: the plugin answered:
$got
want:
$want"
    out=$(engines_pod "plugin-$s-$kind" --handler nvidia --allocate-response "$LAB/answers/$s-$kind.json" 2>&1) ||
      e2e_fail "$s-$kind: the pod failed: $out"
    engines_expect_clean "$s-$kind"
    engines_check_gpu "$out" "$v, handler nvidia, deviceListStrategy $s, $what: ${want//$'\n'/; }" "$nodes"
    # The CDI answers need no runtime class: the same answer through the default handler (runc).
    if [ "$kind" = gpu ] && [ "${s#cdi-}" != "$s" ]; then
      out=$(engines_pod "plugin-$s-$kind-runc" --allocate-response "$LAB/answers/$s-$kind.json" 2>&1) ||
        e2e_fail "$s-$kind, default handler: the pod failed: $out"
      engines_expect_clean "$s-$kind, default handler"
      engines_check_gpu "$out" "$v, default handler, deviceListStrategy $s, $what" "$nodes"
    fi
  done
done
pods_s=$((SECONDS - start_pods))
if grep -i 'error' "$LAB/gpuctk.log"; then e2e_fail "gpuctk logged an error"; fi

engines_containerd_stop_clean
echo "time: setup ${setup_s} s, ${#strategies[@]}x3 allocations ${allocate_s} s, ${#strategies[@]}x3+2 pods ${pods_s} s, total $((SECONDS - start_all)) s"
echo "PASS: $v through CRI and the handler \"nvidia\": gpuctk-device-plugin's answers for GPU 0, a MIG device and a time-sliced replica, for every deviceListStrategy (envvar, volume-mounts, cdi-annotations, cdi-cri), the CDI ones for GPU 0 through the default handler too; the plugin listed the spec's devices; nothing left behind"
