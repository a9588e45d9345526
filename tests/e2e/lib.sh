# Shared helpers of the end-to-end tests (sourced). They start real runtimes, so they need root.
# Each test sources this file, calls e2e_init, and registers its own cleanup with e2e_cleanup_add.

set -euo pipefail

e2e_fail() {
  echo "FAIL: $*" >&2
  e2e_said=1
  exit 1
}

# Prints the reason and exits 77 (ctest's SKIP_RETURN_CODE for these tests): a skip is never a pass.
e2e_skip() {
  echo "SKIP: $*" >&2
  e2e_said=1
  exit 77
}

# A command that fails outside e2e_fail (set -e, pipefail) still ends the test with one line naming it:
# the ERR trap (inherited by functions: set -E) notes the failing line, and e2e_run_cleanups prints it
# when the test exits non-zero without having said why.
set -E
e2e_said=
e2e_failed_at=
e2e_note_failure() {
  local status=$1 line=$2 file=$3
  e2e_failed_at="$(basename "$file"):$line: $(sed -n "${line}{s/^[[:space:]]*//;p}" "$file") (exit status $status)"
}
trap 'e2e_note_failure $? "$LINENO" "${BASH_SOURCE[0]}"' ERR

e2e_cleanups=()
e2e_cleanup_add() { e2e_cleanups+=("$1"); }
e2e_run_cleanups() {
  local status=$? i
  if [ "$status" -ne 0 ] && [ -z "$e2e_said" ]; then
    echo "FAIL: ${e2e_failed_at:-exit status $status without a reason}" >&2
  fi
  for ((i = ${#e2e_cleanups[@]} - 1; i >= 0; i--)); do
    eval "${e2e_cleanups[$i]}" >/dev/null 2>&1 || true
  done
}

# e2e_init [--own-cdi] [NAME... -- "$@"]: the start of every test: skips unless root, makes the lab $LAB
# (removed at exit, after every mount left at or below it is lazily unmounted: e2e_umount_under) and sets
# the EXIT trap that runs the cleanups. Each NAME is set to the test's argument in its place (the ones after
# --), empty when absent: `e2e_init gpuctk fixture -- "$@"` for a test run as `TEST.sh <gpuctk>
# <gpuctk-fixture>`. --own-cdi: e2e_own_cdi_dirs "$@" first (the test runs again in a mount namespace of
# its own, with empty /etc/cdi and /var/run/cdi).
# shellcheck disable=SC2120  # its arguments are optional
e2e_init() {
  local e2e_own='' e2e_names=() e2e_i
  [ "${1:-}" != --own-cdi ] || { e2e_own=1; shift; }
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    e2e_names+=("$1")
    shift
  done
  [ $# -eq 0 ] || shift
  local e2e_args=("$@")
  [ -z "$e2e_own" ] || e2e_own_cdi_dirs "$@"
  [ "$(id -u)" -eq 0 ] || e2e_skip "needs root to start containers"
  LAB=$(mktemp -d /tmp/gpuctk-e2e.XXXXXX)
  e2e_cleanup_add "rm -rf '$LAB'"
  e2e_cleanup_add "e2e_umount_under '$LAB'"
  trap e2e_run_cleanups EXIT
  for e2e_i in "${!e2e_names[@]}"; do
    printf -v "${e2e_names[$e2e_i]}" '%s' "${e2e_args[$e2e_i]:-}"
  done
}

# e2e_needs TOOL[ WHY]...: skips (exit 77) naming the first TOOL that is not installed (not on PATH), with
# WHY when given: `e2e_needs runc "python3 (it writes config.json)"`.
e2e_needs() {
  local need
  for need in "$@"; do
    command -v "${need%% *}" >/dev/null || e2e_skip "${need%% *} is not installed${need#"${need%% *}"}"
  done
}

# e2e_ended PID SECONDS: waits at most SECONDS for process PID to end (polling every 0.1 s); false when it
# still runs then.
e2e_ended() {
  local _
  for _ in $(seq $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  ! kill -0 "$1" 2>/dev/null
}

# e2e_stop_daemon PID: SIGTERM to a daemon this shell started, SIGKILL when it still runs 20 s later, and
# waits for it (a cleanup: it never fails).
e2e_stop_daemon() {
  kill "$1" 2>/dev/null || return 0
  e2e_ended "$1" 20 || kill -9 "$1"
  wait "$1" 2>/dev/null || true
}

# e2e_daemon_up WHO PID LOG SECONDS COMMAND...: waits at most SECONDS for COMMAND (a client's call) to
# answer; fails with LOG's tail when the daemon WHO (PID) exits first or never answers.
e2e_daemon_up() {
  local who=$1 pid=$2 log=$3 seconds=$4 _
  shift 4
  for _ in $(seq $((seconds * 10))); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || e2e_fail "$who exited: $(tail -30 "$log")"
    sleep 0.1
  done
  "$@" >/dev/null 2>&1 || e2e_fail "$who did not come up: $(tail -30 "$log")"
}

# A busybox root filesystem in $LAB/rootfs.
e2e_busybox_rootfs() {
  local busybox
  busybox=$(command -v busybox) || e2e_skip "busybox-static is not installed"
  mkdir -p "$LAB/rootfs"/{bin,proc,sys,dev,tmp,etc,mnt,run}
  cp "$busybox" "$LAB/rootfs/bin/busybox"
  for applet in $("$LAB/rootfs/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$LAB/rootfs/bin/$applet"
  done
}

# A glibc root filesystem in $LAB/rootfs, like a minimal CUDA base image:
#   - e2e_busybox_rootfs plus the host's glibc and loader (/usr/lib/x86_64-linux-gnu, /lib -> usr/lib,
#     /lib64/ld-linux-x86-64.so.2);
#   - a Debian-style /etc/ld.so.conf(.d), and a library of the image's own in a directory that only its
#     ld.so.conf.d names (/opt/e2e-image/lib/libgpuctk-e2e-image.so.1: a regenerated cache must keep it);
#   - an /etc/ld.so.cache of its own, made here: glibc and that library, no driver library;
#   - /bin/cuda-version, compiled here with the host's cc, which does what a CUDA application does first:
#     dlopen("libcuda.so.1"), dlsym("cuDriverGetVersion"), call it; it prints where glibc found the
#     library ("libcuda.so.1 loaded from PATH") and "cuDriverGetVersion: <version>", or the dlerror
#     and exits 1;
#   - the host's static ldconfig as /sbin/ldconfig, ONLY so that a test can print the container's cache
#     with `ldconfig -p`: gpuctk never runs an image's ldconfig.
# Each container gets its own copy (e2e_rootfs_copy): the hooks write links and the cache into the root
# directory itself, and runc leaves its mount points there.
e2e_glibc_rootfs() {
  local libdir=/lib/x86_64-linux-gnu lib
  command -v cc >/dev/null || e2e_skip "no C compiler (cc) to build the in-container test program"
  if [ ! -e "$libdir/libc.so.6" ] || [ ! -e /lib64/ld-linux-x86-64.so.2 ]; then
    e2e_skip "the host has no x86-64 multiarch glibc in $libdir to copy into the image"
  fi
  [ -x /sbin/ldconfig ] || e2e_skip "no /sbin/ldconfig"
  e2e_busybox_rootfs
  local root=$LAB/rootfs
  mkdir -p "$root/usr/lib/x86_64-linux-gnu" "$root/lib64" "$root/sbin" "$root/etc/ld.so.conf.d" \
    "$root/opt/e2e-image/lib"
  ln -s usr/lib "$root/lib"
  for lib in libc.so.6 libdl.so.2 libpthread.so.0 libm.so.6 ld-linux-x86-64.so.2; do
    if [ -e "$libdir/$lib" ]; then cp -L "$libdir/$lib" "$root/usr/lib/x86_64-linux-gnu/$lib"; fi
  done
  # Every x86-64 program's PT_INTERP.
  cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
  cp -L /sbin/ldconfig "$root/sbin/ldconfig"
  echo "include /etc/ld.so.conf.d/*.conf" >"$root/etc/ld.so.conf"
  printf '%s\n' /usr/local/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu \
    >"$root/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
  echo /opt/e2e-image/lib >"$root/etc/ld.so.conf.d/e2e-image.conf"
  echo 'int gpuctk_e2e_image(void) { return 1; }' >"$LAB/image-lib.c"
  cc -shared -fPIC -Wl,-soname,libgpuctk-e2e-image.so.1 -o "$root/opt/e2e-image/lib/libgpuctk-e2e-image.so.1" \
    "$LAB/image-lib.c" || e2e_fail "could not build the image's own library"
  e2e_cuda_version_source "$LAB/cuda-version.c"
  cc -O2 -Wall -Werror -o "$root/bin/cuda-version" "$LAB/cuda-version.c" -ldl ||
    e2e_fail "could not build the in-container test program"
  # The image's own cache, as base images ship one: glibc and the image's library.
  /sbin/ldconfig -X -r "$root" || e2e_fail "ldconfig -r $root failed"
  /sbin/ldconfig -p -C "$root/etc/ld.so.cache" | grep -q "libgpuctk-e2e-image.so.1 (libc6,x86-64)" ||
    e2e_fail "the image's ld.so.cache does not list its own library"
  if /sbin/ldconfig -p -C "$root/etc/ld.so.cache" | grep -q "libcuda"; then
    e2e_fail "the image's ld.so.cache lists libcuda before any GPU was injected"
  fi
}

# e2e_rootfs_copy NAME: prints the path of a fresh copy of $LAB/rootfs for one container.
e2e_rootfs_copy() {
  cp -a "$LAB/rootfs" "$LAB/rootfs-$1"
  echo "$LAB/rootfs-$1"
}

# e2e_bundle_at NAME ROOTFS ENV PROBE: prints $LAB/bundle-NAME, a runc bundle (`runc spec`, no terminal)
# on the writable root ROOTFS whose container runs PROBE (shell) with ENV ("KEY=VALUE", or empty for
# nothing) added to its environment.
e2e_bundle_at() {
  local bundle=$LAB/bundle-$1
  mkdir -p "$bundle"
  (cd "$bundle" && runc spec) || e2e_fail "runc spec failed"
  python3 - "$bundle/config.json" "$2" "$4" "$3" <<'PY' || e2e_fail "could not write $bundle/config.json"
import json, sys
path, rootfs, probe, env = sys.argv[1:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "-c", probe]
if env:
    c["process"]["env"].append(env)
c["root"] = {"path": rootfs, "readonly": False}
json.dump(c, open(path, "w"))
PY
  echo "$bundle"
}

# e2e_runc_bundle NAME ENV [PROBE]: e2e_bundle_at on its own copy of $LAB/rootfs; PROBE defaults to the t4
# probe (below).
e2e_runc_bundle() {
  local rootfs
  rootfs=$(e2e_rootfs_copy "$1")
  e2e_bundle_at "$1" "$rootfs" "$2" "${3:-$e2e_t4_probe}"
}

# e2e_shim_run NAME ENV [PROBE]: the shim ($LAB/bin/gpuctk-runtime run, in front of runc) runs a bundle of
# e2e_runc_bundle NAME ENV PROBE as container gpuctk-e2e-NAME-$$ (deleted at exit); sets out to what it
# printed (the probe's output, or the error) and returns the shim's status.
e2e_shim_run() {
  local bundle status=0
  bundle=$(e2e_runc_bundle "$@")
  e2e_cleanup_add "runc delete -f gpuctk-e2e-$1-$$"
  out=$("$LAB/bin/gpuctk-runtime" run --bundle "$bundle" "gpuctk-e2e-$1-$$" 2>&1) || status=$?
  return "$status"
}

# Podman with all state under $LAB and the settings CI machines need (no CAP_SYS_RESOURCE, so explicit
# ulimits; no systemd, so cgroupfs and file events).
e2e_podman_init() {
  command -v podman >/dev/null || e2e_skip "podman is not installed"
  PODMAN=(podman --root "$LAB/podman/root" --runroot "$LAB/podman/runroot" --cgroup-manager=cgroupfs
    --events-backend=file --runtime runc)
  e2e_cleanup_add "umount '$LAB/podman/root/overlay' 2>/dev/null"
  e2e_cleanup_add "${PODMAN[*]} rm -af"
}

e2e_podman_run() {
  "${PODMAN[@]}" run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$@"
}

# e2e_precreate_hook_dir DIR GPUCTK CONFIG: a hooks.d folder DIR for podman (`--hooks-dir DIR`) holding
# gpuctk.json: GPUCTK runs `gpuctk hook precreate --config CONFIG` at the precreate stage of every container
# (`always: true`, so a container without a request meets it too), with a plain PATH.
e2e_precreate_hook_dir() {
  local dir=$1 gpuctk=$2 config=$3
  mkdir -p "$dir"
  cat >"$dir/gpuctk.json" <<JSON
{"version": "1.0.0",
 "hook": {"path": "$gpuctk", "args": ["gpuctk", "hook", "precreate", "--config", "$config"],
        "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]},
 "when": {"always": true}, "stages": ["precreate"]}
JSON
}

# stdin without the warnings `cdi generate` gives about a hook path that will not last (a build tree's
# gpuctk, one under /tmp): the tests run gpuctk from its build tree.
e2e_without_hook_path_warnings() {
  grep -v "^gpuctk: warning: hook path " || true
}

# Asserts that `haystack` contains the line `needle` exactly.
e2e_expect_line() {
  local haystack=$1 needle=$2
  grep -qxF -- "$needle" <<<"$haystack" || e2e_fail "expected the line '$needle' in:
$haystack"
}

# e2e_expect_gpu0_enxio OUTPUT: the probe opened the container's /dev/nvidia0 and the open reached the
# (absent) driver: ENXIO. busybox names the failing open "cat: " or "/bin/sh: " and the probe strips that,
# but one run in several dozen showed the shell's prefix unstripped (under load, in the sanitizer phase);
# either form is the same outcome.
e2e_expect_gpu0_enxio() {
  grep -qxE -- "((cat|/bin/sh): )?can't open '/dev/nvidia0': No such device or address" <<<"$1" ||
    e2e_fail "expected the line 'can't open '/dev/nvidia0': No such device or address' in:
$1"
}

e2e_expect_no_line() {
  local haystack=$1 needle=$2
  if grep -qxF -- "$needle" <<<"$haystack"; then
    e2e_fail "did not expect the line '$needle' in:
$haystack"
  fi
}

# The e2e host in $LAB/host, with real device nodes: the t4-debian fixture with a second Tesla T4 (a
# g4dn.12xlarge-like node), so that every case shows a container gets the GPU it asked for and not the
# other one (e2e_check_t4_no_gpu1, e2e_check_t4_gpu1). GPU 1: minor 1, 0000:00:1f.0, card2, renderD129;
# after GPU 0 in PCI order too, as NVML numbers GPUs (/proc mode numbers them by bus id, the mock NVML in
# manifest order: the two agree only when the manifest lists GPUs in bus order).
# Sets driver_root and dev_root.
e2e_t4_host() {
  local fixture=$1 manifest=$LAB/t4x2/host.yaml
  mkdir -p "$LAB/t4x2"
  awk -v gpu1="$e2e_t4_gpu1" '/^libraries:/ { print gpu1 } { print }' \
    "$(dirname "${BASH_SOURCE[0]}")/../../fixtures/hosts/t4-debian/host.yaml" >"$manifest"
  grep -qx '    uuid: GPU-5c2f8e1a-9d3b-5f7c-b1e4-6a8d0c2e4f61' "$manifest" || e2e_fail "no second GPU in $manifest"
  "$fixture" materialize "$manifest" "$LAB/host" >"$LAB/roots" 2>"$LAB/materialize.err" ||
    e2e_fail "materialising the e2e host failed: $(cat "$LAB/materialize.err")"
  grep -qx "nodes=real" "$LAB/roots" || e2e_skip "fixture device nodes are not real char devices"
  driver_root=$(sed -n 's/^driver_root=//p' "$LAB/roots")
  dev_root=$(sed -n 's/^dev_root=//p' "$LAB/roots")
}

# The second T4 of e2e_t4_host, as an entry of the fixture's gpus list (fixtures/hosts/README.md).
e2e_t4_gpu1='  - minor: 1
    bus_id: "0000:00:1f.0"
    uuid: GPU-5c2f8e1a-9d3b-5f7c-b1e4-6a8d0c2e4f61
    model: Tesla T4
    brand: Tesla
    arch: turing
    memory: 16106127360
    compute_capability: "7.5"
    pci: {device: 0x1eb8, subsystem: 0x12a2}
    vbios: 90.04.96.00.A0
    irq: 35
    numa_node: 0
    drm: {card: 2, render: 129}
'

# What `cdi generate` needs for a spec that podman 4.3.1 (Debian 12's, CDI library v0.5.2) reads: no
# additionalGids. Its strict parser refuses the whole file for a key it does not know (json: unknown field
# "additionalGids"), as every library before v0.7.0 refuses a cdiVersion above its own.
e2e_podman431_spec_options=(--feature-flag no-additional-gids-for-device-nodes)

# e2e_lab_spec GPUCTK [OPTION...]: `GPUCTK cdi generate` of the host at $driver_root and $dev_root (hook-path:
# GPUCTK) with the OPTIONs into $LAB/cdi/nvidia.yaml, its stderr in $LAB/generate.err.
e2e_lab_spec() {
  local gpuctk=$1
  shift
  mkdir -p "$LAB/cdi"
  "$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --hook-path "$(realpath "$gpuctk")" \
    "$@" --output "$LAB/cdi/nvidia.yaml" 2>"$LAB/generate.err" ||
    e2e_fail "cdi generate failed: $(cat "$LAB/generate.err")"
}

# e2e_lab_config GPUCTK: the gpuctk config $LAB/gpuctk.yaml of the host at $driver_root and $dev_root (specs
# in $LAB/cdi, hook-path GPUCTK, the log at debug level in $LAB/gpuctk.log) and $LAB/bin/gpuctk-runtime, the
# shim's name for GPUCTK.
e2e_lab_config() {
  mkdir -p "$LAB/cdi" "$LAB/bin"
  cat >"$LAB/gpuctk.yaml" <<YAML
spec-dirs: [$LAB/cdi]
driver-root: $driver_root
dev-root: $dev_root
hook-path: $(realpath "$1")
log-file: $LAB/gpuctk.log
log-level: debug
YAML
  ln -s "$(realpath "$1")" "$LAB/bin/gpuctk-runtime"
}

# e2e_t4_host, its spec as `cdi generate` writes it by default but for --hook-path (createContainer hooks
# that run this gpuctk, not an installed one) in $LAB/cdi, a gpuctk config $LAB/gpuctk.yaml that uses both (hook-path: this gpuctk, for a
# spec built in memory) and logs to $LAB/gpuctk.log, and $LAB/bin/gpuctk-runtime, the shim's name for
# gpuctk. `e2e_t4_host_with_spec GPUCTK FIXTURE none` installs no spec: $LAB/cdi stays empty, so the
# hook and the shim build the spec in memory. Arguments after the third go to `cdi generate`.
e2e_t4_host_with_spec() {
  local gpuctk=$1 fixture=$2 spec=${3:-generate}
  shift $(($# < 3 ? $# : 3))
  e2e_t4_host "$fixture"
  [ "$spec" != generate ] || e2e_lab_spec "$gpuctk" "$@"
  e2e_lab_config "$gpuctk"
}

# What a container sees of the GPUs of e2e_t4_host; e2e_check_t4_gpu0 checks it. Besides files and nodes
# (GPU 0's and GPU 1's): the driver library loads (/bin/cuda-version of e2e_glibc_rootfs), the container's
# linker cache (`ldconfig -p`, tab stripped) and the GPUs' /dev/dri/by-path links, which a createContainer
# hook makes. Its first line sends stderr to stdout, so the engine gets one stream: one that carries the two
# apart (docker's log multiplexing) can put a stderr line's end inside a stdout line.
# shellcheck disable=SC2016  # expanded in the container
e2e_t4_probe='exec 2>&1
ls -l /dev/nvidia0 /dev/nvidiactl /dev/dri/card1 /dev/dri/renderD128 /dev/nvidia1 /dev/dri/card2 /dev/dri/renderD129 2>&1 | while read -r mode _ _ _ major minor _ _ _ path; do echo "$mode $major $minor $path"; done
for f in /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01 /usr/bin/nvidia-smi /usr/lib/x86_64-linux-gnu/libnvidia-encode.so.535.183.01; do [ -s "$f" ] && echo "file $f"; done
cat /dev/nvidia0 2>&1 | sed -E "s#^(cat|/bin/sh): ##"
echo "env NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"
/bin/cuda-version 2>&1; echo "cuda-version exit $?"
/sbin/ldconfig -p | sed -n "s/^\t//p"
for l in /dev/dri/by-path/pci-0000:00:1e.0-card /dev/dri/by-path/pci-0000:00:1e.0-render /dev/dri/by-path/pci-0000:00:1f.0-card /dev/dri/by-path/pci-0000:00:1f.0-render; do
  [ -L "$l" ] && echo "link $l -> $(readlink "$l")"; [ -c "$l" ] && echo "char device through $l"; done
true'

# The t4-debian fixture's CUDA version, as its libcuda.so.1 reports it: driver.cuda "12.2" in
# fixtures/hosts/t4-debian/host.yaml (pinned by the fixture tests, Materialise.MockCudaVersions).
e2e_t4_cuda_version=12020

# The image's own library as `ldconfig -p` lists it (see e2e_glibc_rootfs).
e2e_image_lib_line="libgpuctk-e2e-image.so.1 (libc6,x86-64) => /opt/e2e-image/lib/libgpuctk-e2e-image.so.1"

# e2e_check_t4_driver_loads OUTPUT: the probe's output shows that the container loads the host's
# libcuda.so.1 and gets the fixture's CUDA version from it, that the container's own ld.so.cache (made
# by the update-ldcache hook) lists libcuda.so.1 and libnvidia-ml.so.1 in the driver's directory and
# still lists the image's own library, and that GPU 0's by-path links exist and reach its DRM nodes.
# The hook's --folder /usr/lib/x86_64-linux-gnu is the image's own multiarch folder, which its
# x86_64-linux-gnu.conf names first as /lib/x86_64-linux-gnu (through the /lib -> usr/lib link): the hook
# leaves it where the image puts it, so the cache, like the image's own ldconfig, names the libraries by
# that path, and glibc loads them by it.
e2e_check_t4_driver_loads() {
  local out=$1
  e2e_expect_line "$out" "libcuda.so.1 loaded from /lib/x86_64-linux-gnu/libcuda.so.1"
  e2e_expect_line "$out" "cuDriverGetVersion: $e2e_t4_cuda_version"
  e2e_expect_line "$out" "cuda-version exit 0"
  e2e_expect_line "$out" "libcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1"
  e2e_expect_line "$out" "libnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1"
  e2e_expect_line "$out" "$e2e_image_lib_line"
  e2e_expect_line "$out" "crw-rw---- 226, 1 /dev/dri/card1"
  e2e_expect_line "$out" "crw-rw---- 226, 128 /dev/dri/renderD128"
  e2e_expect_line "$out" "link /dev/dri/by-path/pci-0000:00:1e.0-card -> ../card1"
  e2e_expect_line "$out" "link /dev/dri/by-path/pci-0000:00:1e.0-render -> ../renderD128"
  e2e_expect_line "$out" "char device through /dev/dri/by-path/pci-0000:00:1e.0-card"
  e2e_expect_line "$out" "char device through /dev/dri/by-path/pci-0000:00:1e.0-render"
}

# e2e_check_t4_gpu0 OUTPUT WHO: the probe's output shows GPU 0, its control node, the utility and compute
# driver files (no video: NVIDIA_DRIVER_CAPABILITIES defaults to utility,compute), the env, and that the
# driver library loads (e2e_check_t4_driver_loads).
e2e_check_t4_gpu0() {
  local out=$1 who=$2
  e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_line "$out" "crw-rw-rw- 195, 255 /dev/nvidiactl"
  e2e_expect_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
  e2e_expect_line "$out" "file /usr/bin/nvidia-smi"
  e2e_expect_no_line "$out" "file /usr/lib/x86_64-linux-gnu/libnvidia-encode.so.535.183.01"
  # The node is real (195:0) but no driver serves it here.
  e2e_expect_gpu0_enxio "$out"
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=void"
  e2e_check_t4_driver_loads "$out"
  e2e_check_t4_no_gpu1 "$out"
  echo "ok: $who"
}

# e2e_check_t4_no_gpu1 OUTPUT [RUNTIME_NODE]: e2e_t4_probe's output shows none of GPU 1's nodes and
# by-path links; with RUNTIME_NODE (prestart bundles, where the runtime itself makes /dev/nvidia1 and
# its device cgroup refuses it) its /dev/nvidia1 line is not checked.
e2e_check_t4_no_gpu1() {
  local out=$1 runtime_node=${2:-}
  [ -n "$runtime_node" ] || e2e_expect_no_line "$out" "crw-rw-rw- 195, 1 /dev/nvidia1"
  e2e_expect_no_line "$out" "crw-rw---- 226, 2 /dev/dri/card2"
  e2e_expect_no_line "$out" "crw-rw---- 226, 129 /dev/dri/renderD129"
  e2e_expect_no_line "$out" "link /dev/dri/by-path/pci-0000:00:1f.0-card -> ../card2"
  e2e_expect_no_line "$out" "link /dev/dri/by-path/pci-0000:00:1f.0-render -> ../renderD129"
}

# e2e_check_t4_gpu1 OUTPUT: e2e_t4_probe's output shows GPU 1's nodes and its by-path links (a request
# for all GPUs).
e2e_check_t4_gpu1() {
  local out=$1
  e2e_expect_line "$out" "crw-rw-rw- 195, 1 /dev/nvidia1"
  e2e_expect_line "$out" "crw-rw---- 226, 2 /dev/dri/card2"
  e2e_expect_line "$out" "crw-rw---- 226, 129 /dev/dri/renderD129"
  e2e_expect_line "$out" "link /dev/dri/by-path/pci-0000:00:1f.0-card -> ../card2"
  e2e_expect_line "$out" "link /dev/dri/by-path/pci-0000:00:1f.0-render -> ../renderD129"
  e2e_expect_line "$out" "char device through /dev/dri/by-path/pci-0000:00:1f.0-card"
}

# e2e_check_t4_nothing OUTPUT WHO [RUNTIME_NODE]: the probe's output of a container that asked for no GPU:
# no node, no driver file, libcuda.so.1 does not load, and the image's cache is the image's (its library,
# no driver). RUNTIME_NODE: as e2e_check_t4_no_gpu1.
e2e_check_t4_nothing() {
  local out=$1 who=$2 runtime_node=${3:-}
  e2e_expect_no_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_no_line "$out" "file /usr/bin/nvidia-smi"
  e2e_expect_no_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES="
  e2e_expect_line "$out" "dlopen libcuda.so.1: libcuda.so.1: cannot open shared object file: No such file or directory"
  e2e_expect_line "$out" "cuda-version exit 1"
  e2e_expect_line "$out" "$e2e_image_lib_line"
  e2e_expect_no_line "$out" "libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"
  e2e_expect_no_line "$out" "link /dev/dri/by-path/pci-0000:00:1e.0-card -> ../card1"
  e2e_check_t4_no_gpu1 "$out" "$runtime_node"
  echo "ok: $who"
}

# e2e_expect_shim_refuses NAME ENV EXPECTED: the shim refuses a bundle whose process asks for ENV with the
# line "gpuctk: error: could not inject GPUs into <bundle>/config.json: EXPECTED", leaves that config.json
# exactly as it was, and never starts runc.
e2e_expect_shim_refuses() {
  local name=$1 env=$2 expected=$3 bundle out
  bundle=$(e2e_runc_bundle "$name" "$env")
  cp "$bundle/config.json" "$LAB/config.$name.json"
  if out=$("$LAB/bin/gpuctk-runtime" run --bundle "$bundle" "gpuctk-e2e-$name-$$" 2>&1); then
    e2e_fail "the shim started a container asking for $env: $out"
  fi
  grep -qF "gpuctk: error: could not inject GPUs into $bundle/config.json: $expected" <<<"$out" ||
    e2e_fail "unexpected error: $out"
  cmp -s "$bundle/config.json" "$LAB/config.$name.json" || e2e_fail "a failed injection changed config.json"
}

# e2e_containerd_start: containerd by hand (no systemd here), CRI off, every path under $LAB/containerd; its
# environment (GPUCTK_CONFIG=$LAB/gpuctk.yaml) reaches the runc shim and from there gpuctk-runtime. Sets
# CTR (the ctr command line for it) and containerd_pid; registers the cleanups: the daemon, the shims of
# this daemon (a shim whose runc calls failed outlives containerd; found by its socket), what the runc
# shim keeps under /run/containerd whatever the state dir, and the cgroups ctr made.
e2e_containerd_start() {
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
  e2e_cleanup_add "rmdir /run/containerd/runc/default /run/containerd/runc /run/containerd/fifo /run/containerd/s /run/containerd 2>/dev/null"
  e2e_cleanup_add "find /sys/fs/cgroup -depth -type d -name 'gpuctk-e2e-*' -exec rmdir {} + 2>/dev/null; rmdir /sys/fs/cgroup/*/default 2>/dev/null"
  e2e_cleanup_add "for p in \$(pgrep -f -- '-address $LAB/containerd/containerd.sock'); do kill \$p; done"
  e2e_cleanup_add "kill $containerd_pid; wait $containerd_pid"
  CTR=(ctr --address "$LAB/containerd/containerd.sock")
  e2e_daemon_up containerd "$containerd_pid" "$LAB/containerd/containerd.log" 10 "${CTR[@]}" version
}

# e2e_docker_tools: skips unless dockerd, its client, containerd and runc are installed; sets docker_cli to
# the client of the same release (another docker client may come first on PATH, e.g. /usr/local/bin's).
e2e_docker_tools() {
  command -v dockerd >/dev/null || e2e_skip "dockerd is not installed (docker.io)"
  docker_cli=/usr/bin/docker
  [ -x "$docker_cli" ] || docker_cli=$(command -v docker) || e2e_skip "the docker client is not installed (docker.io)"
  command -v containerd >/dev/null || e2e_skip "containerd is not installed (dockerd starts its own)"
  command -v runc >/dev/null || e2e_skip "runc is not installed"
}

# e2e_dockerd_start DIR [EXTRA_PATH]: dockerd by hand (no systemd here) with $docker_cli, its data, exec root
# (and the containerd it starts), pid file, socket and containers' cgroups (--cgroup-parent) under DIR,
# DIR/daemon.json as its config file (the caller writes it: at least "deprecated-key-path" in DIR, or
# dockerd writes /etc/docker/key.json), no bridge, no iptables, GPUCTK_CONFIG=$LAB/gpuctk.yaml in its
# environment and EXTRA_PATH (when given) first on its PATH. dockerd itself still makes /run/docker/plugins,
# and the runc shims /run/containerd/s: removed afterwards when this run made them. Sets DOCKER (the client
# command line) and dockerd_pid; the cleanup stops dockerd by its pid and waits for it (it stops its
# containerd), with SIGKILL after 20 s.
e2e_dockerd_start() {
  local d=$1 extra_path=${2:-} cgroup_parent=gpuctk-e2e-docker-$$ dir
  for dir in /run/docker /run/docker/plugins /run/containerd /run/containerd/s; do  # (cleanups run last first)
    [ -e "$dir" ] || e2e_cleanup_add "rmdir $dir"
  done
  e2e_cleanup_add "for c in /sys/fs/cgroup/*/$cgroup_parent; do find \"\$c\" -depth -type d -exec rmdir {} +; done"
  PATH=${extra_path:+$extra_path:}$PATH GPUCTK_CONFIG=$LAB/gpuctk.yaml setsid dockerd --data-root "$d/data" \
    --exec-root "$d/exec" --pidfile "$d/dockerd.pid" -H "unix://$d/docker.sock" --config-file "$d/daemon.json" \
    --cgroup-parent "/$cgroup_parent" --iptables=false --bridge=none --ip-masq=false >"$d/dockerd.log" 2>&1 &
  dockerd_pid=$!
  e2e_cleanup_add e2e_dockerd_stop
  DOCKER=("$docker_cli" -H "unix://$d/docker.sock")
  e2e_daemon_up dockerd "$dockerd_pid" "$d/dockerd.log" 20 "${DOCKER[@]}" version
}
e2e_dockerd_stop() {
  e2e_stop_daemon "$dockerd_pid"
}

# ---- The prestart hook (`gpuctk hook prestart`): helpers of the prestart_*.sh tests ----

# e2e_root_at KIND DIR: the busybox or the glibc root filesystem (e2e_busybox_rootfs, e2e_glibc_rootfs) in
# DIR instead of $LAB/rootfs, so that one test can hold both. The builder runs with a LAB of its own (a
# scratch directory in the lab, where it makes rootfs and its sources); its skip or failure ends the test.
e2e_root_at() {
  local kind=$1 dir=$2 build
  case "$kind" in
    busybox | glibc) ;;
    *) e2e_fail "e2e_root_at: unknown root kind '$kind'" ;;
  esac
  build=$(mktemp -d "$LAB/build-$kind.XXXXXX")
  e2e_root_build_in "$build" "$kind"
  mv "$build/rootfs" "$dir"
  rm -rf "$build"
}
e2e_root_build_in() {
  local LAB=$1
  "e2e_${2}_rootfs"
}

# e2e_prestart_lab GPUCTK FIXTURE: what the prestart_*.sh tests start from: the busybox and the glibc roots
# in $LAB/root-busybox and $LAB/root-glibc (e2e_root_at), the T4 host with its spec and $LAB/gpuctk.yaml
# (e2e_t4_host_with_spec), and hook: GPUCTK's absolute path, which a bundle's hook runs.
e2e_prestart_lab() {
  e2e_root_at busybox "$LAB/root-busybox"
  e2e_root_at glibc "$LAB/root-glibc"
  e2e_t4_host_with_spec "$1" "$2"
  hook=$(realpath "$1")
}

# e2e_root_copy ROOT NAME: prints the path of a fresh copy of the root filesystem ROOT for one container.
e2e_root_copy() {
  cp -a "$1" "$LAB/rootfs-$2"
  echo "$LAB/rootfs-$2"
}

# e2e_umount_under DIR: lazily unmounts every mount at or below DIR, deepest first (a cleanup: a runtime or
# a faulty hook may have left mounts there, and `rm -rf` must not walk into them).
e2e_umount_under() {
  local dir=$1 mnt m
  for _ in 1 2 3; do
    mnt=$(awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r)
    [ -n "$mnt" ] || return 0
    while read -r m; do umount -l "$m" 2>/dev/null || true; done <<<"$mnt"
  done
}

# e2e_mounts_snapshot FILE / e2e_expect_mounts_unchanged FILE WHO [OWN]: the host's mount table (this
# shell's mount namespace) is exactly what it was when FILE was taken: a prestart hook mounts inside the
# container's mount namespace only, and leaves nothing behind on the host, whether it succeeds or fails.
# OWN, when given, is the one mount point left out of the comparison: an engine's own mount that comes and
# goes by itself (podman 4.3.1's overlay storage bind-mounts its home, $LAB/podman/root/overlay, after a
# failed run and unmounts it after the next one). End-to-end tests run beside each other (tests/
# CMakeLists.txt), so the mounts of the others are left out too: those in another test's lab
# (/tmp/gpuctk-e2e.*), and the engine daemons' run state (/run/containerd, /run/docker, /run/netns: pod
# sandboxes' shm and network namespaces). Everything else, this test's own lab included, is compared.
e2e_mounts_snapshot() {
  cat /proc/self/mountinfo >"$1"
}
e2e_mounts_compared() {
  awk -v own="$2" -v lab="$LAB" '
    $5 == own { next }
    $5 ~ /^\/tmp\/gpuctk-e2e\.[^\/]+/ && $5 != lab && index($5, lab "/") != 1 { next }
    $5 ~ /^\/run\/(containerd|docker|netns)(\/|$)/ { next }
    { print }' "$1"
}
e2e_expect_mounts_unchanged() {
  local before=$1 who=$2 own=${3:-} changes
  changes=$(diff <(e2e_mounts_compared "$before" "$own") <(e2e_mounts_compared /proc/self/mountinfo "$own")) ||
    e2e_fail "$who changed the host's mounts (< before, > now):
$changes"
}

# What a container sees of an injection done live by the prestart hook, on top of e2e_t4_probe: the
# requested nodes other than GPU 0 open up to the driver (ENXIO: allowed by the device cgroup, no driver
# here); GPU 1's node 195:1, when not requested, is refused by the device cgroup (EPERM): /dev/nvidia1 where
# the runtime made it (runc/crun: linux.devices without an allow rule), else /tmp/nvidia1 from the image,
# else /dev/nvidia1 made here with mknod in the container's /dev tmpfs (engines whose default
# capabilities have CAP_MKNOD: docker, containerd; the default rules allow mknod); the mount options of
# libcuda.so.535.183.01 in the container's mountinfo and what an append to it gets; whether the
# container's /etc/ld.so.cache (binary) names the driver's libcuda.so.1 (busybox has no ldconfig -p).
# shellcheck disable=SC2016  # expanded in the container
e2e_prestart_probe='exec 2>&1
ls -l /dev/nvidia-uvm 2>&1 | while read -r mode _ _ _ major minor _ _ _ path; do echo "$mode $major $minor $path"; done
for n in /dev/nvidiactl /dev/nvidia-uvm /dev/dri/card1 /dev/dri/renderD128; do echo "open $n: $(cat "$n" 2>&1 >/dev/null | sed "s/.*: //")"; done
n1=/dev/nvidia1; if [ ! -c "$n1" ]; then if [ -c /tmp/nvidia1 ]; then n1=/tmp/nvidia1; else mknod -m 666 "$n1" c 195 1 2>&1 | sed "s/^/mknod: /"; fi; fi
echo "gpu1 195:1: $(cat "$n1" 2>&1 >/dev/null | sed "s/.*: //")"
lib=/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01
awk -v p="$lib" '"'"'$5 == p { n = split($6, o, ","); for (i = 1; i <= n; i++) print "libcuda mount option " o[i] }'"'"' /proc/self/mountinfo
[ -e "$lib" ] && echo "append libcuda: $( { echo x >>"$lib"; } 2>&1 | sed "s/.*: //")"
grep -q lib/x86_64-linux-gnu/libcuda.so.1 /etc/ld.so.cache 2>/dev/null && echo "ld.so.cache names the driver folder'"'"'s libcuda.so.1"
'$e2e_t4_probe

# e2e_check_prestart_gpu0 OUTPUT WHO KIND VISIBLE: e2e_prestart_probe's output of a container on the KIND
# (busybox or glibc) root that asked for GPU 0 and got it from the prestart hook: GPU 0's nodes and the
# control nodes with their type, major and minor; the device cgroup allows them (ENXIO) and refuses GPU
# 1's 195:1 (EPERM), whose DRM nodes and links are absent (with VISIBLE=all GPU 1 is there); the utility and compute driver files (no video), libcuda
# mounted read-only, nosuid, nodev (an append fails); the container's env untouched
# (NVIDIA_VISIBLE_DEVICES=VISIBLE, never void); the createContainer hooks ran (the ld.so.cache names
# libcuda.so.1, GPU 0's /dev/dri/by-path links); on the glibc root the driver library loads
# (e2e_check_t4_driver_loads).
e2e_check_prestart_gpu0() {
  local out=$1 who=$2 kind=$3 visible=$4 node
  e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_line "$out" "crw-rw-rw- 195, 255 /dev/nvidiactl"
  e2e_expect_line "$out" "crw-rw-rw- 508, 0 /dev/nvidia-uvm"
  e2e_expect_line "$out" "crw-rw---- 226, 1 /dev/dri/card1"
  e2e_expect_line "$out" "crw-rw---- 226, 128 /dev/dri/renderD128"
  e2e_expect_gpu0_enxio "$out"
  for node in /dev/nvidiactl /dev/nvidia-uvm /dev/dri/card1 /dev/dri/renderD128; do
    e2e_expect_line "$out" "open $node: No such device or address"
  done
  if [ "$visible" = all ]; then
    # GPU 1 too: its node opens up to the driver, its DRM nodes and by-path links are there.
    e2e_expect_line "$out" "gpu1 195:1: No such device or address"
    e2e_check_t4_gpu1 "$out"
  else
    e2e_expect_line "$out" "gpu1 195:1: Operation not permitted"
    e2e_check_t4_no_gpu1 "$out" runtime-node
  fi
  e2e_expect_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
  e2e_expect_line "$out" "file /usr/bin/nvidia-smi"
  e2e_expect_no_line "$out" "file /usr/lib/x86_64-linux-gnu/libnvidia-encode.so.535.183.01"
  e2e_expect_line "$out" "libcuda mount option ro"
  e2e_expect_line "$out" "libcuda mount option nosuid"
  e2e_expect_line "$out" "libcuda mount option nodev"
  e2e_expect_no_line "$out" "libcuda mount option rw"
  e2e_expect_line "$out" "append libcuda: Read-only file system"
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=$visible"
  e2e_expect_line "$out" "ld.so.cache names the driver folder's libcuda.so.1"
  e2e_expect_line "$out" "link /dev/dri/by-path/pci-0000:00:1e.0-card -> ../card1"
  e2e_expect_line "$out" "link /dev/dri/by-path/pci-0000:00:1e.0-render -> ../renderD128"
  e2e_expect_line "$out" "char device through /dev/dri/by-path/pci-0000:00:1e.0-card"
  e2e_expect_line "$out" "char device through /dev/dri/by-path/pci-0000:00:1e.0-render"
  case "$kind" in
    glibc) e2e_check_t4_driver_loads "$out" ;;
    busybox) ;;
    *) e2e_fail "e2e_check_prestart_gpu0: unknown root kind '$kind'" ;;
  esac
  echo "ok: $who"
}

# e2e_check_prestart_nothing OUTPUT WHO KIND: e2e_prestart_probe's output of a container on the KIND root
# that asked for no GPU (the hook ran and did nothing): no GPU node, no driver file, no driver library in
# the linker cache, no by-path link, the env without the variable; on the glibc root also
# e2e_check_t4_nothing (libcuda.so.1 does not load, the image's cache is the image's).
e2e_check_prestart_nothing() {
  local out=$1 who=$2 kind=$3
  e2e_expect_no_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_no_line "$out" "crw-rw-rw- 195, 255 /dev/nvidiactl"
  e2e_expect_no_line "$out" "crw-rw-rw- 508, 0 /dev/nvidia-uvm"
  e2e_expect_no_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
  e2e_expect_no_line "$out" "file /usr/bin/nvidia-smi"
  e2e_expect_no_line "$out" "ld.so.cache names the driver folder's libcuda.so.1"
  e2e_expect_no_line "$out" "link /dev/dri/by-path/pci-0000:00:1e.0-card -> ../card1"
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES="
  e2e_expect_line "$out" "gpu1 195:1: Operation not permitted"
  e2e_check_t4_no_gpu1 "$out" runtime-node
  case "$kind" in
    glibc) e2e_check_t4_nothing "$out" "$who" runtime-node >/dev/null ;;
    busybox) ;;
    *) e2e_fail "e2e_check_prestart_nothing: unknown root kind '$kind'" ;;
  esac
  echo "ok: $who"
}

# e2e_prestart_bundle NAME ROOT ENV HOOK STAGE CONFIG: prints $LAB/bundle-NAME, a runc bundle (`runc spec`,
# no terminal, writable root) on its own copy of the root filesystem ROOT ($LAB/rootfs-NAME) whose
# process runs e2e_prestart_probe with ENV ("KEY=VALUE", or empty) added to its environment, and:
#   - hooks.STAGE (prestart or createRuntime; none: no hook) = one hook running HOOK as
#     `gpuctk hook prestart`, its environment GPUCTK_CONFIG=CONFIG and nothing else (no PATH);
#   - /dev/nvidia1 (c 195:1, 0666) in linux.devices WITHOUT a linux.resources.devices allow rule: the
#     runtime creates the node and its device cgroup refuses it (EPERM), unless a hook allows it.
e2e_prestart_bundle() {
  local name=$1 root=$2 env=$3 hook=$4 stage=$5 config=$6 bundle rootfs
  rootfs=$(e2e_root_copy "$root" "$name")
  bundle=$(e2e_bundle_at "$name" "$rootfs" "$env" "$e2e_prestart_probe")
  python3 - "$bundle/config.json" "$hook" "$stage" "$config" <<'PY' ||
import json, sys
path, hook, stage, config = sys.argv[1:]
c = json.load(open(path))
c["linux"].setdefault("devices", []).append(
    {"path": "/dev/nvidia1", "type": "c", "major": 195, "minor": 1, "fileMode": 0o666, "uid": 0, "gid": 0})
if stage != "none":
    c.setdefault("hooks", {})[stage] = [
        {"path": hook, "args": ["gpuctk", "hook", "prestart"], "env": ["GPUCTK_CONFIG=" + config]}]
json.dump(c, open(path, "w"), indent=1)
PY
    e2e_fail "could not write $bundle/config.json"
  echo "$bundle"
}

# e2e_expect_hook_refusal OUTPUT WHO DEVICE: a runtime's OUTPUT shows the prestart hook's one-line refusal
# of DEVICE, `gpuctk: error: ... unknown device "nvidia.com/gpu=DEVICE"`, quoted as is or with the
# quotes escaped (runc's logfmt message), exactly once.
e2e_expect_hook_refusal() {
  local out=$1 who=$2 device=$3 count
  grep -qF "unknown device \"nvidia.com/gpu=$device\"" <<<"$out" ||
    grep -qF "unknown device \\\"nvidia.com/gpu=$device\\\"" <<<"$out" ||
    e2e_fail "$who: the output does not show the hook's refusal of nvidia.com/gpu=$device: $out"
  count=$(grep -o "gpuctk: error: " <<<"$out" | wc -l)
  [ "$count" = 1 ] || e2e_fail "$who: expected one 'gpuctk: error: ' line from the hook, got $count: $out"
  echo "ok: $who refused nvidia.com/gpu=$device"
}

# ---- musl (Alpine-like) images ----

# A musl root filesystem in $LAB/rootfs, like a minimal Alpine image:
#   - e2e_busybox_rootfs (a static busybox needs no C library) plus musl's dynamic loader, which is also its
#     C library, from Debian's musl package, as /lib/ld-musl-x86_64.so.1 (every x86-64 musl program's
#     PT_INTERP); no ldconfig, no /etc/ld.so.cache, and no /etc/ld-musl-x86_64.path, so musl searches its
#     default /lib:/usr/local/lib:/usr/lib;
#   - a library of the image's own on that default path, /usr/local/lib/libgpuctk-e2e-musl.so.1: it must
#     still load once update-ldcache has written the path file;
#   - /bin/cuda-version, built with musl-gcc: it dlopen()s the image's library, then "libcuda.so.1",
#     dlsym()s cuDriverGetVersion and calls it; it prints where musl found each library ("NAME loaded from
#     PATH", dlinfo RTLD_DI_LINKMAP) and "cuDriverGetVersion: <version>", or the dlerror, and exits 1 when
#     libcuda.so.1 does not load. The fixture's mock libcuda.so.1 is built by the host's gcc but needs no
#     symbol of any C library (fixtures/mock_cuda), so musl loads it as it is and calls into it.
e2e_musl_rootfs() {
  local loader
  command -v musl-gcc >/dev/null || e2e_skip "musl-gcc is not installed (Debian's musl-tools)"
  loader=$(readlink -f /lib/ld-musl-x86_64.so.1) || true
  [ -n "$loader" ] && [ -f "$loader" ] || e2e_skip "no musl loader /lib/ld-musl-x86_64.so.1 on the host (Debian's musl)"
  e2e_busybox_rootfs
  local root=$LAB/rootfs
  mkdir -p "$root/lib" "$root/usr/local/lib"
  cp "$loader" "$root/lib/ld-musl-x86_64.so.1"
  echo 'int gpuctk_e2e_musl(void) { return 1; }' >"$LAB/musl-lib.c"
  musl-gcc -shared -fPIC -Wl,-soname,libgpuctk-e2e-musl.so.1 -o "$root/usr/local/lib/libgpuctk-e2e-musl.so.1" \
    "$LAB/musl-lib.c" || e2e_fail "could not build the musl image's own library"
  e2e_cuda_version_source "$LAB/cuda-version-musl.c"
  musl-gcc -O2 -Wall -Werror -DIMAGE_LIBRARY='"libgpuctk-e2e-musl.so.1"' -o "$root/bin/cuda-version" \
    "$LAB/cuda-version-musl.c" ||
    e2e_fail "could not build the in-container musl test program"
}

# e2e_own_cdi_dirs "$@": the first call of a test whose podman reads specs from /etc/cdi (podman 4.3 reads
# only there and /var/run/cdi). The rest of the test runs in a mount namespace of its own in which both are
# empty tmpfs mounts: podman sees exactly the specs the test writes, whatever the machine has installed
# (another nvidia.com/gpu spec would make podman drop the test's devices), and the machine's engines never
# see the test's. A directory the machine lacks is made as the mount point and removed afterwards (which
# would take the mount away from another test doing the same: such tests hold the cdi-mount-points lock,
# tests/CMakeLists.txt).
e2e_own_cdi_dirs() {
  if [ "${GPUCTK_E2E_OWN_CDI:-}" != 1 ]; then
    [ "$(id -u)" -eq 0 ] || e2e_skip "needs root to start containers"
    command -v unshare >/dev/null || e2e_skip "unshare is not installed (util-linux)"
    GPUCTK_E2E_OWN_CDI=1 exec unshare --mount --propagation private -- bash "$0" "$@"
  fi
  local dir
  for dir in /etc/cdi /var/run/cdi; do
    if [ ! -d "$dir" ]; then
      mkdir "$dir" || e2e_fail "could not make the mount point $dir"
      e2e_cleanup_add "umount '$dir'; rmdir '$dir'"
    fi
    mount -t tmpfs -o mode=0755 gpuctk-e2e-cdi "$dir" || e2e_fail "could not mount a tmpfs on $dir"
  done
}

# e2e_cdi_spec_in_etc GPUCTK: `gpuctk cdi generate` for the fixture host of e2e_t4_host (default output but
# for --hook-path: its createContainer hooks run this gpuctk, and e2e_podman431_spec_options: podman 4.3.1
# reads it) into /etc/cdi/gpuctk-e2e.yaml, where podman looks: the test's own /etc/cdi (e2e_own_cdi_dirs).
# Sets spec.
e2e_cdi_spec_in_etc() {
  local gpuctk=$1
  [ "${GPUCTK_E2E_OWN_CDI:-}" = 1 ] || e2e_fail "e2e_cdi_spec_in_etc: call e2e_own_cdi_dirs first"
  spec=/etc/cdi/gpuctk-e2e.yaml
  "$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --hook-path "$(realpath "$gpuctk")" \
    "${e2e_podman431_spec_options[@]}" --output "$spec" 2>"$LAB/generate.err" || e2e_fail "cdi generate failed: $(cat "$LAB/generate.err")"
}

# ---- The real-package host (tests/realhost): Debian 12's real NVIDIA driver packages ----
# Driver root: the cached Debian root in which the real packages installed themselves
# (tests/realhost/debian_nvidia_root.sh; built once, needs the network then; never changed by a test).
# Dev root: two GPUs' devices materialised with the packages' driver version (tests/realhost/
# debian12-devices.yaml). The image gets the real CUDA 11.8 runtime, which belongs to the image.

# e2e_real_host FIXTURE: sets driver_root, dev_root, real_version (the driver version of the fetched
# packages), real_cudart (the cached root's libcudart.so.11.0) and real_entry (the cache entry).
e2e_real_host() {
  # shellcheck source=tests/realhost/lib.sh
  source "$(dirname "${BASH_SOURCE[0]}")/../realhost/lib.sh"
  realhost_root
  realhost_devices "$1" "$LAB/devices"
  driver_root=$real_root
  dev_root=$real_dev_root
}

# e2e_real_host_with_spec GPUCTK FIXTURE [OPTION...]: e2e_real_host, its spec as `cdi generate` writes it
# with default options (and the OPTIONs) in $LAB/cdi/nvidia.yaml, a gpuctk config $LAB/gpuctk.yaml using both (hook-path: this gpuctk;
# log $LAB/gpuctk.log) and $LAB/bin/gpuctk-runtime, the shim's name for gpuctk. Generation must succeed
# with exactly one line on stderr: the real NVML cannot initialise without the kernel module, so `auto`
# falls back to /proc and says so once.
e2e_real_host_with_spec() {
  local gpuctk=$1 fixture=$2
  shift 2
  e2e_real_host "$fixture"
  e2e_lab_spec "$gpuctk" "$@"
  # (A gpuctk of a build tree is told that its path will not last: e2e_without_hook_path_warnings.)
  [ "$(e2e_without_hook_path_warnings <"$LAB/generate.err" | wc -l)" = 1 ] ||
    e2e_fail "cdi generate said more than the NVML fallback: $(cat "$LAB/generate.err")"
  grep -q "; GPUs from /proc/driver/nvidia instead$" "$LAB/generate.err" ||
    e2e_fail "cdi generate did not fall back to /proc: $(cat "$LAB/generate.err")"
  e2e_lab_config "$gpuctk"
}

# e2e_real_cuda_rootfs: e2e_glibc_rootfs plus what the real driver and CUDA runtime need: librt.so.1 (the
# real libcuda, libnvidia-ml, libcudart and nvidia-smi need it), the real libcudart.so.11.0 copied from
# the cached root into /usr/lib/x86_64-linux-gnu (the runtime belongs to the image, as in CUDA's base
# images; the image's ld.so.cache is made again so it lists it), and /bin/cudart-probe, compiled here:
# it dlopens libcudart.so.11.0, calls cudaGetDeviceCount and prints
# "cudaGetDeviceCount: <code> <name>" (100 cudaErrorNoDevice: the real libcuda.so.1 loaded and reached
# the kernel boundary; 35 cudaErrorInsufficientDriver: no libcuda.so.1 could be loaded), then where glibc
# finds libcuda.so.1 ("libcuda.so.1 loaded from PATH" and "libcuda.so.1 file REALPATH", or the dlerror).
# Needs e2e_real_host.
e2e_real_cuda_rootfs() {
  e2e_glibc_rootfs
  local root=$LAB/rootfs lib=/usr/lib/x86_64-linux-gnu
  cp -L /lib/x86_64-linux-gnu/librt.so.1 "$root$lib/librt.so.1" || e2e_fail "could not copy librt.so.1 into the image"
  cp -L "$real_cudart" "$root$lib/libcudart.so.11.0" || e2e_fail "could not copy $real_cudart into the image"
  cat >"$LAB/cudart-probe.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  void* cudart = dlopen("libcudart.so.11.0", RTLD_NOW);
  if (cudart == NULL) {
    printf("dlopen libcudart.so.11.0: %s\n", dlerror());
    return 1;
  }
  int (*get_count)(int*) = (int (*)(int*))dlsym(cudart, "cudaGetDeviceCount");
  const char* (*error_name)(int) = (const char* (*)(int))dlsym(cudart, "cudaGetErrorName");
  if (get_count == NULL || error_name == NULL) {
    printf("dlsym: %s\n", dlerror());
    return 1;
  }
  int count = -1;
  const int result = get_count(&count);
  printf("cudaGetDeviceCount: %d %s\n", result, error_name(result));
  /* The runtime unloads the driver library when it fails: load it again to say where it is found. */
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  struct link_map* map = NULL;
  if (cuda == NULL) {
    printf("dlopen libcuda.so.1: %s\n", dlerror());
  } else if (dlinfo(cuda, RTLD_DI_LINKMAP, &map) == 0) {
    char file[PATH_MAX];
    printf("libcuda.so.1 loaded from %s\n", map->l_name);
    printf("libcuda.so.1 file %s\n", realpath(map->l_name, file) != NULL ? file : "(unresolved)");
  }
  return 0;
}
C
  cc -O2 -Wall -Werror -o "$root/bin/cudart-probe" "$LAB/cudart-probe.c" -ldl ||
    e2e_fail "could not build the CUDA runtime probe"
  /sbin/ldconfig -X -r "$root" || e2e_fail "ldconfig -r $root failed"
  /sbin/ldconfig -p -C "$root/etc/ld.so.cache" | grep -q "libcudart.so.11.0 (libc6,x86-64)" ||
    e2e_fail "the image's ld.so.cache does not list libcudart.so.11.0"
}

# What a container sees of the real driver: the CUDA runtime's answer, the file libcuda.so.1 leads to and
# whether it is a mount, the real nvidia-smi (exit status and first line), the linker cache's driver
# entries (tab stripped), the env and GPU 0's node.
# shellcheck disable=SC2016  # expanded in the container
e2e_real_probe='exec 2>&1
echo "env NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"
ls -l /dev/nvidia0 2>&1 | while read -r mode _ _ _ major minor _ _ _ path; do echo "$mode $major $minor $path"; done
/bin/cudart-probe 2>&1; echo "cudart-probe exit $?"
if [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libcuda.so.1)
  echo "libcuda.so.1 is $lib"; awk -v p="$lib" '"'"'$5 == p { print "mounted " p; exit }'"'"' /proc/self/mountinfo; fi
smi=$(nvidia-smi 2>&1); echo "nvidia-smi exit $?"; echo "$smi" | head -1 | sed "s/^/nvidia-smi: /"
/sbin/ldconfig -p | sed -n "s/^\t//p" | grep -E "^lib(cuda|nvidia-ml)\.so\.1 "
true'

# e2e_check_real_gpu OUTPUT WHO VISIBLE: e2e_real_probe's output of a container that asked for a GPU with
# the default capabilities (utility, compute): the real CUDA runtime reached the kernel boundary through the
# real libcuda.so.1 (cudaErrorNoDevice, never cudaErrorInsufficientDriver), which is the mounted
# libcuda.so.<real_version>; the real nvidia-smi found its libraries and failed only at the driver; the
# container's ld.so.cache lists libcuda.so.1 and libnvidia-ml.so.1 of the mounted driver (in
# /usr/lib/<triplet>, as on the host, and in nvidia/current).
e2e_check_real_gpu() {
  local out=$1 who=$2 visible=$3 lib=/lib/x86_64-linux-gnu dir=/usr/lib/x86_64-linux-gnu/nvidia/current
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=$visible"
  e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_line "$out" "cudaGetDeviceCount: 100 cudaErrorNoDevice"
  e2e_expect_line "$out" "cudart-probe exit 0"
  # The library the runtime's libcuda.so.1 is (through whichever cache entry glibc took) is the mounted
  # real one; and as on the Debian host, /usr/lib/<triplet>/libcuda.so.1 leads there too (on the host
  # through /etc/alternatives, here through the link the spec makes).
  e2e_expect_line "$out" "libcuda.so.1 file $dir/libcuda.so.$real_version"
  e2e_expect_line "$out" "libcuda.so.1 is $dir/libcuda.so.$real_version"
  e2e_expect_line "$out" "mounted $dir/libcuda.so.$real_version"
  e2e_expect_line "$out" "nvidia-smi exit 9"
  e2e_expect_line "$out" "nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
  e2e_expect_line "$out" "libcuda.so.1 (libc6,x86-64) => $dir/libcuda.so.1"
  e2e_expect_line "$out" "libnvidia-ml.so.1 (libc6,x86-64) => $dir/libnvidia-ml.so.1"
  # The multiarch folder's entry too, under whichever name the image's ld.so.conf gives the folder.
  grep -qxE "libcuda\.so\.1 \(libc6,x86-64\) => (/usr)?$lib/libcuda\.so\.1" <<<"$out" ||
    e2e_fail "$who: the linker cache does not list $lib/libcuda.so.1: $out"
  echo "ok: $who: the real CUDA runtime answered cudaErrorNoDevice, nvidia-smi failed only at the driver"
}

# e2e_check_real_nothing OUTPUT WHO: e2e_real_probe's output of a container that asked for no GPU: the
# same image's CUDA runtime finds no libcuda.so.1 (cudaErrorInsufficientDriver: the probe can fail), there
# is no nvidia-smi and no driver library in the linker cache.
e2e_check_real_nothing() {
  local out=$1 who=$2
  e2e_expect_line "$out" "cudaGetDeviceCount: 35 cudaErrorInsufficientDriver"
  e2e_expect_line "$out" "cudart-probe exit 0"
  e2e_expect_line "$out" "dlopen libcuda.so.1: libcuda.so.1: cannot open shared object file: No such file or directory"
  e2e_expect_line "$out" "nvidia-smi exit 127"
  e2e_expect_no_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  if grep -q "^libcuda.so.1 (" <<<"$out"; then e2e_fail "$who: the linker cache lists libcuda.so.1: $out"; fi
  if grep -q "^libcuda.so.1 is " <<<"$out"; then e2e_fail "$who: the image has a libcuda.so.1: $out"; fi
  echo "ok: $who: without a GPU the CUDA runtime answered cudaErrorInsufficientDriver"
}

# e2e_cuda_version_source FILE: writes the C source of /bin/cuda-version (e2e_glibc_rootfs,
# e2e_musl_rootfs) to FILE. It does what a CUDA application does first: dlopen("libcuda.so.1"),
# dlsym("cuDriverGetVersion"), call it; it prints where the loader found the library ("libcuda.so.1 loaded
# from PATH", dlinfo RTLD_DI_LINKMAP) and "cuDriverGetVersion: <version>", or the dlerror ("dlopen
# libcuda.so.1: ...") and exits 1. Built with -DIMAGE_LIBRARY='"NAME"' it first loads the image's library
# NAME the same way.
e2e_cuda_version_source() {
  cat >"$1" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

static void* load(const char* name) {
  void* handle = dlopen(name, RTLD_NOW);
  struct link_map* map = NULL;
  if (handle == NULL) {
    printf("dlopen %s: %s\n", name, dlerror());
  } else if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0) {
    printf("%s loaded from %s\n", name, map->l_name);
  }
  return handle;
}

int main(void) {
#ifdef IMAGE_LIBRARY
  load(IMAGE_LIBRARY);
#endif
  void* handle = load("libcuda.so.1");
  if (handle == NULL) {
    return 1;
  }
  int (*get_version)(int*) = (int (*)(int*))dlsym(handle, "cuDriverGetVersion");
  if (get_version == NULL) {
    printf("dlsym cuDriverGetVersion: %s\n", dlerror());
    return 1;
  }
  int version = 0;
  const int result = get_version(&version);
  if (result != 0) {
    printf("cuDriverGetVersion: error %d\n", result);
    return 1;
  }
  printf("cuDriverGetVersion: %d\n", version);
  return 0;
}
C
}
