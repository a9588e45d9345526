#!/usr/bin/env bash
# Lint, part of the test command: clang-format (no difference allowed), the layer rule of
# docs/architecture.md (lower modules never include higher ones), every module with its tests, the docs'
# names (scripts/doc_refs.py: every repository path, gpuctk command and option, CMake option and target
# and ctest test or label a doc or man page names exists), and clang-tidy with .clang-tidy's short list,
# warnings as errors.
#   scripts/lint.sh BUILD_DIR        clang-tidy on the files whose analysis changed since they last passed
#                                    (scripts/tidy_cache.py: keyed by clang-tidy, its configuration and
#                                    arguments, the compile command and every file included; stamps in
#                                    GPUCTK_TIDY_CACHE, default /var/cache/gpuctk-tidy). BUILD_DIR: a Ninja
#                                    build with compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS), built
#   scripts/lint.sh --all BUILD_DIR  clang-tidy on every file, whatever passed before
#   scripts/lint.sh --fix            reformat the tree in place instead of checking
set -euo pipefail
cd "$(dirname "$0")/.."

format=clang-format-16
tidy=clang-tidy-16
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.c' | grep -v '^tests/golden/')

if [ "${1:-}" = --fix ]; then
  "$format" -i "${sources[@]}"
  exit 0
fi
if [ "${1:-}" = --all ]; then
  export GPUCTK_TIDY_ALL=1
  shift
fi
build=${1:?usage: scripts/lint.sh [--all] BUILD_DIR | --fix}
status=0

echo "== clang-format"
if ! "$format" --dry-run -Werror "${sources[@]}"; then
  echo "lint: formatting differs; run scripts/lint.sh --fix" >&2
  status=1
fi

echo "== layers"
# module: the modules it may include (besides itself).
declare -A allowed=(
  [util]=""
  [discover]="util ldcache"
  [oci]="util"
  [rootfs]="util"
  [cgroup]="util"
  [engine]="util"
  [cdi]="util discover oci ldcache"
  [config]="util discover"
  [ldcache]="util rootfs"
  [steps]="util discover oci cdi rootfs ldcache config"
  [inject]="util discover oci cdi rootfs cgroup ldcache config steps"
  [install]="util discover cdi engine"
  [labels]="util discover"
  [kube]="util"
  [metrics]="util discover"
  [plugin]="util discover cdi kube labels"
  [dra]="util discover cdi plugin kube install"
  [cli]="util discover oci cdi rootfs cgroup engine config ldcache steps inject install labels"
)
for module in "${!allowed[@]}"; do
  while IFS=: read -r file line text; do
    included=$(sed -E 's/^#include "([a-z_]+)\/.*/\1/' <<<"$text")
    [ "$included" = "$module" ] && continue
    if [[ " ${allowed[$module]} " != *" $included "* ]]; then
      echo "$file:$line: $module may not include $included (docs/architecture.md, module map)" >&2
      status=1
    fi
  done < <(grep -rn '^#include "[a-z_]*/' "src/$module" || true)
done

# Every module has its tests beside the others (tests/<module>/ with a *_test.cpp).
for dir in src/*/; do
  module=$(basename "$dir")
  if ! compgen -G "tests/$module/*_test.cpp" >/dev/null; then
    echo "src/$module: no tests/$module/*_test.cpp (tests mirror the modules, CONTRIBUTING.md)" >&2
    status=1
  fi
done

echo "== docs"
# Every path, command, option, CMake name and test a doc names exists (scripts/doc_refs.py; its own test:
# ctest -R scripts.doc_refs).
python3 scripts/doc_refs.py || { echo "lint: a doc names something that does not exist" >&2; status=1; }

echo "== clang-tidy"
if [ ! -f "$build/compile_commands.json" ]; then
  echo "lint: $build/compile_commands.json is missing (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)" >&2
  exit 1
fi
# clang 16 reports __cpp_concepts 201907, and libstdc++ 12 declares std::expected only for 202002; clang 16
# parses everything <expected> uses, so the macro is raised for the analysis. g++ 12's flag -std=gnu++23 is
# unknown to clang 16, whose name for it is c++2b. -w: compiler warnings are g++'s job (-Werror builds);
# clang-tidy reports only its checks.
tidy_args=(-p "$build" --quiet --extra-arg=-std=c++2b --extra-arg=-U__cpp_concepts
  --extra-arg=-D__cpp_concepts=202002L --extra-arg=-w)
stamps=${GPUCTK_TIDY_CACHE:-/var/cache/gpuctk-tidy}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t all < <(git ls-files 'src/*.cpp')
python3 scripts/tidy_cache.py todo "$build" "$stamps" "$work/keys" "$tidy" "${tidy_args[@]}" -- "${all[@]}" >/dev/null
echo "clang-tidy: $(wc -l <"$work/keys") analyses to run for ${#all[@]} files (the rest passed as they are: $stamps)"
# tidy_one FILE KEY: analyses FILE; a pass is stamped under KEY, findings are left in $work/KEY.log.
tidy_one() {
  if "$tidy" "${tidy_args[@]}" "$1" >"$work/$2.log" 2>&1; then
    python3 scripts/tidy_cache.py pass "$stamps" "$2"
  else
    touch "$work/$2.failed"
  fi
}
while read -r file key; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do
    wait -n || true
  done
  tidy_one "$file" "$key" &
done <"$work/keys"
wait
while read -r file key; do
  [ -e "$work/$key.failed" ] || continue
  status=1
  echo "clang-tidy: $file" >&2
  # clang-tidy's own chatter ("74 warnings generated.", suppressed system-header warnings) is not findings.
  grep -v -E '^[0-9]+ warnings?( and [0-9]+ errors?)? generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Use -system-headers' \
    "$work/$key.log" >&2 || true
done <"$work/keys"
exit "$status"
