#!/usr/bin/env bash
# The kubelet's path on the containerd clusters run today: containerd 1.7 (Debian 13) or 2.x (Debian
# unstable), fetched into the test cache and started with all its paths in the lab, on its own `containerd
# config default` output into which `gpuctk runtime configure --cdi` wrote the runtime handler "nvidia"
# (and, on 1.7, turned CDI on), through its default drop-in; `containerd config dump` must show both. A kubelet stand-in (cri.py) runs
# one pod per case over CRI v1 (host network, the pause image as the sandbox image), with the device
# plugin's answers as the kubelet passes them on:
#   1. CreateContainer's CDI devices: nvidia.com/gpu=0, a MIG device (1:0), all;
#   2. cdi.k8s.io/<key> annotations instead;
#   3. NVIDIA_VISIBLE_DEVICES=<uuid>, and a time-sliced replica <uuid>::1, through the handler "nvidia";
#   4. the volume-mounts answer (/dev/null on /var/run/nvidia-container-devices/<id>) through that handler;
#   5. a pod without a GPU through that handler: nothing injected, no error logged.
# The host is the real-package host (Debian 12's real 535 driver packages) with two GPUs, GPU 1 in MIG
# mode; the image holds the real CUDA 11.8 runtime: each GPU pod's cudaGetDeviceCount reaches the kernel
# boundary through the real libcuda.so.1 (cudaErrorNoDevice), its linker cache lists libcuda.so.1, and it
# has exactly the GPU nodes it asked for. After every case containerd lists no pod and no container, no
# shim, mount or cgroup of it is left; once containerd stops, no process of it is left.
#   usage: engines_containerd.sh <gpuctk> <gpuctk-fixture> <trixie|sid>
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$(dirname "$0")/../engines/lib.sh"
e2e_init gpuctk fixture suite -- "$@"
e2e_needs runc
command -v cc >/dev/null || e2e_skip "no C compiler (cc) to build the images' programs"
engines_python_check
engines_containerd_lab "$gpuctk" "$fixture" "$suite"

# The operator's command: the handler "nvidia" and CDI, into the engine's own default file.
out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" --runtime-path "$shim" --cdi 2>&1) ||
  e2e_fail "runtime configure failed: $out"
case "$containerd_version" in
  1.*) expected="containerd: runtime \"nvidia\" ($shim) added, CDI enabled" ;;
  *) expected="containerd: runtime \"nvidia\" ($shim) added" ;;
esac
# gpuctk's default drop-in, which config.toml then imports.
expected+="; $c/conf.d/99-zz-gpuctk.toml written; restart containerd
containerd: import $c/conf.d/99-zz-gpuctk.toml added; $c/config.toml written (the original kept as $c/config.toml.gpuctk-backup); restart containerd"
[ "$out" = "$expected" ] || e2e_fail "unexpected output of runtime configure: $out (want: $expected)"
# containerd's own reading of the file (its defaults merged in).
"$engines_root/usr/bin/containerd" --config "$c/config.toml" config dump >"$c/dump.toml" 2>"$c/dump.err" ||
  e2e_fail "containerd config dump failed: $(cat "$c/dump.err")"
case "$containerd_version" in
  1.*) plugin=io.containerd.grpc.v1.cri ;;
  *) plugin=io.containerd.cri.v1.runtime ;;
esac
nvidia=(plugins "$plugin" containerd runtimes nvidia)
[ "$(engines_toml_get "$c/dump.toml" "${nvidia[@]}" runtime_type)" = io.containerd.runc.v2 ] ||
  e2e_fail "the dump has no runc v2 runtime \"nvidia\": $(engines_toml_get "$c/dump.toml" "${nvidia[@]}")"
[ "$(engines_toml_get "$c/dump.toml" "${nvidia[@]}" options BinaryName)" = "$shim" ] ||
  e2e_fail "the dump's BinaryName of \"nvidia\" is not $shim: $(engines_toml_get "$c/dump.toml" "${nvidia[@]}")"
[ "$(engines_toml_get "$c/dump.toml" plugins "$plugin" enable_cdi)" = true ] ||
  e2e_fail "the dump has CDI off: enable_cdi = $(engines_toml_get "$c/dump.toml" plugins "$plugin" enable_cdi)"
[ "$(engines_toml_get "$c/dump.toml" plugins "$plugin" cdi_spec_dirs)" = "[\"$LAB/cdi\"]" ] ||
  e2e_fail "the dump's cdi_spec_dirs are $(engines_toml_get "$c/dump.toml" plugins "$plugin" cdi_spec_dirs)"
echo "ok: containerd $containerd_version config dump: runtime \"nvidia\" runs $shim, CDI on, specs from $LAB/cdi"

engines_containerd_start "$c"
engines_import "$LAB/images/pause.tar" "$LAB/images/probe.tar"

gpu0=$(engines_spec_nodes 0)
mig=$(engines_spec_nodes 1:0)
mig1=$(engines_spec_nodes 1:1)
all=$(engines_spec_nodes all)
# The spec itself: GPU 0 is /dev/nvidia0 alone; a MIG device is its parent's node and the access caps of
# its GPU and compute instance (the minors of the driver's mig-minors table: gpu1/gi1 147, gpu1/gi1/ci0
# 148, gpu1/gi2 156, gpu1/gi2/ci0 157); all is both GPUs and every MIG device's caps.
caps=/dev/nvidia-caps/nvidia-cap
[ "$gpu0" = /dev/nvidia0 ] || e2e_fail "the spec gives nvidia.com/gpu=0 the nodes $gpu0"
[ "$mig" = "${caps}147 ${caps}148 /dev/nvidia1" ] || e2e_fail "the spec gives nvidia.com/gpu=1:0 the nodes $mig"
[ "$mig1" = "${caps}156 ${caps}157 /dev/nvidia1" ] || e2e_fail "the spec gives nvidia.com/gpu=1:1 the nodes $mig1"
[ "$all" = "${caps}147 ${caps}148 ${caps}156 ${caps}157 /dev/nvidia0 /dev/nvidia1" ] ||
  e2e_fail "the spec gives nvidia.com/gpu=all the nodes $all"
uuid0=$(sed -n '/^  - minor: 0$/,/uuid:/s/^    uuid: //p' "$LAB/devices/manifest/host.yaml")
[ -n "$uuid0" ] || e2e_fail "no GPU 0 UUID in devices.yaml"

# case CASE [POD OPTIONS]: one pod; prints its output; fails when the kubelet stand-in failed; then the
# lab must be clean.
case_pod() {
  local name=$1 out
  shift
  out=$(engines_pod "$name" "$@" 2>&1) || e2e_fail "$name: the pod failed: $out"
  engines_expect_clean "$name" >&2
  echo "$out"
}

v="containerd $containerd_version"
# 1. CDI devices in CreateContainer.
out=$(case_pod cdi-gpu0 --cdi-device nvidia.com/gpu=0)
engines_check_gpu "$out" "$v, CDIDevices nvidia.com/gpu=0" "$gpu0"
out=$(case_pod cdi-mig --cdi-device nvidia.com/gpu=1:0)
engines_check_gpu "$out" "$v, CDIDevices nvidia.com/gpu=1:0 (MIG)" "$mig"
out=$(case_pod cdi-all --cdi-device nvidia.com/gpu=all)
engines_check_gpu "$out" "$v, CDIDevices nvidia.com/gpu=all" "$all"

# 2. cdi.k8s.io annotations.
out=$(case_pod annotation --annotation "cdi.k8s.io/gpuctk-e2e=nvidia.com/gpu=$uuid0")
engines_check_gpu "$out" "$v, annotation cdi.k8s.io/gpuctk-e2e=nvidia.com/gpu=$uuid0" "$gpu0"

# 3. The device plugin's env answer through the handler "nvidia" (gpuctk-runtime).
out=$(case_pod env-uuid --handler nvidia --env "NVIDIA_VISIBLE_DEVICES=$uuid0")
engines_check_gpu "$out" "$v, handler nvidia, NVIDIA_VISIBLE_DEVICES=$uuid0" "$gpu0"
grep -q "injected nvidia.com/gpu=$uuid0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"
out=$(case_pod env-replica --handler nvidia --env "NVIDIA_VISIBLE_DEVICES=$uuid0::1")
engines_check_gpu "$out" "$v, handler nvidia, NVIDIA_VISIBLE_DEVICES=$uuid0::1 (time-sliced replica)" "$gpu0"

# 4. The device plugin's volume-mounts answer through the handler (the plugin also sets the variable to
# the directory, which gpuctk then ignores), for the second MIG device by index (deviceIDStrategy index:
# MIG UUIDs come from NVML only, and a spec made without the kernel module has none).
out=$(case_pod volume-mount --handler nvidia --env NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices \
  --mount "/dev/null:/var/run/nvidia-container-devices/1:1")
engines_check_gpu "$out" "$v, handler nvidia, volume mount /var/run/nvidia-container-devices/1:1 (MIG)" "$mig1"

# 5. No GPU through the handler: nothing injected, nothing logged as an error.
log_lines=$(wc -l <"$LAB/gpuctk.log")
out=$(case_pod no-gpu --handler nvidia)
engines_check_nothing "$out" "$v, handler nvidia, no GPU requested"
if tail -n +"$((log_lines + 1))" "$LAB/gpuctk.log" | grep -i 'error'; then
  e2e_fail "gpuctk logged an error for a pod without a GPU"
fi
if grep -i 'error' "$LAB/gpuctk.log"; then e2e_fail "gpuctk logged an error"; fi

engines_containerd_stop_clean
echo "PASS: containerd $containerd_version through CRI: CDI devices (GPU, MIG, all), cdi.k8s.io annotations, NVIDIA_VISIBLE_DEVICES (UUID, replica) and volume mounts through the \"nvidia\" handler, and a pod without a GPU; nothing left behind"
