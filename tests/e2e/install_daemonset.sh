#!/usr/bin/env bash
# deploy/kubernetes/gpuctk-installer.yaml's two containers as the kubelet runs them (their args and env
# from the manifest, the node's / at /host moved to a node root in the lab), with a real containerd 1.6
# whose runc shim runs the runtime install wrote, as containerd's CRI does for runtime class "nvidia":
#   - install (GPUCTK_INSTALL_* only) puts gpuctk on the node, wires containerd's config, writes the spec;
#   - a container is created through the installed /usr/local/gpuctk/bin/gpuctk-runtime and runs;
#   - SIGTERM (a rolling update, the DaemonSet deleted) takes the runtime out of containerd's config and
#     removes the spec, and keeps the binary, its links and the config: the running container is still
#     killed and deleted through the shim (without it: "fork/exec ...: no such file or directory", and the
#     pod would stay Terminating);
#   - labels (GPUCTK_LABELS_* only) writes the node's labels, nvidia.com/gpu.present included, into the
#     features.d directory and keeps them when SIGTERM stops it;
#   - `gpuctk install --uninstall` then removes the binary.
# It runs in a private mount namespace of its own (it executes itself again under unshare) in which the
# node root's /usr/local is bind-mounted on /usr/local, so that the runtime path install writes for the
# node is the file containerd's shim runs; nothing of the host's /usr/local changes.
#   usage: install_daemonset.sh <gpuctk> <gpuctk-fixture>
if [ "${GPUCTK_E2E_UNSHARED:-}" != 1 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to start containers" >&2; exit 77; }
  command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) is not installed" >&2; exit 77; }
  GPUCTK_E2E_UNSHARED=1 exec unshare --mount --propagation private -- bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
gpuctk=$(realpath "$1")
fixture=$2
deploy=$(cd "$(dirname "$0")/../../deploy/kubernetes" && pwd)
data=$(cd "$(dirname "$0")/../data/engine" && pwd)
e2e_init
e2e_needs containerd "ctr (containerd)" runc
python3 -c 'import yaml' 2>/dev/null || e2e_skip "python3-yaml is not installed"
e2e_busybox_rootfs
e2e_t4_host "$fixture"
node=$LAB/host
mkdir -p "$node/etc/containerd" "$node/usr/local" "$LAB/features.d"
cp "$data/containerd-2-default.toml" "$node/etc/containerd/config.toml"
cp "$node/etc/containerd/config.toml" "$LAB/config.toml.original"
mount --bind "$node/usr/local" /usr/local || e2e_fail "could not bind the node's /usr/local"
e2e_cleanup_add "umount -l /usr/local"

# manifest CONTAINER: its args, then its env as NAME=VALUE lines, /host and /features.d moved to the lab.
manifest() {
  python3 - "$deploy/gpuctk-installer.yaml" "$1" "$node" "$LAB/features.d" <<'PY'
import sys, yaml
path, name, node, features = sys.argv[1:]
ds = list(yaml.safe_load_all(open(path)))[2]
(c,) = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == name]
print(" ".join(c["args"]))
for e in c["env"]:
    value = e["value"]
    for pod, lab in (("/host", node), ("/features.d", features)):
        if value == pod or value.startswith(pod + "/"):
            value = lab + value[len(pod):]
    print(f'{e["name"]}={value}')
PY
}
# start CONTAINER OUT: gpuctk as the DaemonSet's CONTAINER runs it (its manifest's args and env only), in the
# background with its output in OUT; sets started_pid (killed at exit) and started_env (the env's lines).
start() {
  local lines args
  mapfile -t lines < <(manifest "$1")
  read -ra args <<<"${lines[0]}"
  started_env=("${lines[@]:1}")
  env "${started_env[@]}" "$gpuctk" "${args[@]}" >"$2" 2>&1 &
  started_pid=$!
  e2e_cleanup_add "kill $started_pid"
}
# eventually FILE TEXT WHO: FILE holds TEXT within 30 s.
eventually() {
  for _ in $(seq 300); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  e2e_fail "$3: no \"$2\" in $1: $(cat "$1" 2>&1)"
}
# stop PID WHO: SIGTERM, then it exits 0 within 30 s.
stop() {
  local status=0
  kill -TERM "$1"
  e2e_ended "$1" 30 || e2e_fail "$2 still runs 30 s after SIGTERM"
  wait "$1" || status=$?
  [ "$status" = 0 ] || e2e_fail "$2 exited $status on SIGTERM"
}

start gpuctk "$LAB/install.out"
install_pid=$started_pid install_env=("${started_env[@]}")
eventually "$LAB/install.out" "spec: wrote $node/" "install"
e2e_expect_line "$(cat "$LAB/install.out")" "installed $node/usr/local/gpuctk/bin/gpuctk"
spec=$(sed -n 's/^spec: wrote //p' "$LAB/install.out")
grep -qF "BinaryName = \"/usr/local/gpuctk/bin/gpuctk-runtime\"" "$node/etc/containerd/config.toml" ||
  e2e_fail "containerd's config has no runtime /usr/local/gpuctk/bin/gpuctk-runtime: $(cat "$node/etc/containerd/config.toml")"
echo "ok: the install container (its manifest's env only) installed gpuctk and wired containerd"

# The shim's config: the low-level runtime, the log in the lab.
printf 'runtimes: [runc]\nlog-file: %s\n' "$LAB/gpuctk.log" >"$LAB/gpuctk.yaml"
e2e_containerd_start
name=gpuctk-e2e-daemonset-$$
e2e_cleanup_add "${CTR[*]} task kill -s KILL $name; ${CTR[*]} task rm -f $name; ${CTR[*]} container rm $name"
"${CTR[@]}" run -d --runc-binary /usr/local/gpuctk/bin/gpuctk-runtime --rootfs "$LAB/rootfs" "$name" /bin/sleep 1000 \
  >"$LAB/run.out" 2>&1 || e2e_fail "ctr run through the installed shim failed: $(cat "$LAB/run.out")"
"${CTR[@]}" task ls | grep -q "^$name .*RUNNING" || e2e_fail "the container does not run: $("${CTR[@]}" task ls)"
grep -qF '"binary_name":"/usr/local/gpuctk/bin/gpuctk-runtime"' \
  "$LAB/containerd/state/io.containerd.runtime.v2.task/default/$name/options.json" ||
  e2e_fail "containerd's shim does not run the installed runtime: $(cat "$LAB/containerd/state/io.containerd.runtime.v2.task/default/$name/options.json")"
echo "ok: a container runs through the installed /usr/local/gpuctk/bin/gpuctk-runtime"

stop "$install_pid" "install --watch --uninstall-on-exit"
out=$(cat "$LAB/install.out")
e2e_expect_line "$out" "stopping on SIGTERM"
e2e_expect_line "$out" "spec: removed $spec"
e2e_expect_line "$out" "kept $node/usr/local/gpuctk/bin/gpuctk, its links and $node/etc/gpuctk/config.yaml: running containers of the runtime are stopped through them (gpuctk install --uninstall removes them)"
cmp -s "$node/etc/containerd/config.toml" "$LAB/config.toml.original" ||
  e2e_fail "SIGTERM did not give containerd's config back: $(cat "$node/etc/containerd/config.toml")"
[ -x /usr/local/gpuctk/bin/gpuctk ] || e2e_fail "SIGTERM removed the binary a running container needs"
echo "ok: SIGTERM took the runtime out of containerd's config and kept the binary"

out=$("${CTR[@]}" task kill -s KILL "$name" 2>&1) || e2e_fail "the running container cannot be killed: $out"
for _ in $(seq 100); do
  "${CTR[@]}" task ls | grep -q "^$name .*STOPPED" && break
  sleep 0.1
done
"${CTR[@]}" task ls | grep -q "^$name .*STOPPED" || e2e_fail "the container did not stop: $("${CTR[@]}" task ls)"
out=$("${CTR[@]}" task rm "$name" 2>&1) || e2e_fail "the stopped container cannot be deleted: $out"
"${CTR[@]}" container rm "$name" >/dev/null
echo "ok: after the DaemonSet's pod stopped, the container was killed and deleted through the shim"

start labels "$LAB/labels.out"
labels_pid=$started_pid
eventually "$LAB/features.d/gpuctk" "nvidia.com/gpu.present=true" "labels"
e2e_expect_line "$(cat "$LAB/features.d/gpuctk")" "nvidia.com/gpu.count=2"
cp "$LAB/features.d/gpuctk" "$LAB/labels.written"
stop "$labels_pid" "labels --watch"
cmp -s "$LAB/features.d/gpuctk" "$LAB/labels.written" || e2e_fail "the labels changed or went when labels stopped"
echo "ok: the labels container (its manifest's env only) wrote the node's labels and kept them on SIGTERM"

# The explicit uninstall, with the install container's env but for its watch (no watch this time).
mapfile -t uninstall_env < <(printf '%s\n' "${install_env[@]}" | grep -v '^GPUCTK_INSTALL_\(WATCH\|UNINSTALL_ON_EXIT\)=')
out=$(env "${uninstall_env[@]}" "$gpuctk" install --uninstall 2>&1) || e2e_fail "install --uninstall failed: $out"
[ ! -e "$node/usr/local/gpuctk" ] || e2e_fail "--uninstall left $node/usr/local/gpuctk"
[ ! -e "$node/etc/gpuctk" ] || e2e_fail "--uninstall left $node/etc/gpuctk"
echo "PASS: the DaemonSet's containers from their manifest env; its SIGTERM unwired containerd and kept what a running container needed to be killed and deleted; labels kept; --uninstall removed the rest"
