#!/usr/bin/env bash
# scripts/check_skips.py, the gate of scripts/test.sh: a skipped test fails the run unless the allow-list
# names it for the build; the reasons printed are the tests' own ("SKIP: why", GoogleTest's message).
set -euo pipefail
check=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/junit.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="t" tests="4" failures="0" disabled="0" skipped="2">
  <testcase name="e2e.hook_podman" classname="e2e.hook_podman" time="0.1" status="notrun">
    <skipped message="SKIP_RETURN_CODE=77"/>
    <system-out>== starting
SKIP: podman is not installed
</system-out>
  </testcase>
  <testcase name="Sandbox.RunsAsRoot" classname="Sandbox.RunsAsRoot" time="0.1" status="notrun">
    <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>[ RUN      ] Sandbox.RunsAsRoot
/src/tests/rootfs/sandbox_test.cpp:12: Skipped
the sandbox needs root
[  SKIPPED ] Sandbox.RunsAsRoot (0 ms)
</system-out>
  </testcase>
  <testcase name="package.deb" classname="package.deb" time="0.1" status="run"><system-out/></testcase>
</testsuite>
XML
fail() { echo "FAIL: $*" >&2; exit 1; }

# Nothing allowed: both skips are named with their reasons, and the run fails.
printf '# none\n' > "$dir/allow"
if out=$(python3 "$check" "$dir/junit.xml" "$dir/allow" release); then fail "a skip passed: $out"; fi
want="skipped [release] e2e.hook_podman: podman is not installed -> NOT ALLOWED
skipped [release] Sandbox.RunsAsRoot: the sandbox needs root -> NOT ALLOWED
2 skipped in release, 2 not on $dir/allow"
[ "$out" = "$want" ] || fail "got: $out"

# Allowed for another build only: still fails; allowed for this build: passes and says why.
printf 'asan e2e\\.hook_podman podman is not in the asan image\nrelease Sandbox\\..* roots only\n' > "$dir/allow"
if python3 "$check" "$dir/junit.xml" "$dir/allow" release >/dev/null; then fail "another build's line allowed it"; fi
printf 'release e2e\\.hook_.* no podman here\nrelease Sandbox\\..* roots only\n' > "$dir/allow"
out=$(python3 "$check" "$dir/junit.xml" "$dir/allow" release) || fail "allowed skips failed: $out"
[ "$(tail -1 <<<"$out")" = "2 skipped in release, 0 not on $dir/allow" ] || fail "got: $out"
grep -qx 'skipped \[release\] e2e.hook_podman: podman is not installed -> allowed (no podman here)' <<<"$out" ||
  fail "got: $out"

# The regex must match the whole name; a malformed line is a usage error (exit 2), not a pass.
printf 'release e2e partial\nrelease Sandbox partial\n' > "$dir/allow"
if python3 "$check" "$dir/junit.xml" "$dir/allow" release >/dev/null; then fail "a partial match allowed it"; fi
printf 'release onlytwo\n' > "$dir/allow"
rc=0; python3 "$check" "$dir/junit.xml" "$dir/allow" release >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "malformed allow-list: exit $rc"
echo "check_skips: ok"
