#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang 16 (ASan + UBSan) and runs them.
#
#   scripts/fuzz.sh                          every target for 25 s (what scripts/test.sh runs)
#   scripts/fuzz.sh TARGET [SECONDS [ARGS…]]  one target (or `all`), ARGS passed on to libFuzzer
#
# Targets: cdi_yaml cdi_json oci_apply ld_cache ld_cache_write proc_files cuda_compat_note mountinfo
# (fuzz/README.md says what each checks).
# Each run first replays fuzz/regressions/<target>/ (every file must pass), then fuzzes for SECONDS
# starting from the seeds (generated into build/fuzz/seeds/ from the golden specs, tests/data and
# the fixture hosts, plus fuzz/seeds/<target>/) and the corpus it keeps in build/fuzz/corpus/<target>/.
# A crash, leak, UB, timeout or broken invariant fails the script; the input is left in
# build/fuzz/artifacts/<target>/ (reproduce: build/fuzz/fuzz_<target> FILE). The targets run
# GPUCTK_BUILD_JOBS (default: the number of cores) at a time, as libFuzzer uses one core each.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-all}
seconds=${2:-25}
extra=("${@:3}")
build=${GPUCTK_FUZZ_BUILD_DIR:-build/fuzz}
all_targets=(cdi_yaml cdi_json oci_apply ld_cache ld_cache_write proc_files cuda_compat_note mountinfo)

if [ "$target" = all ]; then
  targets=("${all_targets[@]}")
elif [[ " ${all_targets[*]} " == *" $target "* ]]; then
  targets=("$target")
else
  echo "scripts/fuzz.sh: unknown target \"$target\" (want one of: ${all_targets[*]} all)" >&2
  exit 2
fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  echo "scripts/fuzz.sh: SECONDS must be a positive number, got \"$seconds\"" >&2
  exit 2
fi

bash scripts/deps.sh fuzz

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
CC=${GPUCTK_FUZZ_CC:-clang-16} CXX=${GPUCTK_FUZZ_CXX:-clang++-16} \
  cmake -S fuzz -B "$build" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"${GPUCTK_BUILD_JOBS:-$(nproc)}"

# Stacks with file:line in crash reports; UB aborts (the build has -fno-sanitize-recover=all).
for symbolizer in /usr/lib/llvm-16/bin/llvm-symbolizer "$(command -v llvm-symbolizer || true)"; do
  if [ -x "$symbolizer" ]; then
    export ASAN_SYMBOLIZER_PATH=$symbolizer
    break
  fi
done
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_target NAME: replays NAME's regression inputs, then fuzzes it for SECONDS; what it has to say goes
# to stdout (collected per target below), and its status says whether the target passed.
fuzz_target() {
  local name=$1
  local binary=$build/fuzz_$name corpus=$build/corpus/$name artifacts=$build/artifacts/$name/
  local log=$build/logs/$name.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local inputs=("$corpus") dir
  for dir in "$build/seeds/$name" "fuzz/seeds/$name" "fuzz/regressions/$name"; do
    if [ -d "$dir" ]; then
      inputs+=("$dir")
    fi
  done
  if [ ! -d "$build/seeds/$name" ] && [ ! -d "fuzz/seeds/$name" ]; then
    echo "== fuzz $name: no seeds (neither $build/seeds/$name nor fuzz/seeds/$name)"
    return 1
  fi

  local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix="$artifacts")
  if [ -f "fuzz/dicts/$name.dict" ]; then
    options+=(-dict="fuzz/dicts/$name.dict")
  fi
  case "$name" in
    cdi_yaml | cdi_json) options+=(-max_len=4096) ;;
  esac

  local regressions=()
  if [ -d "fuzz/regressions/$name" ]; then
    mapfile -t regressions < <(find "fuzz/regressions/$name" -type f ! -name '*.md' | sort)
  fi
  if [ "${#regressions[@]}" -gt 0 ] && ! "$binary" "${regressions[@]}" >"$log" 2>&1; then
    echo "== fuzz $name: a regression input fails (fuzz/regressions/$name); log $log"
    tail -n 40 "$log"
    return 1
  fi

  local start summary elapsed
  start=$(date +%s)
  if "$binary" "${options[@]}" "${extra[@]}" "${inputs[@]}" >>"$log" 2>&1; then
    summary=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 | tr -s ' \t' ' ' || true)
    elapsed=$(($(date +%s) - start))
    echo "== fuzz $name: ok in $elapsed s, ${#regressions[@]} regression inputs, ${summary:-no summary}"
  else
    echo "== fuzz $name: FAILED (input in $artifacts, log $log)"
    tail -n 60 "$log"
    return 1
  fi
}

# A libFuzzer run uses one core: the targets run GPUCTK_BUILD_JOBS (default: the cores) at a time, each
# for its full SECONDS, and report in the order of the list.
jobs=${GPUCTK_BUILD_JOBS:-$(nproc)}
reports=$build/logs/reports
rm -rf "$reports"
mkdir -p "$reports"
for name in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
  done
  (
    if fuzz_target "$name" >"$reports/$name" 2>&1; then
      echo 0 >"$reports/$name.status"
    else
      echo 1 >"$reports/$name.status"
    fi
  ) &
done
wait
failed=()
for name in "${targets[@]}"; do
  cat "$reports/$name"
  if [ "$(cat "$reports/$name.status" 2>/dev/null)" != 0 ]; then
    failed+=("$name")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "scripts/fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
