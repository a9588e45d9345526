#!/usr/bin/env bash
# deploy/kubernetes/gpuctk-exporter-rules.yaml with Debian's Prometheus tools: the PrometheusRule's spec is
# a Prometheus rules file (promtool check rules: syntax, PromQL, templates), and its alerts do what
# rules_test.yaml says (promtool test rules: each fires on bad values after its `for`, names the GPU, host
# and pod, and stays silent on good values). A missing promtool or python3-yaml fails: both are in
# scripts/deps.sh's test set.
#   rules_test.sh [RULES_YAML]   (default: the repository's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rules=${1:-$here/../../deploy/kubernetes/gpuctk-exporter-rules.yaml}
fail() {
  echo "rules_test.sh: error: $*" >&2
  exit 1
}
command -v promtool >/dev/null || fail "promtool is missing (Debian's prometheus package: scripts/deps.sh test)"
lab=$(mktemp -d /tmp/gpuctk-rules.XXXXXX)
trap 'rm -rf "$lab"' EXIT

# The PrometheusRule's spec ({groups: [...]}) is exactly a rules file.
python3 - "$rules" "$lab/rules.yaml" <<'PY' || fail "$rules is no PrometheusRule"
import sys, yaml
(rule,) = list(yaml.safe_load_all(open(sys.argv[1])))
assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule", rule.get("kind")
names = [r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]]
want = ["GPUTemperatureHigh", "GPUMemoryAlmostFull", "GPUUtilizationHigh", "GPUXidError"]
assert names == want, names
for group in rule["spec"]["groups"]:
    for r in group["rules"]:
        assert r["labels"]["severity"] in ("info", "warning", "critical"), r
        assert {"summary", "description"} <= set(r["annotations"]), r
yaml.safe_dump(rule["spec"], open(sys.argv[2], "w"), sort_keys=False)
PY
cp "$here/rules_test.yaml" "$lab/"
promtool check rules "$lab/rules.yaml" >"$lab/check.out" 2>&1 || fail "promtool check rules: $(cat "$lab/check.out")"
grep -q "SUCCESS: 4 rules found" "$lab/check.out" || fail "promtool check rules: $(cat "$lab/check.out")"
(cd "$lab" && promtool test rules rules_test.yaml) >"$lab/test.out" 2>&1 ||
  fail "promtool test rules: $(cat "$lab/test.out")"
echo "PASS: 4 alerts checked and tested ($(promtool --version 2>&1 | head -n 1))"
