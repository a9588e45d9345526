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
