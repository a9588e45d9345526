#!/usr/bin/env bash
# What the prestart hook adds to a container start: `runc run` and `crun run` of /bin/true on a busybox root
# with NVIDIA_VISIBLE_DEVICES=all on the DGX-A100-like fixture host (its device nodes are real), measured
# with hyperfine (-N, 60 runs after 5 warm-ups), median and max:
#   none            no hook, no request
#   prestart        the prestart hook in config.json (spec installed, default output: it runs the spec's
#                   createContainer hooks, update-ldcache included)
#   prestart-noldc  the same with the spec's update-ldcache hook removed: the hook's own cost without the
#                   ldconfig run (the issue's target excludes it)
#   precreate       the same request through the runtime shim in its default cdi mode (config.json edited
#                   before runc reads it; runc then makes the nodes and mounts and runs the hooks)
# crun runs inside `unshare -m` with the cgroup2 "unified" mount hidden, as on these hybrid hosts it must.
#   usage: bench/prestart.sh [build-dir]      (default build/bench-release, configured Release here)
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "bench/prestart.sh: needs root (it starts containers)" >&2; exit 1; }
busybox=$(command -v busybox)
mkdir -p "$root/rootfs"/{bin,proc,sys,dev,tmp,etc,mnt,run} "$root/spec" "$root/spec-noldc" "$root/bin"
cp "$busybox" "$root/rootfs/bin/busybox"
for applet in $("$root/rootfs/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/rootfs/bin/$applet"
done
"$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --mode proc \
  --format json --output "$root/spec/nvidia.json" 2>/dev/null
python3 - "$root/spec/nvidia.json" "$root/spec-noldc/nvidia.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def drop(edits):
    edits["hooks"] = [h for h in edits.get("hooks", []) if "update-ldcache" not in h["args"]]
drop(s["containerEdits"])
for d in s["devices"]:
    drop(d["containerEdits"])
json.dump(s, open(sys.argv[2], "w"))
PY
for spec in spec spec-noldc; do
  cat >"$root/$spec.yaml" <<YAML
spec-dirs: [$root/$spec]
driver-root: $root/host
dev-root: $root/host
hook-path: $gpuctk
YAML
done
ln -s "$gpuctk" "$root/bin/gpuctk-runtime"

# bundle NAME HOOK_CONFIG: a bundle running /bin/true, NVIDIA_VISIBLE_DEVICES=all, with the prestart hook
# reading HOOK_CONFIG ("" for no hook).
bundle() {
  mkdir -p "$root/$1"
  (cd "$root/$1" && runc spec)
  python3 - "$root/$1/config.json" "$root/rootfs" "$gpuctk" "$2" <<'PY'
import json, sys
path, rootfs, gpuctk, config = sys.argv[1:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/true"]
c["process"]["env"].append("NVIDIA_VISIBLE_DEVICES=all")
c["root"] = {"path": rootfs, "readonly": False}
if config:
    c["hooks"] = {"prestart": [{"path": gpuctk, "args": ["gpuctk", "hook", "prestart", "--config", config]}]}
json.dump(c, open(path, "w"))
PY
}
bundle none ""
bundle prestart "$root/spec.yaml"
bundle prestart-noldc "$root/spec-noldc.yaml"
bundle precreate ""
# The shim edits config.json in place: each run starts from the pristine copy.
cp "$root/precreate/config.json" "$root/precreate.json"

crun_wrapped="unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun \"\$@\"' crun"
for runtime in runc crun; do
  cmd=$runtime
  [ "$runtime" = crun ] && cmd=$crun_wrapped
  for case in none prestart prestart-noldc precreate; do
    run="$cmd run --bundle $root/$case bench-$runtime"
    prepare=""
    if [ "$case" = precreate ]; then
      [ "$runtime" = crun ] && continue   # the shim execs the first of its `runtimes`: runc
      run="env GPUCTK_CONFIG=$root/spec.yaml $root/bin/gpuctk-runtime run --bundle $root/$case bench-$runtime"
      prepare="cp $root/precreate.json $root/precreate/config.json"
    fi
    hyperfine -N --warmup 5 --runs 60 --output=null ${prepare:+--prepare "$prepare"} \
      --export-json "$root/$runtime-$case.json" "$run" >/dev/null 2>&1 ||
      { echo "$runtime $case: failed: $(eval "$run" 2>&1 | tail -3)"; continue; }
    printf '%-5s %-15s %s\n' "$runtime" "$case" "$(bench_stats "$root/$runtime-$case.json")"
  done
done
