#!/usr/bin/env bash
# Whole-process timing of `gpuctk hook precreate` for NVIDIA_VISIBLE_DEVICES=all on the DGX-A100-like fixture
# host: with a static spec installed (JSON, then YAML), and with none (the spec is built in memory, proc mode). hyperfine
# (30 runs, config.json on stdin) for median and max; peak_rss for memory.
#   usage: bench/hook.sh [build-dir]      (default build/bench-release, configured Release here)
source "$(dirname "$0")/lib.sh"
mkdir -p "$root/yaml-spec" "$root/json-spec" "$root/no-spec" "$root/bundle"
for format in yaml json; do
  "$gpuctk" cdi generate --driver-root "$root/host" --dev-root "$root/host" --mode proc \
    --output "$root/$format-spec/nvidia.$format" 2>/dev/null
done
(cd "$root/bundle" && runc spec)
python3 - "$root/bundle/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["env"].append("NVIDIA_VISIBLE_DEVICES=all")
json.dump(c, open(sys.argv[1], "w"))
PY
for case in json-spec yaml-spec no-spec; do
  cat >"$root/$case.yaml" <<YAML
spec-dirs: [$root/$case]
driver-root: $root/host
dev-root: $root/host
YAML
  cmd="$gpuctk hook precreate --config $root/$case.yaml"
  # hyperfine 1.15 has no --input: the command runs under its shell, whose start-up cost hyperfine
  # measures and subtracts.
  hyperfine --warmup 3 --runs 30 --output=null --export-json "$root/$case.json" "$cmd < $root/bundle/config.json" \
    >/dev/null 2>&1
  echo "hook precreate NVIDIA_VISIBLE_DEVICES=all, $case (dgx-a100): $(bench_stats "$root/$case.json")  peak RSS $(bench_rss sh -c "exec $cmd < $root/bundle/config.json")"
done
