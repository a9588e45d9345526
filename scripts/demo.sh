#!/usr/bin/env bash
# Command 1 of the README: installs what is missing, builds gpuctk, and runs its main job,
# `gpuctk cdi generate`. On a host with an NVIDIA driver it describes that host; anywhere else it
# describes a built-in fixture host (default: the DGX-A100-like one; GPUCTK_DEMO_HOST=<name> picks another,
# `build/demo/fixtures/builder/gpuctk-fixture list` lists them) and prints the spec on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh demo
cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=Release -DGPUCTK_TESTS=OFF -DGPUCTK_BENCH=OFF >/dev/null
cmake --build build/demo -j"$(nproc)" >/dev/null
gpuctk=build/demo/src/gpuctk

if [ -e /proc/driver/nvidia/version ] && [ -e /dev/nvidiactl ]; then
  echo "# gpuctk cdi generate on this host's NVIDIA driver" >&2
  exec "$gpuctk" cdi generate "$@"
fi

host=${GPUCTK_DEMO_HOST:-dgx-a100}
root=$(mktemp -d /tmp/gpuctk-demo.XXXXXX)
trap 'rm -rf "$root"' EXIT
build/demo/fixtures/builder/gpuctk-fixture materialize "$host" "$root" >"$root.roots"
driver_root=$(sed -n 's/^driver_root=//p' "$root.roots")
dev_root=$(sed -n 's/^dev_root=//p' "$root.roots")
rm -f "$root.roots"
echo "# no NVIDIA driver here: gpuctk cdi generate on fixture host '$host' materialised at $root" >&2
if [[ " $* " != *" --hook-path"* ]] && [ ! -x /usr/bin/gpuctk ]; then
  echo "# the spec's hooks run this build's $gpuctk, so a warning that it lies in a build tree is expected" \
    "here; on a node the package's /usr/bin/gpuctk (or --hook-path) is the one they run" >&2
fi
"$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" "$@"
