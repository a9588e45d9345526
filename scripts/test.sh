#!/usr/bin/env bash
# Command 2 of the README: installs what is missing, then builds and runs the whole test suite as on a
# fresh machine (scripts/fresh_host.sh: a private mount namespace where /etc/cdi, /var/lib/containers,
# /run/containerd, … hold only what packages ship, and the checkout is seen under /tmp):
#   - a warnings-as-errors release build and every test (unit, hostile-image, shell, end to end, the
#     real-package host, the engines of Debian 13/unstable, the device plugin, the package);
#   - the lint (scripts/lint.sh: clang-format, the layer rule, clang-tidy on what changed since a file last
#     passed; `scripts/lint.sh --all BUILD` for the full pass);
#   - an AddressSanitizer + UndefinedBehaviorSanitizer build running the unit tests as two GoogleTest
#     shards per core (GPUCTK_UNIT_SHARDS: smaller shards pack better beside the longer tests), the
#     hostile-image suite, the device plugin and one end-to-end case per injection path (ctest label
#     `asan`, tests/CMakeLists.txt);
#   - every fuzz target for a short fixed time (scripts/fuzz.sh; GPUCTK_FUZZ_SECONDS each, default 25).
# A test that skips fails the run unless tests/skips.allow names it for that build. Compiles go through
# ccache (GPUCTK_CCACHE_DIR, default /var/cache/gpuctk-ccache: keyed by the compiler's content, its flags
# and every input file, so a fresh clone only ever gets objects of the very same inputs).
set -euo pipefail
cd "$(dirname "$0")/.."

# phase NAME: starts the next timed phase (an empty NAME ends the last); the run ends with each phase's
# wall time, so a slow CI run says where its minutes went. The phases of the part that runs in the fresh
# namespace are written to $phases, which the outer part prints with its own.
phases=build/test/phases
phase_name=
phase_start=$SECONDS
phase() {
  [ -z "$phase_name" ] || echo "$phase_name: $((SECONDS - phase_start)) s" >>"$phases"
  phase_name=$1
  phase_start=$SECONDS
  [ -z "$1" ] || echo "== $1"
}

if [ "${1:-}" != --in-fresh-host ]; then
  mkdir -p build/test
  : >"$phases"
  phase "dependencies (scripts/deps.sh test)"
  bash scripts/deps.sh test
  phase ""
  status=0
  bash scripts/fresh_host.sh -- bash scripts/test.sh --in-fresh-host || status=$?
  echo "== time per phase"
  cat "$phases"
  echo "total: $SECONDS s"
  exit "$status"
fi

trap 'phase ""' EXIT
jobs=$(nproc)
# A golden file is compared, never rewritten, in this run.
unset GPUCTK_UPDATE_GOLDEN
export CCACHE_DIR=${GPUCTK_CCACHE_DIR:-/var/cache/gpuctk-ccache} CCACHE_COMPILERCHECK=content \
  CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

# run_suite DIR BUILD CTEST_ARGS -- CMAKE_ARGS...: configure, build, run the tests CTEST_ARGS select, then
# fail on any skip that tests/skips.allow does not allow for BUILD (ctest counts a skip as a pass;
# scripts/check_skips.py).
run_suite() {
  local dir=$1 build=$2 select=()
  shift 2
  while [ "$1" != -- ]; do
    select+=("$1")
    shift
  done
  shift
  phase "$build: configure and build"
  cmake -G Ninja -S . -B "$dir" -DGPUCTK_WERROR=ON "${launcher[@]}" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  phase "$build: tests"
  rm -rf "$dir/ctest-junit.xml" "$dir/unit-shards"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --output-junit ctest-junit.xml "${select[@]}"
  python3 scripts/check_skips.py "$dir/ctest-junit.xml" tests/skips.allow "$build"
}

echo "== release build (warnings are errors)"
# Prefix /usr: the .deb (tests/package/deb.sh) is packaged from this tree, whose binary names /usr/bin/gpuctk.
# The device plugin's daemon is built and driven by its kubelet stand-in here (plugin.kubelet), the
# exporter's pod-resources client meets its own (exporter.pod_resources) and the exporter is scraped on a
# fixture host (exporter.daemon).
run_suite build/test/release release -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DGPUCTK_DEVICE_PLUGIN=ON -DGPUCTK_EXPORTER=ON
phase "lint"
bash scripts/lint.sh build/test/release
echo "== ASan + UBSan build"
# What the sanitizers add to the release run: the unit tests, the hostile-image suite, the device plugin's
# daemon under its kubelet stand-in, the exporter's pod-resources client and daemon, and one end-to-end
# case per injection path (label asan).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build/test/asan asan -L asan -- -DCMAKE_BUILD_TYPE=Debug -DGPUCTK_SANITIZE=ON -DGPUCTK_BENCH=OFF \
  -DGPUCTK_UNIT_SHARDS="$((jobs * 2))" -DGPUCTK_DEVICE_PLUGIN=ON -DGPUCTK_EXPORTER=ON
phase "fuzz targets (clang 16, libFuzzer + ASan + UBSan), ${GPUCTK_FUZZ_SECONDS:-25} s each"
GPUCTK_FUZZ_BUILD_DIR=build/test/fuzz GPUCTK_BUILD_JOBS=$jobs bash scripts/fuzz.sh all "${GPUCTK_FUZZ_SECONDS:-25}"
