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
#   podman-gpu0-c32   the spec written with --compat32 (the 32-bit driver libraries, their links and folders,
#                     as every spec had them before issue 24 cut 3): what leaving them out saved
#   podman-mN, runc-mN  (N = 0, 50, 100, 200) N bind mounts of small host files, as the spec mounts driver
#                     files
#   podman-nN, runc-nN  (N = 0, 25, 50, 100) N character device nodes (/dev/null's numbers, made in a scratch
#                     directory), as a spec's device nodes: podman's from a synthetic CDI spec (each device
#                     sets one variable too, so N = 0 is a CDI device with no mount or node), runc's from
#                     config.json; the per-entry cost is the least-squares slope over N
#   podman-fmt-yaml, podman-fmt-json  podman-m0 with gpuctk's spec (as written, another kind) beside the
#                     synthetic one, as YAML or as the same content in JSON: podman's CDI library reads and
#                     parses every spec file in /etc/cdi and /var/run/cdi at every start with a CDI device, so
#                     against podman-m0 this is what one spec costs it to parse, in each format
#   podman-m0-all     podman-m0 with every spec of this benchmark in /etc/cdi (5 files, 4 of them gpuctk's
#                     DGX spec in some shape): what the specs a start does not use cost it
#   podman-glibc-none, podman-glibc-gpu0, podman-glibc-gpu0-ldc   a glibc image with a linker cache of its
#                     own (imported into podman, so every container starts from a fresh overlay, as from a
#                     registry image): busybox, the host's glibc and GPUCTK_BENCH_GLIBC_LIBS (default 150)
#                     more of the host's libraries in a merged-/usr Debian layout, its ld.so.cache made by
#                     ldconfig; GPU 0 with the default `ld-cache: merge` (issue 24 cut 2) and with the spec's
#                     hooks run under a config saying `ld-cache: ldconfig` (the sandboxed ldconfig, as
#                     before), same spec otherwise; podman-glibc-gpu0-nohk the spec without hooks
#   prestart-glibc-gpu0, prestart-glibc-gpu0-ldc, shim-glibc-gpu0, shim-glibc-gpu0-ldc, runc-glibc-none
#                     the same image for runc and the shim (a fresh overlay of it mounted as the bundle's
#                     root before each start, outside the timing); the shim's -ldc variant injects the
#                     same spec with its hooks told `ld-cache: ldconfig`
# GPUCTK_BENCH_ONLY="VARIANT..." runs only those variants (the summary lines whose variants all ran).
# Each podman variant runs with only the spec files it names in /etc/cdi (put in place before its timed
# start; /var/run/cdi stays empty), so no variant pays for another's spec.
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
mkdir -p "$root/cdi"  # every spec file; use_specs puts a variant's into /etc/cdi
# The glibc image (see above): merged /usr, Debian's multiarch folder, the host's libraries (regular files,
# smallest first, the C library and the loader always), busybox, and its own ld.so.cache.
glibc=$root/glibc
mkdir -p "$glibc"/usr/{bin,lib/x86_64-linux-gnu,lib64} "$glibc"/{proc,sys,dev,tmp,etc/ld.so.conf.d,run}
ln -s usr/bin "$glibc/bin"
ln -s usr/lib "$glibc/lib"
ln -s usr/lib64 "$glibc/lib64"
cp "$busybox" "$glibc/usr/bin/busybox"
ln -s busybox "$glibc/usr/bin/true"
echo 12.0 >"$glibc/etc/debian_version"
echo "include /etc/ld.so.conf.d/*.conf" >"$glibc/etc/ld.so.conf"
host_libs=/usr/lib/x86_64-linux-gnu
cp -L "$host_libs/libc.so.6" "$host_libs/ld-linux-x86-64.so.2" "$glibc/usr/lib/x86_64-linux-gnu/"
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$glibc/usr/lib64/ld-linux-x86-64.so.2"
find "$host_libs" -maxdepth 1 -type f -name 'lib*.so.*' -printf '%s %p\n' | sort -n |
  head -n "${GPUCTK_BENCH_GLIBC_LIBS:-150}" | cut -d' ' -f2 | xargs cp -t "$glibc/usr/lib/x86_64-linux-gnu/"
/sbin/ldconfig -r "$glibc"
tar -C "$glibc" -cf "$root/glibc.tar" .
"$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --output "$root/cdi/nvidia.yaml" \
  2>/dev/null
"$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --disable-hook all \
  --vendor gpuctk-nohooks.example --output "$root/cdi/nohooks.yaml" 2>/dev/null
"$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --compat32 \
  --vendor gpuctk-compat32.example --output "$root/cdi/compat32.yaml" 2>/dev/null
# The synthetic entries: small host files and /dev/null-like nodes, one CDI spec with a device per count
# (gpuctk-synth.example/entries=mN, =nN).
mounts_n=(0 50 100 200)
nodes_n=(0 25 50 100)
mkdir -p "$root/synth" "$root/synth-dev"
for ((i = 0; i < 200; i++)); do echo "$i" >"$root/synth/f$i"; done
for ((i = 0; i < 100; i++)); do mknod -m 0666 "$root/synth-dev/null$i" c 1 3; done
python3 - "$root" "${mounts_n[*]}" "${nodes_n[*]}" <<'PY'
import json, sys
root, mounts_n, nodes_n = sys.argv[1], map(int, sys.argv[2].split()), map(int, sys.argv[3].split())
opts = ["ro", "nosuid", "nodev", "rbind", "rprivate"]
devices = []
for n in mounts_n:
    devices.append({"name": f"m{n}", "containerEdits": {"env": [f"SYNTH=m{n}"], "mounts": [
        {"hostPath": f"{root}/synth/f{i}", "containerPath": f"/synth/f{i}", "options": opts} for i in range(n)]}})
for n in nodes_n:
    devices.append({"name": f"n{n}", "containerEdits": {"env": [f"SYNTH=n{n}"], "deviceNodes": [
        {"path": f"/dev/synth{i}", "hostPath": f"{root}/synth-dev/null{i}", "type": "c", "major": 1, "minor": 3,
         "fileMode": 0o666, "permissions": "rwm"} for i in range(n)]}})
spec = {"cdiVersion": "0.5.0", "kind": "gpuctk-synth.example/entries", "devices": devices}
json.dump(spec, open(f"{root}/cdi/synth.json", "w"), indent=1)
PY
# The format variants: the default spec under another kind, as gpuctk writes it in YAML and in JSON.
for format in yaml json; do
  "$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --vendor gpuctk-format.example \
    --format "$format" --output "$root/cdi/format.$format" 2>/dev/null
done
cp "$root/cdi/nvidia.yaml" "$root/spec/nvidia.yaml"
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
           "--cuda-compat-container-root": order[1], "--ldconfig-path": order[2], "--folder": order[2],
           "--ld-cache-entry": order[2]}
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
split_hooks "$root/cdi/nvidia.yaml" "$root/cdi/split.json" gpuctk-5hooks.example/gpu
split_hooks "$root/cdi/nvidia.yaml" "$root/spec-5hk/nvidia.json" nvidia.com/gpu
# The default spec under another kind, its hooks told (GPUCTK_CONFIG) to run the sandboxed ldconfig.
cat >"$root/ldconfig.yaml" <<YAML
ld-cache: ldconfig
YAML
ldconfig_spec() {  # ldconfig_spec OUT KIND
  python3 - "$root/cdi/nvidia.yaml" "$1" "$root/ldconfig.yaml" "$2" <<'PY'
import json, sys, yaml
src, dst, config, kind = sys.argv[1:]
s = yaml.safe_load(open(src))
s["kind"] = kind
for edits in [s["containerEdits"]] + [d["containerEdits"] for d in s["devices"]]:
    for hook in edits.get("hooks", []):
        hook["env"] = hook.get("env", []) + ["GPUCTK_CONFIG=" + config]
json.dump(s, open(dst, "w"), indent=1)
PY
}
ldconfig_spec "$root/cdi/ldconfig.json" gpuctk-ldconfig.example/gpu
mkdir -p "$root/spec-ldc"  # the shim's spec directory for shim-glibc-gpu0-ldc
ldconfig_spec "$root/spec-ldc/nvidia.json" nvidia.com/gpu
cat >"$root/gpuctk.yaml" <<YAML
spec-dirs: [$root/spec]
driver-root: $root/host
dev-root: $root/host
hook-path: $gpuctk
YAML
sed "s|spec-dirs: \[$root/spec\]|spec-dirs: [$root/spec-5hk]|" "$root/gpuctk.yaml" >"$root/gpuctk-5hk.yaml"
{ cat "$root/gpuctk.yaml"; echo "ld-cache: ldconfig"; } >"$root/gpuctk-ldc.yaml"
sed "s|spec-dirs: \[$root/spec\]|spec-dirs: [$root/spec-ldc]|" "$root/gpuctk.yaml" >"$root/gpuctk-shim-ldc.yaml"
ln -s "$gpuctk" "$root/bin/gpuctk-runtime"
podman=(podman --root "$root/podman/root" --runroot "$root/podman/runroot" --cgroup-manager=cgroupfs
  --events-backend=file --runtime runc)
cleanup() {
  local dir
  for dir in "$root"/*-glibc-*/rootfs; do umount "$dir" 2>/dev/null || true; done
  umount "$root/podman/root/overlay" 2>/dev/null || true
  rm -rf "$root"
  for dir in "${made[@]}"; do umount "$dir" && rmdir "$dir"; done
}
trap cleanup EXIT

# bundle NAME ENV HOOK [CONFIG [ROOTFS]]: a runc bundle running /bin/true on ROOTFS (default the busybox
# root) with ENV added, and the prestart hook (with gpuctk's CONFIG, default $root/gpuctk.yaml) when HOOK=1.
bundle() {
  mkdir -p "$root/$1"
  (cd "$root/$1" && runc spec)
  python3 - "$root/$1/config.json" "${5:-$root/rootfs}" "$gpuctk" "${4:-$root/gpuctk.yaml}" "$2" "$3" <<'PY'
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
# synth_bundle NAME MOUNTS NODES: runc-none's bundle with MOUNTS of the synthetic files bound (the spec's
# mount options) and NODES of the synthetic device nodes (and their cgroup rules).
synth_bundle() {
  cp -r "$root/runc-none" "$root/$1"
  python3 - "$root/$1/config.json" "$root" "$2" "$3" <<'PY'
import json, sys
path, root, mounts, nodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = json.load(open(path))
c["mounts"] += [{"destination": f"/synth/f{i}", "type": "bind", "source": f"{root}/synth/f{i}",
                 "options": ["ro", "nosuid", "nodev", "rbind", "rprivate"]} for i in range(mounts)]
lin = c.setdefault("linux", {})
lin.setdefault("devices", []).extend(
    {"path": f"/dev/synth{i}", "type": "c", "major": 1, "minor": 3, "fileMode": 0o666, "uid": 0, "gid": 0}
    for i in range(nodes))
if nodes:
    lin.setdefault("resources", {}).setdefault("devices", []).append(
        {"allow": True, "type": "c", "major": 1, "minor": 3, "access": "rwm"})
json.dump(c, open(path, "w"))
PY
}
for n in "${mounts_n[@]}"; do synth_bundle "runc-m$n" "$n" 0; done
# The glibc image's runc bundles: a fresh overlay of it as their root before each start (fresh_root).
bundle runc-glibc-none "" 0 "$root/gpuctk.yaml" "$root/runc-glibc-none/rootfs"
bundle prestart-glibc-gpu0 NVIDIA_VISIBLE_DEVICES=0 1 "$root/gpuctk.yaml" "$root/prestart-glibc-gpu0/rootfs"
bundle prestart-glibc-gpu0-ldc NVIDIA_VISIBLE_DEVICES=0 1 "$root/gpuctk-ldc.yaml" \
  "$root/prestart-glibc-gpu0-ldc/rootfs"
bundle shim-glibc-gpu0 NVIDIA_VISIBLE_DEVICES=0 0 "$root/gpuctk.yaml" "$root/shim-glibc-gpu0/rootfs"
bundle shim-glibc-gpu0-ldc NVIDIA_VISIBLE_DEVICES=0 0 "$root/gpuctk.yaml" "$root/shim-glibc-gpu0-ldc/rootfs"
# fresh_root BUNDLE: the glibc image as BUNDLE's root, on an overlay with an empty upper layer.
fresh_root() {
  local dir=$root/$1
  umount "$dir/rootfs" 2>/dev/null || true
  rm -rf "$dir/upper" "$dir/work"
  mkdir -p "$dir/upper" "$dir/work" "$dir/rootfs"
  mount -t overlay gpuctk-bench-glibc -o "lowerdir=$glibc,upperdir=$dir/upper,workdir=$dir/work" "$dir/rootfs"
}
"${podman[@]}" import "$root/glibc.tar" localhost/gpuctk-bench-glibc >/dev/null
for n in "${nodes_n[@]}"; do synth_bundle "runc-n$n" 0 "$n"; done

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
  [podman-gpu0-c32]="podman_run --device gpuctk-compat32.example/gpu=0 --rootfs $root/rootfs /bin/true"
  [podman-fmt-yaml]="podman_run --device gpuctk-synth.example/entries=m0 --rootfs $root/rootfs /bin/true"
  [podman-fmt-json]="podman_run --device gpuctk-synth.example/entries=m0 --rootfs $root/rootfs /bin/true"
)
declare -A prep=()  # what a variant needs before each start, outside the timing
for v in runc-glibc-none prestart-glibc-gpu0 prestart-glibc-gpu0-ldc shim-glibc-gpu0 shim-glibc-gpu0-ldc; do
  prep[$v]="fresh_root $v"
  cmd[$v]="runc run --bundle $root/$v bench-\$RANDOM"
done
cmd[shim-glibc-gpu0]="env GPUCTK_CONFIG=$root/gpuctk.yaml $root/bin/gpuctk-runtime run --bundle $root/shim-glibc-gpu0 bench-\$RANDOM"
cmd[shim-glibc-gpu0-ldc]="env GPUCTK_CONFIG=$root/gpuctk-shim-ldc.yaml $root/bin/gpuctk-runtime run --bundle $root/shim-glibc-gpu0-ldc bench-\$RANDOM"
cmd[podman-glibc-none]="podman_run localhost/gpuctk-bench-glibc /bin/true"
cmd[podman-glibc-gpu0]="podman_run --device nvidia.com/gpu=0 localhost/gpuctk-bench-glibc /bin/true"
cmd[podman-glibc-gpu0-ldc]="podman_run --device gpuctk-ldconfig.example/gpu=0 localhost/gpuctk-bench-glibc /bin/true"
cmd[podman-glibc-gpu0-nohk]="podman_run --device gpuctk-nohooks.example/gpu=0 localhost/gpuctk-bench-glibc /bin/true"
cmd[podman-m0-all]="podman_run --device gpuctk-synth.example/entries=m0 --rootfs $root/rootfs /bin/true"
# The spec files (of $root/cdi) each podman variant finds in /etc/cdi.
declare -A specs=(
  [podman-gpu0]=nvidia.yaml [podman-gpu0-5hk]=split.json [podman-gpu0-nohk]=nohooks.yaml
  [podman-gpu0-c32]=compat32.yaml [podman-all]=nvidia.yaml [podman-fmt-yaml]="synth.json format.yaml"
  [podman-fmt-json]="synth.json format.json"
  [podman-m0-all]="nvidia.yaml split.json nohooks.yaml compat32.yaml synth.json"
  [podman-glibc-gpu0]=nvidia.yaml [podman-glibc-gpu0-ldc]=ldconfig.json [podman-glibc-gpu0-nohk]=nohooks.yaml
)
# use_specs FILE...: /etc/cdi holds exactly these files of $root/cdi.
use_specs() {
  rm -f /etc/cdi/*
  local f
  for f in "$@"; do cp "$root/cdi/$f" /etc/cdi/; done
}
order=(podman-none podman-gpu0 podman-gpu0-5hk podman-gpu0-nohk podman-gpu0-c32 podman-all runc-none shim-gpu0
  shim-gpu0-5hk prestart-gpu0 prestart-gpu0-5hk podman-fmt-yaml podman-fmt-json podman-m0-all
  podman-glibc-none podman-glibc-gpu0 podman-glibc-gpu0-ldc podman-glibc-gpu0-nohk runc-glibc-none prestart-glibc-gpu0
  prestart-glibc-gpu0-ldc shim-glibc-gpu0 shim-glibc-gpu0-ldc)
for n in "${mounts_n[@]}"; do
  cmd[podman-m$n]="podman_run --device gpuctk-synth.example/entries=m$n --rootfs $root/rootfs /bin/true"
  specs[podman-m$n]=synth.json
  cmd[runc-m$n]="runc run --bundle $root/runc-m$n bench-\$RANDOM"
  order+=("podman-m$n" "runc-m$n")
done
for n in "${nodes_n[@]}"; do
  cmd[podman-n$n]="podman_run --device gpuctk-synth.example/entries=n$n --rootfs $root/rootfs /bin/true"
  specs[podman-n$n]=synth.json
  cmd[runc-n$n]="runc run --bundle $root/runc-n$n bench-\$RANDOM"
  order+=("podman-n$n" "runc-n$n")
done
if [ -n "${GPUCTK_BENCH_ONLY:-}" ]; then
  read -r -a only <<<"$GPUCTK_BENCH_ONLY"
  for v in "${only[@]}"; do
    [ -n "${cmd[$v]:-}" ] || { echo "bench/start_cost.sh: no variant \"$v\"" >&2; exit 2; }
  done
  order=("${only[@]}")
fi
# settle: waits (up to 2 s) until the last podman start's leftovers have ended (conmon, and the `podman
# container cleanup` it runs after the container exited), so that they do not overlap the next timed start.
settle() {
  local i
  for ((i = 0; i < 100; i++)); do
    pgrep -f -- "$root/podman/" >/dev/null || return 0
    sleep 0.02
  done
}
# Each variant once first (a failure stops the benchmark with its output), then the rounds.
for v in "${order[@]}"; do
  # shellcheck disable=SC2086 # a list of file names
  use_specs ${specs[$v]:-}
  eval "${prep[$v]:-}"
  out=$(eval "${cmd[$v]}" 2>&1) || { echo "bench/start_cost.sh: $v failed: $out" >&2; exit 1; }
done
: >"$root/times"
for ((r = 0; r < rounds; r++)); do
  for v in "${order[@]}"; do
    # shellcheck disable=SC2086 # a list of file names
    use_specs ${specs[$v]:-}
    eval "${prep[$v]:-}"
    settle
    start=$(date +%s%N)
    eval "${cmd[$v]}" >/dev/null 2>&1
    echo "$v $((($(date +%s%N) - start) / 1000))" >>"$root/times"
  done
done
echo "== container start and stop, $rounds interleaved rounds (median / max, ms; load average $(cut -d' ' -f1-3 /proc/loadavg))"
python3 - "$root/times" "${mounts_n[*]}" "${nodes_n[*]}" "${order[@]}" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    v, us = line.split()
    times.setdefault(v, []).append(int(us) / 1000)
med = {v: statistics.median(t) for v, t in times.items()}
mounts_n, nodes_n = [int(n) for n in sys.argv[2].split()], [int(n) for n in sys.argv[3].split()]
for v in sys.argv[4:]:
    print(f"{v:18} {med[v]:8.1f} / {max(times[v]):8.1f}")
def diff(label, v, base, word):
    if v in med and base in med:
        print(f"{label}: {v:18} {med[v] - med[base]:+7.1f} ms {word} {base}")
for v, base in (("podman-gpu0", "podman-none"), ("podman-gpu0-5hk", "podman-none"),
                ("podman-gpu0-nohk", "podman-none"), ("podman-all", "podman-none"), ("shim-gpu0", "runc-none"),
                ("shim-gpu0-5hk", "runc-none"), ("prestart-gpu0", "runc-none"), ("prestart-gpu0-5hk", "runc-none"),
                ("podman-glibc-gpu0", "podman-glibc-none"), ("podman-glibc-gpu0-ldc", "podman-glibc-none"),
                ("podman-glibc-gpu0-nohk", "podman-glibc-none"),
                ("prestart-glibc-gpu0", "runc-glibc-none"), ("prestart-glibc-gpu0-ldc", "runc-glibc-none"),
                ("shim-glibc-gpu0", "runc-glibc-none"), ("shim-glibc-gpu0-ldc", "runc-glibc-none")):
    diff("GPU adds", v, base, "over")
for v, old in (("podman-gpu0", "podman-gpu0-5hk"), ("shim-gpu0", "shim-gpu0-5hk"), ("prestart-gpu0", "prestart-gpu0-5hk")):
    diff("one hook process", v, old, "against")
diff("no 32-bit libraries", "podman-gpu0", "podman-gpu0-c32", "against")
for v, old in (("podman-glibc-gpu0", "podman-glibc-gpu0-ldc"), ("prestart-glibc-gpu0", "prestart-glibc-gpu0-ldc"),
               ("shim-glibc-gpu0", "shim-glibc-gpu0-ldc")):
    diff("merged linker cache", v, old, "against")
for v in ("podman-fmt-yaml", "podman-fmt-json", "podman-m0-all"):
    diff("specs parsed", v, "podman-m0", "over")
# Least-squares slope of the medians over N: what one more entry costs.
def slope(prefix, ns):
    ys = [med[f"{prefix}{n}"] for n in ns]
    mx, my = sum(ns) / len(ns), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(ns, ys)) / sum((x - mx) ** 2 for x in ns)
for engine in ("podman", "runc"):
    if not all(f"{engine}-{k}{n}" in med for k, ns in (("m", mounts_n), ("n", nodes_n)) for n in ns):
        continue
    print(f"per bind mount:  {engine:6} {slope(engine + '-m', mounts_n) * 1000:7.0f} us "
          f"(N = {' '.join(map(str, mounts_n))})")
    print(f"per device node: {engine:6} {slope(engine + '-n', nodes_n) * 1000:7.0f} us "
          f"(N = {' '.join(map(str, nodes_n))})")
PY
echo "== the spec a GPU 0 start applies"
use_specs nvidia.yaml
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
