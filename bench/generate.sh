#!/usr/bin/env bash
# Whole-process timing of `gpuctk cdi generate` on the DGX-A100-like fixture host (8 GPUs, 4 in MIG mode),
# in proc and nvml mode: hyperfine (30 runs, no shell) for median and max, peak_rss for memory.
#   usage: bench/generate.sh [build-dir]      (default build/bench, configured Release here)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
build=${1:-build/bench}
if [ "$#" -eq 0 ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUCTK_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" >/dev/null
fi
root=$(mktemp -d /tmp/gpuctk-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
"$build/fixtures/builder/gpuctk-fixture" materialize dgx-a100 "$root/host" >/dev/null 2>&1
gpuctk=$(realpath "$build/src/gpuctk")
for mode in proc nvml; do
  cmd="$gpuctk cdi generate --driver-root $root/host --dev-root $root/host --mode $mode --output $root/spec-$mode.yaml"
  hyperfine -N --warmup 3 --runs 30 --export-json "$root/$mode.json" "$cmd" >/dev/null 2>&1
  stats=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("median %.2f ms  max %.2f ms  mean %.2f ms" % (r["median"]*1e3, r["max"]*1e3, r["mean"]*1e3))' "$root/$mode.json")
  rss=$("$build/bench/peak_rss" $cmd | sed -n 's/^peak_rss_kib //p')
  echo "cdi generate --mode $mode (dgx-a100): $stats  peak RSS $((rss / 1024)).$(((rss % 1024) * 10 / 1024)) MiB"
done
