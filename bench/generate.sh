#!/usr/bin/env bash
# Whole-process timing of `gpuctk cdi generate` on the DGX-A100-like fixture host (8 GPUs, 4 in MIG mode),
# in proc and nvml mode, to stdout and to a file (atomic write: two fsyncs), and with --vendor-set
# nvidia,amd,intel on the mixed NVIDIA + Intel host (two spec files; target under 5 ms): hyperfine (30 runs,
# no shell) for median and max, peak_rss for memory.
#   usage: bench/generate.sh [build-dir]      (default build/bench-release, configured Release here)
source "$(dirname "$0")/lib.sh"
for mode in proc nvml; do
  for out in stdout file; do
    cmd="$gpuctk cdi generate --driver-root $root/host --dev-root $root/host --mode $mode"
    [ "$out" = file ] && cmd="$cmd --output $root/spec-$mode.yaml"
    hyperfine -N --warmup 3 --runs 30 --output=null --export-json "$root/$mode-$out.json" "$cmd" >/dev/null 2>&1
    echo "cdi generate --mode $mode to $out (dgx-a100): $(bench_stats "$root/$mode-$out.json")  peak RSS $(bench_rss $cmd 2>/dev/null)"
  done
done
# Every vendor on the mixed host: NVIDIA (auto mode: the mock NVML), AMD (none: one note), Intel; two files.
"$build/fixtures/builder/gpuctk-fixture" materialize mixed-nvidia-intel "$root/mixed" >/dev/null 2>&1
mkdir -p "$root/mixed-specs"
cmd="$gpuctk cdi generate --driver-root $root/mixed --dev-root $root/mixed --vendor-set nvidia,amd,intel --output $root/mixed-specs"
hyperfine -N --warmup 3 --runs 30 --output=null --export-json "$root/vendor-set.json" "$cmd" >/dev/null 2>&1
echo "cdi generate --vendor-set nvidia,amd,intel to a directory (mixed-nvidia-intel): $(bench_stats "$root/vendor-set.json")  peak RSS $(bench_rss $cmd 2>/dev/null)"
