#!/usr/bin/env bash
# Whole-process timing of the createContainer hooks on the DGX-A100-like fixture host, with the arguments
# the generated spec gives them, on a container root holding the spec's driver libraries and glibc:
#   create-symlinks     every link of the spec, first run (links absent) and again (all present: no-op)
#   update-ldcache      every folder of the spec, with the host ldconfig; and with a static no-op program as
#                       ldconfig, which is what gpuctk itself costs (drop-ins, memfd, namespaces, the user
#                       namespace, the read-only copy of the root, pivot_root, seccomp, the cache installed)
#   enable-cuda-compat, disable-device-node-modification
#   container-start     all of them in one process, with the spec's own arguments (what a runtime runs)
# and what the hooks add to a `podman run` (spec with hooks vs. the same spec with --disable-hook all).
# Median and max of 40 direct spawns (podman: hyperfine), peak_rss for memory.
#   usage: bench/container_hooks.sh [build-dir]      (default build/bench-release, configured Release here)
source "$(dirname "$0")/lib.sh"
spec=$root/spec.json
"$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --format json --output "$spec" 2>/dev/null
mkdir -p "$root/bundle/rootfs/etc" "$root/bundle/rootfs/usr/lib/x86_64-linux-gnu"
cp /lib/x86_64-linux-gnu/libc.so.6 "$root/bundle/rootfs/usr/lib/x86_64-linux-gnu/"
echo '{"root":{"path":"rootfs"}}' >"$root/bundle/config.json"
echo "{\"ociVersion\":\"1.0.2\",\"id\":\"bench\",\"pid\":1,\"bundle\":\"$root/bundle\"}" >"$root/state.json"
# The driver files the spec mounts, copied to their container paths (what the runtime's bind mounts show);
# each hook's arguments, one per line, in $root/<hook>.args.
python3 - "$spec" "$root/bundle/rootfs" "$root" <<'PY'
import json, os, shutil, sys
spec, rootfs, out = sys.argv[1:]
s = json.load(open(spec))
edits = s["containerEdits"]
for m in edits.get("mounts", []):
    if m["hostPath"].endswith(".json") or "/run/" in m["containerPath"]:
        continue
    dst = rootfs + m["containerPath"]
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.isfile(m["hostPath"]):
        shutil.copy(m["hostPath"], dst)
# container-start carries each step's options: split them back into the steps' own command lines.
step_of = {"--link": "create-symlinks", "--host-driver-version": "enable-cuda-compat",
           "--host-cuda-version": "enable-cuda-compat", "--folder": "update-ldcache"}
steps = {"create-symlinks": [], "enable-cuda-compat": [], "update-ldcache": []}
for h in edits.get("hooks", []) + [h for d in s["devices"] for h in d["containerEdits"].get("hooks", [])]:
    name, args = h["args"][2], h["args"][3:]
    if name == "container-start":
        open(f"{out}/container-start.args", "w").write("\n".join(args) + "\n")
        i = 0
        while i < len(args):
            if args[i] in step_of:
                steps[step_of[args[i]]] += args[i:i + 2]
                i += 2
            else:
                i += 1
    else:
        steps.setdefault(name, [])
        steps[name] += args
for name, args in steps.items():
    open(f"{out}/{name}.args", "w").write("\n".join(args) + "\n")
links = steps["create-symlinks"]
print(f"{len(links) // 2} links, {sum(1 for a in open(out + '/update-ldcache.args') if a.strip() == '--folder')} ldcache folders")
PY
# The no-op ldconfig writes the smallest file update-ldcache installs as a cache: glibc's magic, at the
# path after -C (its scratch directory; nothing else in the root is writable to it).
cat >"$root/true.c" <<'C'
#include <stdio.h>
#include <string.h>
int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], "-C") == 0) {
      FILE* f = fopen(argv[i + 1], "w");
      return f && fputs("glibc-ld.so.cache1.1", f) >= 0 && fclose(f) == 0 ? 0 : 1;
    }
  return 0;
}
C
cc -static -O2 -o "$root/static-true" "$root/true.c"

# run NAME PREPARE ARGS...: median and max of 40 runs (after 3 warm-ups) of `gpuctk hook ARGS` with the state
# on stdin, spawned directly (hyperfine 1.15 can only redirect stdin through a shell, whose start-up noise
# is as large as a hook); PREPARE (a shell command, untimed) runs before each.
run() {
  local name=$1 prepare=$2
  shift 2
  python3 - "$name" "$prepare" "$root/state.json" "$gpuctk" hook "$@" <<'PY' || return 0
import statistics, subprocess, sys, time
name, prepare, state, *cmd = sys.argv[1:]
times = []
for i in range(43):
    if prepare:
        subprocess.run(prepare, shell=True, check=True)
    with open(state) as stdin:
        t = time.perf_counter()
        r = subprocess.run(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = (time.perf_counter() - t) * 1e3
    if r.returncode != 0:
        print(f"{name}: FAILED: {r.stderr.decode().strip()}")
        sys.exit(1)
    if i >= 3:
        times.append(elapsed)
print(f"{name}: median {statistics.median(times):.2f} ms  max {max(times):.2f} ms  min {min(times):.2f} ms", end="")
PY
  echo "  peak RSS $(bench_rss sh -c "exec $gpuctk hook $* < $root/state.json")"
}
links=$(tr '\n' ' ' <"$root/create-symlinks.args")
folders=$(tr '\n' ' ' <"$root/update-ldcache.args")
remove_links=$(python3 -c 'import sys; a=open(sys.argv[1]).read().split(); print(" ".join(sys.argv[2] + a[i].split("::")[1] for i in range(1, len(a), 2)))' \
  "$root/create-symlinks.args" "$root/bundle/rootfs")
run "create-symlinks (links absent)" "rm -f $remove_links" create-symlinks $links
run "create-symlinks (links present)" "" create-symlinks $links
run "update-ldcache, host ldconfig" "" update-ldcache $folders
run "update-ldcache, no-op ldconfig (gpuctk's own cost)" "" update-ldcache --ldconfig-path "@$root/static-true" $folders
run "enable-cuda-compat" "" enable-cuda-compat $(tr '\n' ' ' <"$root/enable-cuda-compat.args")
run "disable-device-node-modification" "" disable-device-node-modification
run "container-start (every step above in one process, links present, host ldconfig)" "" container-start \
  $(tr '\n' ' ' <"$root/container-start.args")

# What the hooks add to a podman start (busybox, NVIDIA device 0 by CDI), if podman is here.
if command -v podman >/dev/null && [ "$(id -u)" -eq 0 ] && command -v busybox >/dev/null; then
  mkdir -p "$root/img/bin" "$root/img/etc" "$root/img/proc" "$root/img/dev" "$root/img/sys" "$root/cdi"
  cp "$(command -v busybox)" "$root/img/bin/busybox"
  ln -s busybox "$root/img/bin/true"
  P=(podman --root "$root/podman/root" --runroot "$root/podman/runroot" --cgroup-manager=cgroupfs
    --events-backend=file --runtime runc)
  for variant in hooks no-hooks; do
    extra=()
    [ "$variant" = no-hooks ] && extra=(--disable-hook all)
    # podman 4.3.1's CDI library refuses additionalGids (README): without the flag it refuses the spec.
    "$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --vendor bench.gpuctk.dev \
      --feature-flag no-additional-gids-for-device-nodes --output "$root/cdi/$variant.yaml" "${extra[@]}" \
      2>/dev/null
    sed -i "s|bench.gpuctk.dev/gpu|bench.gpuctk.dev/$variant|" "$root/cdi/$variant.yaml"
  done
  # podman 4.3.1 reads CDI specs only from /etc/cdi and /var/run/cdi.
  made_cdi_dir=
  [ -d /var/run/cdi ] || made_cdi_dir=1
  mkdir -p /var/run/cdi
  cp "$root/cdi/hooks.yaml" /var/run/cdi/gpuctk-bench-hooks.yaml
  cp "$root/cdi/no-hooks.yaml" /var/run/cdi/gpuctk-bench-no-hooks.yaml
  trap 'rm -f /var/run/cdi/gpuctk-bench-*.yaml; umount "$root/podman/root/overlay" 2>/dev/null || true; rm -rf "$root"; [ -z "$made_cdi_dir" ] || rmdir /var/run/cdi' EXIT
  for variant in no-hooks hooks; do
    hyperfine --warmup 2 --runs 10 --output=null --export-json "$root/p.json" \
      "${P[*]} run --rm --network=none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 --device bench.gpuctk.dev/$variant=0 --rootfs $root/img /bin/true" \
      >/dev/null 2>&1 || { echo "podman run ($variant): FAILED"; continue; }
    echo "podman run --device …=0 ($variant): $(bench_stats "$root/p.json")"
  done
fi
