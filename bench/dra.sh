#!/usr/bin/env bash
# gpuctk-dra-plugin as the kubelet sees it (issue 38), on the DGX-A100-like fixture host (8 GPUs, 20
# devices): start to ResourceSlices published, NodePrepareResources of a one-GPU claim (median, p90, max),
# the same asked again, unprepare, and the daemon's resident set after the start and after 1 000
# prepare+unprepare rounds. bench/dra_kubelet.py is the client (python, in-process gRPC) against the stand-in
# API server tests/kube/apiserver.py, whose GET of a claim (python over TLS) every first prepare includes:
# the "api floor" line.
#   usage: bench/dra.sh [build-dir] [dra_kubelet.py options: --claims N --starts N]
#   (default build/bench-release, configured Release here with -DGPUCTK_DEVICE_PLUGIN=ON)
bench_configure=-DGPUCTK_DEVICE_PLUGIN=ON
build_arg=()
if [ "$#" -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build_arg=("$1")
  shift
fi
options=("$@")
set -- "${build_arg[@]}"
source "$(dirname "$0")/lib.sh"
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
daemon=$build/src/dra/gpuctk-dra-plugin
[ -x "$daemon" ] || { echo "bench/dra.sh: no $daemon (configure with -DGPUCTK_DEVICE_PLUGIN=ON)" >&2; exit 1; }
echo "gpuctk-dra-plugin: $(du -h "$(realpath "$daemon")" | cut -f1) ($build)"
types=$(cache GPUCTK_RESOURCE_TYPES)
[ -n "$types" ] || types=/var/cache/gpuctk-tests/k8s-api-resource-v1-types.go  # a build without tests
/usr/bin/python3 bench/dra_kubelet.py "$daemon" "$build/fixtures/builder/gpuctk-fixture" "$types" \
  "$(cache GPUCTK_KUBELET_REGISTRATION_PROTO)" "$(cache GPUCTK_KUBELET_DRA_PROTO)" "$root/stubs" "$gpuctk" \
  "${options[@]}"
