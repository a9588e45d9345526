#!/usr/bin/env bash
# gpuctk-device-plugin as the kubelet sees it, on the DGX-A100-like fixture host (8 GPUs, the mock NVML):
# start to registered, Allocate latency (median, max) of 1 and of 8 GPUs for two device-list strategies,
# and the daemon's resident set after registering, after 1 000 and 10 000 Allocate calls (growth) and its
# peak (issue 25's goal: at most 10 MiB, no growth). bench/plugin_kubelet.py is the client: the kubelet
# stand-in of tests/plugin/kubelet.py, in python; its own cost per call is the "floor" line (an RPC that
# does nothing), which every Allocate latency includes. bench/plugin_client (built with GPUCTK_BENCH) times
# the same calls from C++, whose floor is far lower.
#   usage: bench/plugin.sh [build-dir] [plugin_kubelet.py options: --calls N --starts N --smaps]
#   (default build/bench-release, configured Release here with -DGPUCTK_DEVICE_PLUGIN=ON; a given
#   build-dir must have been configured with -DGPUCTK_DEVICE_PLUGIN=ON)
bench_configure=-DGPUCTK_DEVICE_PLUGIN=ON
build_arg=()
if [ "$#" -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build_arg=("$1")
  shift
fi
options=("$@")
set -- "${build_arg[@]}"
source "$(dirname "$0")/lib.sh"
proto=$(sed -n 's/^GPUCTK_KUBELET_PROTO:FILEPATH=//p' "$build/CMakeCache.txt")
plugin=$build/src/plugin/gpuctk-device-plugin
[ -x "$plugin" ] || { echo "bench/plugin.sh: no $plugin (configure with -DGPUCTK_DEVICE_PLUGIN=ON)" >&2; exit 1; }
echo "gpuctk-device-plugin: $(du -h "$(realpath "$plugin")" | cut -f1) ($build)"
# The C++ client where the build has it (bench/CMakeLists.txt: GPUCTK_BENCH and GPUCTK_DEVICE_PLUGIN on).
client=()
[ ! -x "$build/bench/plugin_client" ] || client=(--client "$build/bench/plugin_client")
/usr/bin/python3 bench/plugin_kubelet.py "$plugin" "$build/fixtures/builder/gpuctk-fixture" "$proto" "$root/stubs" \
  "${client[@]}" "${options[@]}"
