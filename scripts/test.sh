#!/usr/bin/env bash
# Command 2 of the README: installs what is missing, builds, and runs the whole test suite twice —
# a warnings-as-errors build, then an AddressSanitizer + UndefinedBehaviorSanitizer build — with the lint
# (clang-format, the layer rule, clang-tidy; scripts/lint.sh) in between, and then every fuzz target for a
# short fixed time (scripts/fuzz.sh; GPUCTK_FUZZ_SECONDS each, default 25). A test that skips fails the
# run unless tests/skips.allow names it for that build. The ASan build runs its unit tests as one
# GoogleTest shard per core (GPUCTK_UNIT_SHARDS, tests/CMakeLists.txt): a process per test costs it minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
# phase NAME: starts the next timed phase (an empty NAME ends the last); the run ends with each phase's
# wall time, so a slow CI run says where its minutes went.
phase_times=()
phase_name=
phase_start=$SECONDS
phase() {
  [ -z "$phase_name" ] || phase_times+=("$phase_name: $((SECONDS - phase_start)) s")
  phase_name=$1
  phase_start=$SECONDS
  [ -z "$1" ] || echo "== $1"
}

phase "dependencies (scripts/deps.sh test)"
bash scripts/deps.sh test
jobs=$(nproc)

# A golden file is compared, never rewritten, in this run.
unset GPUCTK_UPDATE_GOLDEN

# run_suite DIR BUILD CMAKE_ARGS...: configure, build, run every test, then fail on any skip that
# tests/skips.allow does not allow for BUILD (ctest counts a skip as a pass; scripts/check_skips.py).
run_suite() {
  local dir=$1 build=$2
  shift 2
  phase "$build: configure and build"
  cmake -S . -B "$dir" -DGPUCTK_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  phase "$build: tests"
  rm -rf "$dir/ctest-junit.xml" "$dir/unit-shards"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --output-junit ctest-junit.xml
  python3 scripts/check_skips.py "$dir/ctest-junit.xml" tests/skips.allow "$build"
}

echo "== release build (warnings are errors)"
# Prefix /usr: the .deb (tests/package/deb.sh) is packaged from this tree, whose binary names /usr/bin/gpuctk.
# The device plugin's daemon is built and driven by its kubelet stand-in here (plugin.kubelet).
run_suite build/ci release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_INSTALL_PREFIX=/usr \
  -DGPUCTK_DEVICE_PLUGIN=ON
phase "lint"
bash scripts/lint.sh build/ci
echo "== ASan + UBSan build"
# With the device plugin's daemon (plugin.kubelet, plugin.image under the sanitizers): its own files add
# about 1.5 minutes of build at -j2.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build/asan asan -DCMAKE_BUILD_TYPE=Debug -DGPUCTK_SANITIZE=ON -DGPUCTK_BENCH=OFF -DGPUCTK_UNIT_SHARDS="$jobs" \
  -DGPUCTK_DEVICE_PLUGIN=ON
phase "fuzz targets (clang 16, libFuzzer + ASan + UBSan), ${GPUCTK_FUZZ_SECONDS:-25} s each"
GPUCTK_BUILD_JOBS=$jobs bash scripts/fuzz.sh all "${GPUCTK_FUZZ_SECONDS:-25}"
phase ""
echo "== time per phase"
printf '%s\n' "${phase_times[@]}" "total: $SECONDS s"
