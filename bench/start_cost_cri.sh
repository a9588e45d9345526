#!/usr/bin/env bash
# What a GPU costs a pod's start through CRI on containerd (issue 24's CRI numbers): the kubelet stand-in
# (tests/engines/cri.py) drives containerd 2.x (Debian unstable's, set up as tests/engines/soak.sh sets it
# up: the real Debian 12 NVIDIA 535 driver packages as the host's driver, the fixture's device nodes, the
# spec `gpuctk cdi generate` writes for them in containerd's CDI directory) through whole pod lives, one
# after another: RunPodSandbox, CreateContainer, StartContainer, the container's exit, StopPodSandbox,
# RemovePodSandbox. The container is the probe image (a glibc image with its own linker cache) running
# `echo probe done`. The forms are taken in turn (interleaved), each pod timed by cri.py (--times), median
# and max per form over ROUNDS rounds (default 30):
#   none          the default handler, no device
#   cdi-gpu0      CDIDevices nvidia.com/gpu=0 (containerd applies gpuctk's spec; its hooks merge the image's
#                 linker cache: `ld-cache: merge`, the default)
#   cdi-gpu0-ldc  the same spec under another kind, its hooks told (GPUCTK_CONFIG) `ld-cache: ldconfig`
#   cdi-gpu0-nohk the same spec under another kind without hooks (`cdi generate --disable-hook all`)
#   shim-gpu0     the "nvidia" handler (gpuctk-runtime) with NVIDIA_VISIBLE_DEVICES=<GPU 0's UUID>
#   shim-none     the "nvidia" handler without a request
# containerd caches the CDI directory's specs (it watches it), so unlike podman a spec is not parsed again
# at every start.
#   usage: sudo bash bench/start_cost_cri.sh <gpuctk> <gpuctk-fixture> [ROUNDS]
#   e.g.   sudo bash bench/start_cost_cri.sh build/src/gpuctk build/fixtures/builder/gpuctk-fixture 30
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../tests/e2e/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$here/../tests/engines/lib.sh"
gpuctk=$1
fixture=$2
rounds=${3:-30}
e2e_init
command -v runc >/dev/null || e2e_skip "runc is not installed"
engines_python_check
engines_containerd_lab "$gpuctk" "$fixture" sid  # sets $c, containerd's directory (configured)
# The variants' specs beside the default one (other kinds).
cat >"$LAB/ldconfig.yaml" <<YAML
ld-cache: ldconfig
YAML
"$engines_python" - "$LAB/spec.json" "$LAB/cdi/ldconfig.json" "$LAB/ldconfig.yaml" <<'PY'
import json, sys
src, dst, config = sys.argv[1:]
s = json.load(open(src))
s["kind"] = "gpuctk-ldconfig.example/gpu"
for edits in [s["containerEdits"]] + [d["containerEdits"] for d in s["devices"]]:
    for hook in edits.get("hooks", []):
        hook["env"] = hook.get("env", []) + ["GPUCTK_CONFIG=" + config]
json.dump(s, open(dst, "w"), indent=1)
PY
"$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --hook-path "$(realpath "$gpuctk")" \
  --disable-hook all --vendor gpuctk-nohooks.example --output "$LAB/cdi/nohooks.yaml" 2>/dev/null ||
  e2e_fail "cdi generate --disable-hook all failed"
out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" \
  --runtime-path "$LAB/bin/gpuctk-runtime" --cdi 2>&1) || e2e_fail "runtime configure failed: $out"
engines_containerd_start "$c"
engines_import "$LAB/images/pause.tar" "$LAB/images/probe.tar"

uuid0=$(sed -n '/^  - minor: 0$/,/uuid:/s/^    uuid: //p' "$LAB/devices/manifest/host.yaml")
names=(none cdi-gpu0 cdi-gpu0-ldc cdi-gpu0-nohk shim-gpu0 shim-none)
forms=(
  ""
  "--cdi-device nvidia.com/gpu=0"
  "--cdi-device gpuctk-ldconfig.example/gpu=0"
  "--cdi-device gpuctk-nohooks.example/gpu=0"
  "--handler nvidia --env NVIDIA_VISIBLE_DEVICES=$uuid0"
  "--handler nvidia"
)
# pods NAME CYCLES TIMES: CYCLES pods, the forms in turn, each pod's time in TIMES.
pods() {
  local args=() form
  for form in "${forms[@]}"; do
    args+=(--form "$form --expect 'probe done' --image gpuctk.test/probe:1 --log-dir $LAB/pods --cgroup-parent /$engines_cgroup")
  done
  engines_cri soak --name "$1-$$" --cycles "$2" --times "$3" "${args[@]}" -- /bin/sh -c 'echo probe done'
}
pods warmup "${#forms[@]}" "$LAB/warmup.times" >/dev/null || e2e_fail "the warm-up pods failed"
pods bench "$((rounds * ${#forms[@]}))" "$LAB/times" >/dev/null || e2e_fail "the timed pods failed"
echo "== pod start to removal through CRI, containerd $containerd_version, $rounds interleaved rounds (median / max, ms; load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$engines_python" - "$LAB/times" "${names[@]}" <<'PY'
import statistics, sys
names = sys.argv[2:]
times = {}
for line in open(sys.argv[1]):
    form, ms = line.split()
    times.setdefault(names[int(form)], []).append(float(ms))
med = {n: statistics.median(t) for n, t in times.items()}
for n in names:
    print(f"{n:14} {med[n]:8.1f} / {max(times[n]):8.1f}")
for n, base in (("cdi-gpu0", "none"), ("cdi-gpu0-ldc", "none"), ("cdi-gpu0-nohk", "none"), ("shim-gpu0", "none"),
                ("shim-none", "none"), ("shim-gpu0", "shim-none")):
    print(f"{n:14} {med[n] - med[base]:+7.1f} ms over {base}")
print(f"merged linker cache: cdi-gpu0 {med['cdi-gpu0'] - med['cdi-gpu0-ldc']:+7.1f} ms against cdi-gpu0-ldc")
PY
engines_containerd_stop
