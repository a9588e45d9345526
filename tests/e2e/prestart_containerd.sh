#!/usr/bin/env bash
# End to end for the runtime shim in prestart mode under containerd 1.6: gpuctk.yaml says
# `runtime-mode: prestart`, so gpuctk-runtime (the runc binary of containerd's runc v2 shim) leaves the
# CDI edits out of config.json and adds a hooks.prestart entry running `gpuctk hook prestart --config
# <GPUCTK_CONFIG>`, which runc runs. On the busybox root and on the glibc root, a container with
# NVIDIA_VISIBLE_DEVICES=0 gets GPU 0's nodes and the control nodes, allowed in the device cgroup while
# an unrequested node (195:1, made in the container with mknod) stays refused, the driver files
# read-only, nosuid, nodev, the createContainer hooks' links and linker cache, and the glibc container
# loads libcuda.so.1, while its env still says NVIDIA_VISIBLE_DEVICES=0 (the CDI mode would have set
# void): the injection came from the hook. The bundle of a running GPU container has exactly that hook. A
# container without the variable is untouched; a bad request stops the container with gpuctk's reason.
# The host's mounts are the same once containerd is stopped.
#   usage: prestart_containerd.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs containerd "ctr (containerd)" runc "python3 (it reads config.json)"
e2e_prestart_lab "$gpuctk" "$fixture"
echo "runtime-mode: prestart" >>"$LAB/gpuctk.yaml"

e2e_mounts_snapshot "$LAB/mountinfo.before"

e2e_containerd_start

# ctr_run NAME KIND ENV [FLAGS...] -- COMMAND...: a container on its own copy of the KIND root; ENV is
# "KEY=VALUE" or empty. (ctr takes the rootfs path as the first argument after the flags.)
ctr_run() {
  local name=$1 kind=$2 env=$3 rootfs
  shift 3
  local flags=(--runc-binary "$LAB/bin/gpuctk-runtime")
  while [ "$1" != -- ]; do
    flags+=("$1")
    shift
  done
  shift
  rootfs=$(e2e_root_copy "$LAB/root-$kind" "$name")
  [ -n "$env" ] && flags+=(--env "$env")
  # (ctr waits long for a daemon that is gone: only while containerd runs.)
  e2e_cleanup_add "if kill -0 $containerd_pid; then ${CTR[*]} task kill -s KILL $name; ${CTR[*]} task delete -f $name; ${CTR[*]} container rm $name; fi; runc --root /run/containerd/runc/default delete -f $name"
  "${CTR[@]}" run "${flags[@]}" --rootfs "$rootfs" "$name" "$@"
}

for kind in busybox glibc; do
  out=$(ctr_run "gpuctk-e2e-gpu0-$kind-$$" "$kind" NVIDIA_VISIBLE_DEVICES=0 --rm -- /bin/sh -c "$e2e_prestart_probe" 2>&1) ||
    e2e_fail "ctr run with NVIDIA_VISIBLE_DEVICES=0 ($kind root) failed: $out"
  e2e_check_prestart_gpu0 "$out" "containerd 1.6, gpuctk-runtime in prestart mode, $kind root" "$kind" 0

  out=$(ctr_run "gpuctk-e2e-none-$kind-$$" "$kind" "" --rm -- /bin/sh -c "$e2e_prestart_probe" 2>&1) ||
    e2e_fail "ctr run without a request ($kind root) failed: $out"
  e2e_check_prestart_nothing "$out" "containerd, prestart mode, no request, $kind root" "$kind"
  changes=$(diff -r --no-dereference "$LAB/root-$kind" "$LAB/rootfs-gpuctk-e2e-none-$kind-$$" 2>&1) ||
    e2e_fail "the container without a request changed its root directory: $changes"

  bad=GPU-00000000-0000-0000-0000-000000000000
  if out=$(ctr_run "gpuctk-e2e-bad-$kind-$$" "$kind" "NVIDIA_VISIBLE_DEVICES=$bad" --rm -- /bin/true 2>&1); then
    e2e_fail "containerd started a container asking for $bad ($kind root): $out"
  fi
  e2e_expect_hook_refusal "$out" "containerd, prestart mode ($kind root)" "$bad"
done

# The shim's edit itself: a running GPU container's bundle has the prestart hook, and no CDI edit (no
# injected device, mount or env).
name=gpuctk-e2e-inspect-$$
ctr_run "$name" busybox NVIDIA_VISIBLE_DEVICES=0 -d -- /bin/sleep 60 >"$LAB/inspect.out" 2>&1 ||
  e2e_fail "ctr run -d failed: $(cat "$LAB/inspect.out")"
config=$LAB/containerd/state/io.containerd.runtime.v2.task/default/$name/config.json
[ -f "$config" ] || e2e_fail "no bundle config at $config: $(find "$LAB/containerd/state" 2>&1 | head -20)"
python3 - "$config" "$hook" "$LAB/gpuctk.yaml" <<'PY' || e2e_fail "the running container's config.json is not what prestart mode writes"
import json, sys
path, hook, config = sys.argv[1:]
c = json.load(open(path))
want = {"path": hook, "args": ["gpuctk", "hook", "prestart", "--config", config]}
got = c.get("hooks", {}).get("prestart", [])
hooks = [{k: h.get(k) for k in ("path", "args")} for h in got]
if hooks != [want]:
    sys.exit("hooks.prestart is %s, want [%s]" % (json.dumps(got), json.dumps(want)))
env = c["process"]["env"]
if "NVIDIA_VISIBLE_DEVICES=0" not in env or any(e.startswith("NVIDIA_VISIBLE_DEVICES=") and e != "NVIDIA_VISIBLE_DEVICES=0" for e in env):
    sys.exit("process.env is %s, want NVIDIA_VISIBLE_DEVICES=0 only" % env)
devices = [d["path"] for d in c.get("linux", {}).get("devices", [])]
if any("nvidia" in d or "/dri/" in d for d in devices):
    sys.exit("linux.devices has injected nodes: %s" % devices)
mounts = [m["destination"] for m in c.get("mounts", [])]
if any("nvidia" in m or "libcuda" in m for m in mounts):
    sys.exit("mounts has injected driver files: %s" % mounts)
for stage in ("createRuntime", "createContainer", "startContainer"):
    if c.get("hooks", {}).get(stage):
        sys.exit("hooks.%s is %s: CDI hooks in prestart mode" % (stage, c["hooks"][stage]))
print("ok: the shim added hooks.prestart %s and no CDI edit" % json.dumps(want))
PY
"${CTR[@]}" task kill -s KILL "$name" >/dev/null 2>&1 || true
for _ in $(seq 50); do
  "${CTR[@]}" task delete "$name" >/dev/null 2>&1 && break
  sleep 0.1
done
"${CTR[@]}" container rm "$name" >/dev/null 2>&1 || e2e_fail "could not remove the container $name"

# Stop containerd (by its pid) and compare the host's mounts with those before it started.
kill "$containerd_pid"
for _ in $(seq 100); do
  kill -0 "$containerd_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$containerd_pid" 2>/dev/null && e2e_fail "containerd did not stop"
e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "containerd with gpuctk-runtime in prestart mode"
echo "PASS: containerd 1.6 ran gpuctk-runtime in prestart mode: runc ran the hook it added; busybox and glibc roots get GPU 0; no request untouched, a bad request refused, host mounts unchanged"
