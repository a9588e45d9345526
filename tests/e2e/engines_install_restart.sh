#!/usr/bin/env bash
# The DaemonSet's `gpuctk install` restarts the engine when (and only when) it changed the engine's config:
# a real containerd (2.x, Debian unstable, fetched into the test cache) runs on a node root of its own
# ($LAB/host: its config at /etc/containerd/config.toml, its socket at /run/containerd/containerd.sock,
# as the pod sees them below --host-root), started by the test, which knows its pid and plays its
# supervisor (systemd's Restart=always): it starts containerd again once it stopped.
#   - install with --restart-mode signal adds the runtime "nvidia", and says it sent SIGTERM to exactly
#     that pid; containerd stops gracefully (exit 0); started again, its CRI serves the handler "nvidia";
#   - a second install changes nothing and signals nothing: containerd keeps running;
#   - --uninstall restores the file and signals it again; started again, "nvidia" is gone.
#   usage: engines_install_restart.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$(dirname "$0")/../engines/lib.sh"
e2e_init gpuctk -- "$@"
e2e_needs runc
engines_python_check
engines_fetch sid
host=$LAB/host
etc=$host/etc/containerd
socket=$host/run/containerd/containerd.sock
# A node root has /etc and /proc (install refuses a --host-root without them).
mkdir -p "$host/run/containerd" "$host/proc" "$LAB/cdi"
engines_containerd_config "$etc"
"$engines_python" "$engines_dir/toml_set.py" "$etc/config.toml" grpc address "\"$socket\"" ||
  e2e_fail "could not move containerd's socket to $socket"

# handlers EXPECTED WHO: the CRI's runtime handlers, one per line.
handlers() {
  local got
  got=$(engines_cri handlers | tr '\n' ' ') || e2e_fail "$2: cri.py handlers failed"
  [ "$got" = "$1 " ] || e2e_fail "$2: the CRI serves the handlers '$got', not '$1 '"
}
# stopped_by_sigterm PID WHO: containerd (this shell's child) exits within 20 s, with status 0: its
# graceful stop.
stopped_by_sigterm() {
  local status=0
  e2e_ended "$1" 20 || e2e_fail "$2: containerd (pid $1) still runs"
  wait "$1" || status=$?
  [ "$status" = 0 ] || e2e_fail "$2: containerd exited $status, not 0 (a graceful stop)"
}
effect="it stops gracefully and its supervisor starts it again with the new config"

cp "$etc/config.toml" "$LAB/config.before-install"
engines_containerd_start "$etc" "$socket"
handlers runc "before the install"
pid=$containerd_pid
out=$("$gpuctk" install --host-root "$host" --runtime containerd --restart-mode signal 2>&1) ||
  e2e_fail "gpuctk install failed: $out"
e2e_expect_line "$out" "containerd: config changed; sent SIGTERM to containerd (pid $pid, serving /run/containerd/containerd.sock): $effect"
stopped_by_sigterm "$pid" "install"
echo "ok: install changed containerd's config and sent SIGTERM to containerd (pid $pid), which stopped gracefully"
engines_containerd_start "$etc" "$socket"
handlers "nvidia runc" "after the install"
dump=$("$engines_root/usr/bin/containerd" --config "$etc/config.toml" config dump 2>&1) || e2e_fail "config dump failed: $dump"
grep -qx " *BinaryName = '/usr/local/gpuctk/bin/gpuctk-runtime'" <<<"$dump" ||
  e2e_fail "the dump has no BinaryName of the installed shim: $dump"
echo "ok: started again, containerd serves the handler \"nvidia\" (BinaryName /usr/local/gpuctk/bin/gpuctk-runtime)"

pid=$containerd_pid
out=$("$gpuctk" install --host-root "$host" --runtime containerd --restart-mode signal 2>&1) ||
  e2e_fail "the second gpuctk install failed: $out"
if grep -q "SIGTERM\|restart" <<<"$out"; then e2e_fail "an unchanged config restarted containerd: $out"; fi
sleep 1
kill -0 "$pid" 2>/dev/null || e2e_fail "containerd (pid $pid) stopped after an install that changed nothing"
handlers "nvidia runc" "after the second install"
echo "ok: a second install changed nothing and signalled nothing"

out=$("$gpuctk" install --host-root "$host" --runtime containerd --restart-mode signal --uninstall 2>&1) ||
  e2e_fail "gpuctk install --uninstall failed: $out"
e2e_expect_line "$out" "containerd: config changed; sent SIGTERM to containerd (pid $pid, serving /run/containerd/containerd.sock): $effect"
stopped_by_sigterm "$pid" "uninstall"
cmp -s "$etc/config.toml" "$LAB/config.before-install" || e2e_fail "--uninstall did not give back the bytes of before the install"
[ ! -e "$etc/config.toml.gpuctk-backup" ] || e2e_fail "--uninstall left the backup"
engines_containerd_start "$etc" "$socket"
handlers runc "after the uninstall"
echo "ok: --uninstall gave back the file and signalled containerd again; started again, \"nvidia\" is gone"
engines_containerd_stop
[ ! -e "$etc/config.toml.gpuctk-restart" ] || e2e_fail "a restart is still pending"
echo "PASS: gpuctk install restarted containerd $containerd_version (SIGTERM to its pid) when it changed its config, and only then"
