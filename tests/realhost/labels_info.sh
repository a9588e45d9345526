#!/usr/bin/env bash
# `gpuctk labels` and `gpuctk info` with default options on the real-package host (tests/realhost): the real
# NVML cannot start without the kernel module, so both fall back to /proc and say so once; the labels are
# GPU Feature Discovery's for two A10s and the fetched packages' driver version; info names the driver, both
# GPUs, the control nodes and the library directories of Debian's layout.
#   usage: labels_info.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
gpuctk=$1
fixture=$2
realhost_lab "$fixture"
v=$real_version
IFS=. read -r major minor rev <<<"$v"
fallback="nvml: nvmlInit_v2: Driver Not Loaded; GPUs from /proc/driver/nvidia instead"

expect() {  # expect WHAT ACTUAL EXPECTED
  [ "$2" = "$3" ] || realhost_fail "$1:
$(diff <(echo "$3") <(echo "$2") | sed 's/^/  /')
(< want, > got)"
}

"$gpuctk" labels --driver-root "$real_root" --dev-root "$real_dev_root" --output - >"$LAB/labels" 2>"$LAB/labels.err" ||
  realhost_fail "gpuctk labels failed: $(cat "$LAB/labels.err")"
expect "labels stderr" "$(cat "$LAB/labels.err")" "gpuctk: warning: $fallback"
expect "labels" "$(cat "$LAB/labels")" "nvidia.com/cuda.driver-version.full=$v
nvidia.com/cuda.driver-version.major=$major
nvidia.com/cuda.driver-version.minor=$minor
nvidia.com/cuda.driver-version.revision=$rev
nvidia.com/cuda.driver.major=$major
nvidia.com/cuda.driver.minor=$minor
nvidia.com/cuda.driver.rev=$rev
nvidia.com/gpu.count=2
nvidia.com/gpu.mode=compute
nvidia.com/gpu.present=true
nvidia.com/gpu.product=NVIDIA-A10
nvidia.com/gpu.replicas=1
nvidia.com/gpu.sharing-strategy=none
nvidia.com/mps.capable=false"
echo "ok: labels"

# info also lists the CDI specs the hooks would read: a config of the test's own names an empty spec
# directory, so what the machine has in /etc/cdi does not change the output.
mkdir -p "$LAB/cdi"
echo "spec-dirs: [$LAB/cdi]" >"$LAB/gpuctk.yaml"
GPUCTK_CONFIG=$LAB/gpuctk.yaml "$gpuctk" info --driver-root "$real_root" --dev-root "$real_dev_root" >"$LAB/info" 2>"$LAB/info.err" ||
  realhost_fail "gpuctk info failed: $(cat "$LAB/info.err")"
expect "info stderr" "$(cat "$LAB/info.err")" ""
expect "info" "$(cat "$LAB/info")" "Driver:      $v (proprietary kernel module)
CUDA:        unknown (no NVML)
GPU source:  /proc/driver/nvidia
GPUs:        2
  GPU 0  NVIDIA A10  0000:17:00.0  /dev/nvidia0  GPU-4f0d2c6e-8a1b-4c3d-9e5f-6a7b8c9d0e1f
  GPU 1  NVIDIA A10  0000:65:00.0  /dev/nvidia1  GPU-7a1e3b5c-2d4f-4a6b-8c0d-1e2f3a4b5c6d
Control:     /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset
Libraries:   compute 7, graphics 15, ngx 1, utility 2, video 4
Other files: binary 4, config 7, firmware 2, xorg_module 2
Lib dirs:    /usr/lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu/nvidia/current
CDI specs:   none
Warnings:    1
  $fallback"
echo "ok: info"
echo "PASS: gpuctk labels and info on Debian's real $v packages"
