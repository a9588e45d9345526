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

# e2e_t4_host, a static spec for it in $LAB/cdi (no hooks: the hook subcommands are a later issue), a
# gpuctk config $LAB/gpuctk.yaml that uses both and logs to $LAB/gpuctk.log, and $LAB/bin/gpuctk-runtime,
# the shim's name for gpuctk.
e2e_t4_host_with_spec() {
  local gpuctk=$1 fixture=$2
  e2e_t4_host "$fixture"
  mkdir -p "$LAB/cdi" "$LAB/bin"
  "$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --disable-hook all \
    --output "$LAB/cdi/nvidia.yaml" 2>/dev/null || e2e_fail "cdi generate failed"
  cat >"$LAB/gpuctk.yaml" <<YAML
spec-dirs: [$LAB/cdi]
driver-root: $driver_root
dev-root: $dev_root
log-file: $LAB/gpuctk.log
log-level: debug
YAML
  ln -s "$(realpath "$gpuctk")" "$LAB/bin/gpuctk-runtime"
}

# What a container sees of GPU 0 of the t4-debian host; e2e_check_t4_gpu0 checks it.
# shellcheck disable=SC2016  # expanded in the container
e2e_t4_probe='ls -l /dev/nvidia0 /dev/nvidiactl 2>&1 | while read -r mode _ _ _ major minor _ _ _ path; do echo "$mode $major $minor $path"; done
for f in /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01 /usr/bin/nvidia-smi /usr/lib/x86_64-linux-gnu/libnvidia-encode.so.535.183.01; do [ -s "$f" ] && echo "file $f"; done
cat /dev/nvidia0 2>&1 | sed "s/^cat: //"
echo "env NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"'

# e2e_check_t4_gpu0 OUTPUT WHO: the probe's output shows GPU 0, its control node, the utility and compute
# driver files (no video: NVIDIA_DRIVER_CAPABILITIES defaults to utility,compute) and the env.
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
  echo "ok: $who"
}
