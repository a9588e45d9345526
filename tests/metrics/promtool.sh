#!/usr/bin/env bash
# Prometheus' own checker on a full exposition (tests/metrics/exposition_sample.cpp): it must parse, and
# promtool's lint may only say what dcgm-exporter's names make true of every page it serves: counters
# without a _total suffix, DCGM_FI_DEV_PCIE_REPLAY_COUNTER's "counter", labels not in snake_case
# (modelName, UUID, GPU_I_ID). Also no series twice: promtool does not check that. Exit 77 (skipped)
# without promtool (Debian package prometheus).
#   tests/metrics/promtool.sh EXPOSITION_SAMPLE
set -euo pipefail
sample=${1:?usage: promtool.sh EXPOSITION_SAMPLE}
if ! command -v promtool >/dev/null; then
  echo "promtool.sh: no promtool (apt-get install prometheus)" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$sample" >"$work/metrics"
lines=$(grep -vc '^#' "$work/metrics")
if [ "$lines" -lt 300 ]; then
  echo "promtool.sh: only $lines samples written" >&2
  exit 1
fi
status=0
promtool check metrics <"$work/metrics" >"$work/lint" 2>&1 || status=$?
# 0: clean; 3: lint findings only (1 is a parse error).
if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then
  echo "promtool.sh: promtool check metrics failed ($status):" >&2
  cat "$work/lint" >&2
  exit 1
fi
names='^DCGM_[A-Z0-9_]+ (counter metrics should have "_total" suffix|label names should be written in '"'snake_case' not 'camelCase'"'|metric name should not include type '"'counter'"')$'
if grep -v -E "$names" "$work/lint" | sort -u | head -20 >"$work/other" && [ -s "$work/other" ]; then
  cat "$work/other" >&2
  echo "promtool.sh: promtool found more than what dcgm-exporter's names make of every page" >&2
  exit 1
fi
duplicates=$(grep -v '^#' "$work/metrics" | sed -E 's/ [^ ]+$//' | sort | uniq -d | head -3)
if [ -n "$duplicates" ]; then
  echo "promtool.sh: series written twice:" >&2
  echo "$duplicates" >&2
  exit 1
fi
echo "promtool.sh: $lines samples, $(grep -c '^# TYPE' "$work/metrics") metrics: promtool check metrics passes"
