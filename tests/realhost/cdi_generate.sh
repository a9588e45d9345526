#!/usr/bin/env bash
# `gpuctk cdi generate` with default options, in each mode, on the real-package host: the driver root is a
# Debian 12 root in which Debian's real NVIDIA packages installed themselves (libraries in
# /usr/lib/x86_64-linux-gnu/nvidia/current, reached from /usr/lib/x86_64-linux-gnu through
# update-alternatives links; nvidia-smi in /usr/lib/nvidia/current; no ld.so.conf entry for the driver),
# the dev root two GPUs of the packages' driver version.
#   - auto meets the REAL libnvidia-ml, whose nvmlInit fails without the kernel module: it falls back to
#     /proc with exactly one line saying so, and writes the same spec as proc;
#   - proc says nothing and writes that spec: both GPUs by index and UUID, `all`, the driver's libraries,
#     binaries, firmware and configs, the links and linker-cache folders of Debian's layout;
#   - nvml fails with one line: NVML's error;
#   - management writes one device, `all`, with both GPUs' nodes and the same driver files.
# What every package file becomes is checked by package_files.sh; this test checks the modes and the
# layout. The driver version is the fetched packages' (never written here).
#   usage: cdi_generate.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
gpuctk=$1
fixture=$2
realhost_lab "$fixture"
v=$real_version
cur=/usr/lib/x86_64-linux-gnu/nvidia/current

# generate MODE NAME: the spec in $LAB/NAME.json, stderr in $LAB/NAME.err without the warnings about a hook
# path that will not last (gpuctk runs from its build tree here); returns gpuctk's status.
generate() {
  local status=0
  "$gpuctk" cdi generate --driver-root "$real_root" --dev-root "$real_dev_root" --mode "$1" --format json \
    --output "$LAB/$2.json" 2>"$LAB/$2.err" || status=$?
  sed -i "/^gpuctk: warning: hook path /d" "$LAB/$2.err"
  return "$status"
}
expect_stderr() {  # expect_stderr NAME EXPECTED: the whole of stderr
  [ "$(cat "$LAB/$1.err")" = "$2" ] || realhost_fail "$1: stderr is
$(cat "$LAB/$1.err")
want
$2"
}
query() {  # query NAME PYTHON-EXPRESSION-ON-spec: prints the expression's lines
  python3 -c "import json, sys
spec = json.load(open(sys.argv[1]))
root = sys.argv[2]
edits = spec['containerEdits']
hooks = {}
for h in edits.get('hooks', []):
    hooks.setdefault(h['args'][2], []).extend(h['args'][3:])
def values(option, *names):  # the values of OPTION in the hooks NAMES (container-start holds every step's)
    return [a for n in names for i, a in enumerate(hooks.get(n, [])) if i and hooks[n][i - 1] == option]
links = values('--link', 'create-symlinks', 'container-start')
folders = values('--folder', 'update-ldcache', 'container-start')
for line in ($2):
    print(line)" "$LAB/$1.json" "$real_root"
}
expect_lines() {  # expect_lines WHAT ACTUAL EXPECTED
  [ "$2" = "$3" ] || realhost_fail "$1:
$(diff <(echo "$3") <(echo "$2") | sed 's/^/  /')
(< want, > got)"
}

# auto: the real NVML cannot start without the kernel module; one line, then /proc.
generate auto auto || realhost_fail "cdi generate (auto) failed: $(cat "$LAB/auto.err")"
expect_stderr auto "gpuctk: warning: nvml: nvmlInit_v2: Driver Not Loaded; GPUs from /proc/driver/nvidia instead"
echo "ok: auto fell back to /proc with one line"

generate proc proc || realhost_fail "cdi generate (proc) failed: $(cat "$LAB/proc.err")"
expect_stderr proc ""
cmp -s "$LAB/auto.json" "$LAB/proc.json" || realhost_fail "auto and proc wrote different specs: $(diff "$LAB/auto.json" "$LAB/proc.json")"
echo "ok: proc said nothing and wrote the same spec"

expect_lines "devices" "$(query proc "d['name'] for d in spec['devices']")" "0
1
GPU-4f0d2c6e-8a1b-4c3d-9e5f-6a7b8c9d0e1f
GPU-7a1e3b5c-2d4f-4a6b-8c0d-1e2f3a4b5c6d
all"
expect_lines "the GPU nodes of device all" \
  "$(query proc "n['path'] for d in spec['devices'] if d['name'] == 'all' for n in d['containerEdits']['deviceNodes']")" \
  "/dev/dri/card0
/dev/dri/card1
/dev/dri/renderD128
/dev/dri/renderD129
/dev/nvidia0
/dev/nvidia1"
expect_lines "the control nodes" "$(query proc "n['path'] for n in edits['deviceNodes']")" "/dev/nvidia-modeset
/dev/nvidia-uvm
/dev/nvidia-uvm-tools
/dev/nvidiactl"
# The linker-cache folders: the directories the packages put libraries in. Debian has no ld.so.conf
# entry for nvidia/current; the container's cache must name it.
expect_lines "update-ldcache folders" "$(query proc "folders")" \
  "/usr/lib/x86_64-linux-gnu
$cur"
# Binaries are mounted where a shell finds them, from where the packages (and the alternatives) put them.
expect_lines "binaries" "$(query proc "m['containerPath'] + ' <- ' + m['hostPath'][len(root):] for m in edits['mounts'] if '/bin/' in m['containerPath'] or '/sbin/' in m['containerPath']")" \
  "/usr/bin/nvidia-cuda-mps-control <- /usr/bin/nvidia-cuda-mps-control
/usr/bin/nvidia-persistenced <- /usr/bin/nvidia-persistenced
/usr/bin/nvidia-smi <- /usr/lib/nvidia/current/nvidia-smi
/usr/sbin/nvidia-cuda-mps-server <- /usr/sbin/nvidia-cuda-mps-server"
expect_lines "firmware" "$(query proc "m['containerPath'] for m in edits['mounts'] if '/firmware/' in m['containerPath']")" \
  "/lib/firmware/nvidia/$v/gsp_ga10x.bin
/lib/firmware/nvidia/$v/gsp_tu10x.bin"
# Links the container needs in Debian's layout: the SONAME and development links of nvidia/current as
# the packages ship them, and the loaders' fixed paths that the alternatives serve on the host (GBM's
# backend, VDPAU's driver) and the X server's GLX module.
links=$(query proc "links")
for link in "libcuda.so.$v::$cur/libcuda.so.1" "libcuda.so.1::$cur/libcuda.so" \
  "libnvidia-ml.so.$v::$cur/libnvidia-ml.so.1" "libnvidia-allocator.so.$v::$cur/nvidia-drm_gbm.so" \
  "libnvidia-egl-gbm.so.1.1.0::/usr/lib/x86_64-linux-gnu/libnvidia-egl-gbm.so.1" \
  "../nvidia/current/libnvidia-allocator.so.$v::/usr/lib/x86_64-linux-gnu/gbm/nvidia-drm_gbm.so" \
  "../nvidia/current/libvdpau_nvidia.so.$v::/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.1" \
  "libglxserver_nvidia.so.$v::/usr/lib/xorg/modules/extensions/libglxserver_nvidia.so"; do
  grep -qxF -- "$link" <<<"$links" || realhost_fail "no create-symlinks --link $link; links:
$links"
done
echo "ok: proc found the devices, binaries, firmware, folders and links of Debian's layout"

# nvml: the real library, no kernel module: one line.
if generate nvml nvml; then
  realhost_fail "cdi generate --mode nvml succeeded without a kernel module"
fi
expect_stderr nvml "gpuctk: error: nvml: nvmlInit_v2: Driver Not Loaded"
[ ! -e "$LAB/nvml.json" ] || realhost_fail "a failed cdi generate --mode nvml wrote $LAB/nvml.json"
echo "ok: nvml failed with one line"

# management: one device with every GPU node, the same driver files.
generate management management || realhost_fail "cdi generate (management) failed: $(cat "$LAB/management.err")"
expect_stderr management ""
expect_lines "management devices" "$(query management "d['name'] for d in spec['devices']")" "all"
expect_lines "management nodes" \
  "$(query management "n['path'] for n in spec['devices'][0]['containerEdits']['deviceNodes']")" \
  "/dev/nvidia0
/dev/nvidia1"
expect_lines "management mounts" "$(query management "m['containerPath'] for m in edits['mounts']")" \
  "$(query proc "m['containerPath'] for m in edits['mounts']")"
echo "ok: management"
echo "PASS: cdi generate on Debian's real $v packages in auto, proc, nvml and management modes"
