#!/usr/bin/env bash
# What a GPU costs a container start (issue 24's breakdown), on the DGX-A100-like fixture host (8 GPUs, 4 in
# MIG mode; its device nodes are real): the whole start and stop of a container running /bin/true on a
# busybox root, in interleaved rounds (every variant once per round, in turn, so a busy machine slows all of
# them alike), median and max over the rounds (GPUCTK_BENCH_ROUNDS, default 30):
#   podman-none       podman run, no device
#   podman-gpu0       podman run --device nvidia.com/gpu=0 (CDI: gpuctk's spec, default output)
#   podman-gpu0-nohk  the same spec written with --disable-hook all: what the engine's mounts and nodes cost
#   podman-gpu0-5hk   the same spec with its container-start hook split back into the four hooks it
#                     replaced (create-symlinks, enable-cuda-compat, update-ldcache,
#                     disable-device-node-modification): the shape before one hook process (issue 24 cut 1)
#   podman-all        podman run --device nvidia.com/gpu=all
#   runc-none         runc run, no request
#   shim-gpu0         gpuctk-runtime run (the shim in cdi mode), NVIDIA_VISIBLE_DEVICES=0
#   prestart-gpu0     runc run with the prestart hook in config.json, NVIDIA_VISIBLE_DEVICES=0
#   shim-gpu0-5hk, prestart-gpu0-5hk   the same with the split spec installed instead
# "GPU adds" lines subtract the no-device median of the same engine. Then where the time goes: the spec's
# size (mounts, device nodes, hook processes) and `strace -c -f` of one podman-gpu0 start (the system calls
# that take the most time, summed over podman, conmon, runc and the hooks).
# podman 4.3 reads CDI specs only from /etc/cdi and /var/run/cdi: the benchmark runs in a private mount
# namespace in which both are empty tmpfs mounts holding only its spec (the host's are untouched).
#   usage: bench/start_cost.sh [build-dir]      (default build/bench-release, configured Release here)
if [ "${GPUCTK_BENCH_PRIVATE:-}" != 1 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "bench/start_cost.sh: needs root (it starts containers)" >&2; exit 1; }
  exec env GPUCTK_BENCH_PRIVATE=1 unshare --mount --propagation private -- bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
rounds=${GPUCTK_BENCH_ROUNDS:-30}
made=()
for dir in /etc/cdi /var/run/cdi; do
  if [ ! -d "$dir" ]; then
    mkdir "$dir" # a mount point, empty on the host; removed at exit
    made+=("$dir")
  fi
  mount -t tmpfs -o mode=0755 gpuctk-bench-cdi "$dir"
done
busybox=$(command -v busybox)
mkdir -p "$root/rootfs"/{bin,proc,sys,dev,tmp,etc,mnt,run} "$root/bin" "$root/spec"
cp "$busybox" "$root/rootfs/bin/busybox"
for applet in $("$root/rootfs/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/rootfs/bin/$applet"
done
"$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --output /etc/cdi/nvidia.yaml \
  2>/dev/null
"$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --disable-hook all \
  --vendor gpuctk-nohooks.example --output /etc/cdi/nohooks.yaml 2>/dev/null
cp /etc/cdi/nvidia.yaml "$root/spec/nvidia.yaml"
# split_hooks SPEC OUT KIND: SPEC with its container-start hook split back into one hook per step (each
# step's options, in the steps' order), as JSON, its kind set to KIND.
split_hooks() {
  python3 - "$@" <<'PY'
import json, sys, yaml
src, dst, kind = sys.argv[1:]
s = yaml.safe_load(open(src))
s["kind"] = kind
order = ["create-symlinks", "enable-cuda-compat", "update-ldcache", "disable-device-node-modification"]
step_of = {"--link": order[0], "--host-driver-version": order[1], "--host-cuda-version": order[1],
           "--cuda-compat-container-root": order[1], "--ldconfig-path": order[2], "--folder": order[2]}
def split(hook):
    if hook["args"][2] != "container-start":
        return [hook]
    args, steps, i = hook["args"][3:], {}, 0
    while i < len(args):
        if args[i] == "--disable-device-node-modification":
            steps.setdefault(order[3], [])
            i += 1
        else:
            steps.setdefault(step_of[args[i]], []).extend(args[i:i + 2])
            i += 2
    return [dict(hook, args=hook["args"][:2] + [name] + steps[name]) for name in order if name in steps]
for edits in [s["containerEdits"]] + [d["containerEdits"] for d in s["devices"]]:
    if "hooks" in edits:
        edits["hooks"] = [h for hook in edits["hooks"] for h in split(hook)]
json.dump(s, open(dst, "w"), indent=1)
PY
}
mkdir -p "$root/spec-5hk"
split_hooks /etc/cdi/nvidia.yaml /etc/cdi/split.json gpuctk-5hooks.example/gpu
split_hooks /etc/cdi/nvidia.yaml "$root/spec-5hk/nvidia.json" nvidia.com/gpu
cat >"$root/gpuctk.yaml" <<YAML
spec-dirs: [$root/spec]
driver-root: $root/host
dev-root: $root/host
hook-path: $gpuctk
YAML
sed "s|spec-dirs: \[$root/spec\]|spec-dirs: [$root/spec-5hk]|" "$root/gpuctk.yaml" >"$root/gpuctk-5hk.yaml"
ln -s "$gpuctk" "$root/bin/gpuctk-runtime"
podman=(podman --root "$root/podman/root" --runroot "$root/podman/runroot" --cgroup-manager=cgroupfs
  --events-backend=file --runtime runc)
cleanup() {
  umount "$root/podman/root/overlay" 2>/dev/null || true
  rm -rf "$root"
  for dir in "${made[@]}"; do umount "$dir" && rmdir "$dir"; done
}
trap cleanup EXIT

# bundle NAME ENV HOOK [CONFIG]: a runc bundle running /bin/true with ENV added, and the prestart hook
# (with gpuctk's CONFIG, default $root/gpuctk.yaml) when HOOK=1.
bundle() {
  mkdir -p "$root/$1"
  (cd "$root/$1" && runc spec)
  python3 - "$root/$1/config.json" "$root/rootfs" "$gpuctk" "${4:-$root/gpuctk.yaml}" "$2" "$3" <<'PY'
import json, sys
path, rootfs, gpuctk, config, env, hook = sys.argv[1:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/true"]
if env:
    c["process"]["env"].append(env)
c["root"] = {"path": rootfs, "readonly": False}
if hook == "1":
    c["hooks"] = {"prestart": [{"path": gpuctk, "args": ["gpuctk", "hook", "prestart", "--config", config]}]}
json.dump(c, open(path, "w"))
PY
}
bundle runc-none "" 0
bundle shim-gpu0 NVIDIA_VISIBLE_DEVICES=0 0
bundle prestart-gpu0 NVIDIA_VISIBLE_DEVICES=0 1
bundle shim-gpu0-5hk NVIDIA_VISIBLE_DEVICES=0 0
bundle prestart-gpu0-5hk NVIDIA_VISIBLE_DEVICES=0 1 "$root/gpuctk-5hk.yaml"

podman_run() { "${podman[@]}" run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 "$@"; }
declare -A cmd=(
  [podman-none]="podman_run --rootfs $root/rootfs /bin/true"
  [podman-gpu0]="podman_run --device nvidia.com/gpu=0 --rootfs $root/rootfs /bin/true"
  [podman-gpu0-nohk]="podman_run --device gpuctk-nohooks.example/gpu=0 --rootfs $root/rootfs /bin/true"
  [podman-gpu0-5hk]="podman_run --device gpuctk-5hooks.example/gpu=0 --rootfs $root/rootfs /bin/true"
  [podman-all]="podman_run --device nvidia.com/gpu=all --rootfs $root/rootfs /bin/true"
  [runc-none]="runc run --bundle $root/runc-none bench-\$RANDOM"
  [shim-gpu0]="env GPUCTK_CONFIG=$root/gpuctk.yaml $root/bin/gpuctk-runtime run --bundle $root/shim-gpu0 bench-\$RANDOM"
  [prestart-gpu0]="runc run --bundle $root/prestart-gpu0 bench-\$RANDOM"
  [shim-gpu0-5hk]="env GPUCTK_CONFIG=$root/gpuctk-5hk.yaml $root/bin/gpuctk-runtime run --bundle $root/shim-gpu0-5hk bench-\$RANDOM"
  [prestart-gpu0-5hk]="runc run --bundle $root/prestart-gpu0-5hk bench-\$RANDOM"
)
order=(podman-none podman-gpu0 podman-gpu0-5hk podman-gpu0-nohk podman-all runc-none shim-gpu0 shim-gpu0-5hk
  prestart-gpu0 prestart-gpu0-5hk)
# Each variant once first (a failure stops the benchmark with its output), then the rounds.
for v in "${order[@]}"; do
  out=$(eval "${cmd[$v]}" 2>&1) || { echo "bench/start_cost.sh: $v failed: $out" >&2; exit 1; }
done
: >"$root/times"
for ((r = 0; r < rounds; r++)); do
  for v in "${order[@]}"; do
    start=$(date +%s%N)
    eval "${cmd[$v]}" >/dev/null 2>&1
    echo "$v $((($(date +%s%N) - start) / 1000))" >>"$root/times"
  done
done
echo "== container start and stop, $rounds interleaved rounds (median / max, ms)"
python3 - "$root/times" "${order[@]}" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    v, us = line.split()
    times.setdefault(v, []).append(int(us) / 1000)
med = {v: statistics.median(t) for v, t in times.items()}
for v in sys.argv[2:]:
    print(f"{v:18} {med[v]:8.1f} / {max(times[v]):8.1f}")
for v, base in (("podman-gpu0", "podman-none"), ("podman-gpu0-5hk", "podman-none"),
                ("podman-gpu0-nohk", "podman-none"), ("podman-all", "podman-none"), ("shim-gpu0", "runc-none"),
                ("shim-gpu0-5hk", "runc-none"), ("prestart-gpu0", "runc-none"), ("prestart-gpu0-5hk", "runc-none")):
    print(f"GPU adds: {v:18} {med[v] - med[base]:+7.1f} ms over {base}")
for v, old in (("podman-gpu0", "podman-gpu0-5hk"), ("shim-gpu0", "shim-gpu0-5hk"), ("prestart-gpu0", "prestart-gpu0-5hk")):
    print(f"one hook process: {v:18} {med[v] - med[old]:+7.1f} ms against {old}")
PY
echo "== the spec a GPU 0 start applies"
python3 - /etc/cdi/nvidia.yaml <<'PY'
import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
dev = next(d for d in s["devices"] if d["name"] == "0")
def count(key):
    return len(s["containerEdits"].get(key, [])) + len(dev["containerEdits"].get(key, []))
print(f"mounts {count('mounts')}, device nodes {count('deviceNodes')}, hook processes {count('hooks')}, "
      f"spec {sum(1 for _ in open(sys.argv[1]))} lines")
PY
if command -v strace >/dev/null; then
  echo "== strace -c -f of one podman-gpu0 start (top 12 system calls by time)"
  strace -c -f -o "$root/strace" "${podman[@]}" run --rm --network=none --ulimit nofile=20000:20000 \
    --ulimit nproc=32768:32768 --device nvidia.com/gpu=0 --rootfs "$root/rootfs" /bin/true >/dev/null 2>&1
  sed -n '1,2p;3,14p' "$root/strace"
else
  echo "(strace is not installed: no system-call breakdown)"
fi
