#!/usr/bin/env bash
# The engines of the suite (engines.sh trixie, sid and podman): fetched into the test cache once, then
# reused. Prints the versions and the cost of this run; the engine tests need them (ctest runs this one
# first: FIXTURES_SETUP), so a failed fetch fails here with one line.
#   usage: fetch.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root: debootstrap makes the Debian 13 root" >&2; exit 77; }
command -v debootstrap >/dev/null || { echo "SKIP: debootstrap is not installed (scripts/deps.sh test)" >&2; exit 77; }
start=$(date +%s%N)
for what in trixie sid podman; do
  out=$(bash "$here/engines.sh" "$what") || exit 1
  grep -E '_version=' <<<"$out" | sed "s/^/$what: /"
done
ms=$((($(date +%s%N) - start) / 1000000))
printf 'PASS: the engines are ready (%d.%03d s)\n' $((ms / 1000)) $((ms % 1000))
