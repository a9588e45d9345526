#!/usr/bin/env bash
# Whole-process timing of `gpuctk labels` on the DGX-A100-like fixture host (8 GPUs, 4 in MIG mode; target
# under 5 ms): NVML (the mock) and proc discovery to stdout, the mixed MIG strategy with a time-slicing
# config, and the NFD file (atomic, durable: two fsyncs): hyperfine (30 runs, no shell) for median and
# max, peak_rss for memory.
#   usage: bench/labels.sh [build-dir]      (default build/bench-release, configured Release here)
source "$(dirname "$0")/lib.sh"
config="$PWD/tests/data/labels/mixed-time-slicing.yaml"
base="$gpuctk labels --driver-root $root/host --dev-root $root/host"
run() {  # NAME ARGS...: one hyperfine case
  local name=$1
  shift
  local cmd="$base $*"
  hyperfine -N --warmup 3 --runs 30 --output=null --export-json "$root/labels-$name.json" "$cmd" >/dev/null 2>&1
  echo "labels $* (dgx-a100): $(bench_stats "$root/labels-$name.json")  peak RSS $(bench_rss $cmd)"
}
run nvml-stdout --mode nvml -o -
run proc-stdout --mode proc -o -
run mixed-config --mode nvml -o - --config-file "$config"
run nvml-file --mode nvml -o "$root/gpuctk-labels"
