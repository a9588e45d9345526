#!/usr/bin/env bash
# Command 2 of the README: installs what is missing, builds, and runs the whole test suite twice —
# a warnings-as-errors build, then an AddressSanitizer + UndefinedBehaviorSanitizer build — with the lint
# (clang-format, the layer rule, clang-tidy; scripts/lint.sh) in between, and then every fuzz target for a
# short fixed time (scripts/fuzz.sh; GPUCTK_FUZZ_SECONDS each, default 25).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
jobs=$(nproc)

run_suite() {
  local dir=$1
  shift
  cmake -S . -B "$dir" -DGPUCTK_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs"
}

echo "== release build (warnings are errors)"
# Prefix /usr: the .deb (tests/package/deb.sh) is packaged from this tree, whose binary names /usr/bin/gpuctk.
run_suite build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_INSTALL_PREFIX=/usr
echo "== lint"
bash scripts/lint.sh build/ci
echo "== ASan + UBSan build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build/asan -DCMAKE_BUILD_TYPE=Debug -DGPUCTK_SANITIZE=ON -DGPUCTK_BENCH=OFF
echo "== fuzz targets (clang 16, libFuzzer + ASan + UBSan), ${GPUCTK_FUZZ_SECONDS:-25} s each"
GPUCTK_BUILD_JOBS=$jobs bash scripts/fuzz.sh all "${GPUCTK_FUZZ_SECONDS:-25}"
