#!/usr/bin/env bash
# Whole-process timing of `gpuctk cdi generate` on the DGX-A100-like fixture host (8 GPUs, 4 in MIG mode),
# in proc and nvml mode, to stdout and to a file (atomic write: two fsyncs): hyperfine (30 runs, no shell)
# for median and max, peak_rss for memory.
#   usage: bench/generate.sh [build-dir]      (default build/bench-release, configured Release here)
source "$(dirname "$0")/lib.sh"
for mode in proc nvml; do
  for out in stdout file; do
    cmd="$gpuctk cdi generate --driver-root $root/host --dev-root $root/host --mode $mode"
    [ "$out" = file ] && cmd="$cmd --output $root/spec-$mode.yaml"
    hyperfine -N --warmup 3 --runs 30 --output=null --export-json "$root/$mode-$out.json" "$cmd" >/dev/null 2>&1
    echo "cdi generate --mode $mode to $out (dgx-a100): $(bench_stats "$root/$mode-$out.json")  peak RSS $(bench_rss $cmd)"
  done
done
