#!/usr/bin/env bash
# `gpuctk --version` names the commit it was built from: cmake/gpuctk_commit.cmake writes "unknown" for a
# tree that is not a git work tree's top (a copy of the sources), and the built binary prints
# "gpuctk <version> (commit <12 hex digits>[-dirty])" naming a commit of this repository, or "unknown"
# when the sources are not a git tree.
#   usage: commit.sh <cmake> <source dir> <gpuctk>
# shellcheck source=tests/package/lib.sh
source "$(dirname "$0")/lib.sh"
cmake=$1
source_dir=$2
gpuctk=$3
package_lab commit

mkdir "$lab/copy"
"$cmake" -DSOURCE_DIR="$lab/copy" -DOUTPUT="$lab/out/commit.hpp" -P "$source_dir/cmake/gpuctk_commit.cmake" ||
  fail "gpuctk_commit.cmake failed outside a git tree"
grep -qx '#define GPUCTK_COMMIT "unknown"' "$lab/out/commit.hpp" ||
  fail "outside a git tree the commit is not \"unknown\": $(cat "$lab/out/commit.hpp")"
# Unchanged text: the file is not written again (its inode and time stay), so nothing recompiles.
before=$(stat -c '%i %Y.%y' "$lab/out/commit.hpp")
sleep 1
"$cmake" -DSOURCE_DIR="$lab/copy" -DOUTPUT="$lab/out/commit.hpp" -P "$source_dir/cmake/gpuctk_commit.cmake"
[ "$(stat -c '%i %Y.%y' "$lab/out/commit.hpp")" = "$before" ] || fail "an unchanged commit header was written again"

version=$("$gpuctk" --version)
[[ $version =~ ^gpuctk\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ (([0-9a-f]{12})(-dirty)?|unknown)\)$ ]] ||
  fail "--version does not name a commit: $version"
commit=${BASH_REMATCH[2]}
if [ -n "$commit" ]; then
  git -C "$source_dir" cat-file -e "$commit^{commit}" 2>/dev/null ||
    fail "--version names $commit, which is no commit of $source_dir"
elif git -C "$source_dir" rev-parse HEAD >/dev/null 2>&1 &&
  [ "$(git -C "$source_dir" rev-parse --show-toplevel)" = "$(realpath "$source_dir")" ]; then
  fail "built from a git tree, --version says the commit is unknown: $version"
fi
echo "PASS: --version: $version; outside a git tree the commit is \"unknown\""
