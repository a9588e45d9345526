# Shared helpers of the end-to-end tests (sourced). They start real runtimes, so they need root.
# Each test sources this file, calls e2e_init, and registers its own cleanup with e2e_cleanup_add.

set -euo pipefail

e2e_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Prints the reason and exits 77 (ctest's SKIP_RETURN_CODE for these tests): a skip is never a pass.
e2e_skip() {
  echo "SKIP: $*" >&2
  exit 77
}

e2e_cleanups=()
e2e_cleanup_add() { e2e_cleanups+=("$1"); }
e2e_run_cleanups() {
  local i
  for ((i = ${#e2e_cleanups[@]} - 1; i >= 0; i--)); do
    eval "${e2e_cleanups[$i]}" >/dev/null 2>&1 || true
  done
}

e2e_init() {
  [ "$(id -u)" -eq 0 ] || e2e_skip "needs root to start containers"
  LAB=$(mktemp -d /tmp/gpuctk-e2e.XXXXXX)
  e2e_cleanup_add "rm -rf '$LAB'"
  trap e2e_run_cleanups EXIT
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
  cat >"$LAB/cuda-version.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

int main(void) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW);
  if (handle == NULL) {
    printf("dlopen libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  int (*get_version)(int*) = (int (*)(int*))dlsym(handle, "cuDriverGetVersion");
  if (get_version == NULL) {
    printf("dlsym cuDriverGetVersion: %s\n", dlerror());
    return 1;
  }
  struct link_map* map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0) {
    printf("libcuda.so.1 loaded from %s\n", map->l_name);
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

# e2e_runc_bundle NAME ENV: prints $LAB/bundle-NAME, a runc bundle (`runc spec`, no terminal, writable
# root) whose container runs the t4 probe (below) on its own copy of $LAB/rootfs, with ENV
# ("KEY=VALUE", or empty for nothing) added to its environment.
e2e_runc_bundle() {
  local bundle=$LAB/bundle-$1 env=$2 rootfs
  rootfs=$(e2e_rootfs_copy "$1")
  mkdir -p "$bundle"
  (cd "$bundle" && runc spec) || e2e_fail "runc spec failed"
  python3 - "$bundle/config.json" "$rootfs" "$e2e_t4_probe" "$env" <<'PY' || e2e_fail "could not write $bundle/config.json"
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

# Podman with all state under $LAB and the settings these machines need (see the runtime notes:
# no CAP_SYS_RESOURCE, so explicit ulimits; no systemd, so cgroupfs and file events).
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

# Asserts that `haystack` contains the line `needle` exactly.
e2e_expect_line() {
  local haystack=$1 needle=$2
  grep -qxF -- "$needle" <<<"$haystack" || e2e_fail "expected the line '$needle' in:
$haystack"
}

e2e_expect_no_line() {
  local haystack=$1 needle=$2
  if grep -qxF -- "$needle" <<<"$haystack"; then
    e2e_fail "did not expect the line '$needle' in:
$haystack"
  fi
}

# The t4-debian fixture host in $LAB/host, with real device nodes. Sets driver_root and dev_root.
e2e_t4_host() {
  local fixture=$1
  "$fixture" materialize t4-debian "$LAB/host" >"$LAB/roots"
  grep -qx "nodes=real" "$LAB/roots" || e2e_skip "fixture device nodes are not real char devices"
  driver_root=$(sed -n 's/^driver_root=//p' "$LAB/roots")
  dev_root=$(sed -n 's/^dev_root=//p' "$LAB/roots")
}

# e2e_t4_host, its spec as `cdi generate` writes it by default (createContainer hooks that run this
# gpuctk) in $LAB/cdi, a gpuctk config $LAB/gpuctk.yaml that uses both (hook-path: this gpuctk, for a
# spec built in memory) and logs to $LAB/gpuctk.log, and $LAB/bin/gpuctk-runtime, the shim's name for
# gpuctk. `e2e_t4_host_with_spec GPUCTK FIXTURE none` installs no spec: $LAB/cdi stays empty, so the
# hook and the shim build the spec in memory.
e2e_t4_host_with_spec() {
  local gpuctk=$1 fixture=$2 spec=${3:-generate}
  e2e_t4_host "$fixture"
  mkdir -p "$LAB/cdi" "$LAB/bin"
  if [ "$spec" = generate ]; then
    "$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" \
      --output "$LAB/cdi/nvidia.yaml" 2>"$LAB/generate.err" ||
      e2e_fail "cdi generate failed: $(cat "$LAB/generate.err")"
  fi
  cat >"$LAB/gpuctk.yaml" <<YAML
spec-dirs: [$LAB/cdi]
driver-root: $driver_root
dev-root: $dev_root
hook-path: $(realpath "$gpuctk")
log-file: $LAB/gpuctk.log
log-level: debug
YAML
  ln -s "$(realpath "$gpuctk")" "$LAB/bin/gpuctk-runtime"
}

# What a container sees of GPU 0 of the t4-debian host; e2e_check_t4_gpu0 checks it. Besides files and
# nodes: the driver library loads (/bin/cuda-version of e2e_glibc_rootfs), the container's linker cache
# (`ldconfig -p`, tab stripped) and GPU 0's /dev/dri/by-path links, which a createContainer hook makes.
# shellcheck disable=SC2016  # expanded in the container
e2e_t4_probe='ls -l /dev/nvidia0 /dev/nvidiactl /dev/dri/card1 /dev/dri/renderD128 2>&1 | while read -r mode _ _ _ major minor _ _ _ path; do echo "$mode $major $minor $path"; done
for f in /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01 /usr/bin/nvidia-smi /usr/lib/x86_64-linux-gnu/libnvidia-encode.so.535.183.01; do [ -s "$f" ] && echo "file $f"; done
cat /dev/nvidia0 2>&1 | sed "s/^cat: //"
echo "env NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"
/bin/cuda-version 2>&1; echo "cuda-version exit $?"
/sbin/ldconfig -p | sed -n "s/^\t//p"
for l in /dev/dri/by-path/pci-0000:00:1e.0-card /dev/dri/by-path/pci-0000:00:1e.0-render; do
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
# glibc finds libcuda.so.1 through that cache, so as /usr/lib/x86_64-linux-gnu/libcuda.so.1 (the
# hook's --folder); without the hook's cache it would find it on the default path, through the image's
# /lib link, as /lib/x86_64-linux-gnu/libcuda.so.1.
e2e_check_t4_driver_loads() {
  local out=$1
  e2e_expect_line "$out" "libcuda.so.1 loaded from /usr/lib/x86_64-linux-gnu/libcuda.so.1"
  e2e_expect_line "$out" "cuDriverGetVersion: $e2e_t4_cuda_version"
  e2e_expect_line "$out" "cuda-version exit 0"
  e2e_expect_line "$out" "libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"
  e2e_expect_line "$out" "libnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
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
  e2e_expect_line "$out" "can't open '/dev/nvidia0': No such device or address"
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=void"
  e2e_check_t4_driver_loads "$out"
  echo "ok: $who"
}

# e2e_check_t4_nothing OUTPUT WHO: the probe's output of a container that asked for no GPU: no node, no
# driver file, libcuda.so.1 does not load, and the image's cache is the image's (its library, no driver).
e2e_check_t4_nothing() {
  local out=$1 who=$2
  e2e_expect_no_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
  e2e_expect_no_line "$out" "file /usr/bin/nvidia-smi"
  e2e_expect_no_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
  e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES="
  e2e_expect_line "$out" "dlopen libcuda.so.1: libcuda.so.1: cannot open shared object file: No such file or directory"
  e2e_expect_line "$out" "cuda-version exit 1"
  e2e_expect_line "$out" "$e2e_image_lib_line"
  e2e_expect_no_line "$out" "libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"
  e2e_expect_no_line "$out" "link /dev/dri/by-path/pci-0000:00:1e.0-card -> ../card1"
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
