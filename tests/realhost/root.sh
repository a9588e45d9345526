#!/usr/bin/env bash
# The real-package root (debian_nvidia_root.sh): made once into the test cache, then reused. Prints the
# package versions it holds and the cost of this run; the other real-package tests need it (ctest runs
# this one first: FIXTURES_SETUP), so a failed fetch fails here with one line.
#   usage: root.sh
source "$(dirname "$0")/lib.sh"
start=$(date +%s%N)
realhost_root
echo "root: $real_root"
echo "driver version: $real_version"
echo "packages: $(tr '\n' ' ' <"$real_entry/versions")"
ms=$((($(date +%s%N) - start) / 1000000))
printf 'PASS: the real-package root is ready (%d.%03d s)\n' $((ms / 1000)) $((ms % 1000))
