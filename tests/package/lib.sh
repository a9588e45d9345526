# What the package tests share, sourced first: strict mode, fail (exit 1), skip (exit 77, which ctest
# counts as skipped) and a scratch directory that is removed when the script exits.
# shellcheck shell=bash
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# package_lab NAME: sets lab to a new /tmp/gpuctk-NAME.XXXXXX, removed on exit.
package_lab() {
  lab=$(mktemp -d "/tmp/gpuctk-$1.XXXXXX")
  trap 'rm -rf "$lab"' EXIT
}
