# Shared set-up of the whole-process benchmarks (sourced): builds Release (unless a build dir is given),
# materialises the DGX-A100-like fixture host in $root/host, and sets $build, $root and $gpuctk.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
# Not build/bench: that is where a build in build/ puts its bench/ subdirectory. A script that needs more
# than the default build sets bench_configure (more cmake arguments) before sourcing this.
build=${1:-build/bench-release}
if [ "$#" -eq 0 ]; then
  # shellcheck disable=SC2086 # bench_configure is a list of words
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUCTK_TESTS=OFF ${bench_configure:-} >/dev/null
  cmake --build "$build" -j"$(nproc)" >/dev/null
fi
root=$(mktemp -d /tmp/gpuctk-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
"$build/fixtures/builder/gpuctk-fixture" materialize dgx-a100 "$root/host" >/dev/null 2>&1
gpuctk=$(realpath "$build/src/gpuctk")

# bench_stats FILE: "median X ms  max Y ms  mean Z ms" of a hyperfine JSON export.
bench_stats() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("median %.2f ms  max %.2f ms  mean %.2f ms" % (r["median"]*1e3, r["max"]*1e3, r["mean"]*1e3))' "$1"
}

# bench_rss COMMAND...: peak resident set size of one run, as "N.N MiB".
bench_rss() {
  local kib
  kib=$("$build/bench/peak_rss" "$@" | sed -n 's/^peak_rss_kib //p')
  echo "$((kib / 1024)).$(((kib % 1024) * 10 / 1024)) MiB"
}
