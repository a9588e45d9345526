#!/usr/bin/env bash
# The engine snippets in etc/ (containerd/config.toml, docker/daemon.json) add the runtime that
# `gpuctk runtime configure` adds and the RuntimeClass names (deploy/kubernetes/runtimeclass.yaml): the
# name `nvidia`, the shim as its binary, and nothing else. An operator who merges a snippet by hand and
# then runs `runtime configure` (or applies the RuntimeClass) must get one runtime, not two names for it.
# The snippet's commented default_runtime_name is checked too: uncommented, it must name that runtime.
#   usage: etc_snippets.sh <source dir> <gpuctk>
# shellcheck source=tests/package/lib.sh
source "$(dirname "$0")/lib.sh"
source_dir=$1
gpuctk=$2
package_lab etc-snippets

# What runtime configure writes into empty files (dry run: printed, nothing written), for the shim where
# the package installs it, as the snippets name it (a build with another prefix defaults elsewhere).
shim=/usr/bin/gpuctk-runtime
"$gpuctk" runtime configure --runtime containerd --config "$lab/config.toml" --runtime-path "$shim" --dry-run \
  --set-as-default >"$lab/containerd.toml" 2>/dev/null
"$gpuctk" runtime configure --runtime docker --config "$lab/daemon.json" --runtime-path "$shim" --dry-run \
  >"$lab/docker.json" 2>/dev/null

python3 - "$source_dir" "$lab" <<'PY'
import json, re, sys, tomllib

source_dir, lab = sys.argv[1], sys.argv[2]
failures = []

def containerd_runtimes(doc):
    """{runtime name: (runtime_type, BinaryName)} and default_runtime_name of a schema-2 config."""
    cri = doc.get("plugins", {}).get("io.containerd.grpc.v1.cri", {}).get("containerd", {})
    runtimes = {name: (rt.get("runtime_type"), rt.get("options", {}).get("BinaryName"))
                for name, rt in cri.get("runtimes", {}).items()}
    return runtimes, cri.get("default_runtime_name")

snippet_path = f"{source_dir}/etc/containerd/config.toml"
text = open(snippet_path, encoding="utf-8").read()
# The commented-out default: lines "# [table]" / "#   key = value" made live (prose comments stay out).
live = re.sub(r"(?m)^#\s*(\[[^\]]+\]|\w+ = .*)$", r"\1", text)
snippet, snippet_default = containerd_runtimes(tomllib.loads(live))
configured, configured_default = containerd_runtimes(tomllib.loads(open(f"{lab}/containerd.toml").read()))
if snippet != configured:
    failures.append(f"{snippet_path}: runtimes {snippet}, runtime configure adds {configured}")
if snippet_default != configured_default:
    failures.append(f"{snippet_path}: default_runtime_name {snippet_default!r}, "
                    f"runtime configure --set-as-default sets {configured_default!r}")

snippet_path = f"{source_dir}/etc/docker/daemon.json"
snippet = json.load(open(snippet_path, encoding="utf-8")).get("runtimes", {})
configured = json.load(open(f"{lab}/docker.json")).get("runtimes", {})
if snippet != configured:
    failures.append(f"{snippet_path}: runtimes {snippet}, runtime configure adds {configured}")

runtimeclass = f"{source_dir}/deploy/kubernetes/runtimeclass.yaml"
handlers = re.findall(r"(?m)^handler: (\S+)$", open(runtimeclass, encoding="utf-8").read())
for name in sorted(set(configured) | set(snippet)):
    if [name] != handlers:
        failures.append(f"{runtimeclass}: handler {handlers}, the docker snippet's runtime {name!r}")

for f in failures:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if failures else 0)
PY
echo "PASS: etc/containerd/config.toml and etc/docker/daemon.json add runtime configure's runtime, the RuntimeClass's handler"
