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
# A unit.shard<N> entry (GPUCTK_UNIT_SHARDS) passes in ctest whatever its tests did: its skips are read
# from GoogleTest's XML in unit-shards/ next to the junit file, parameterised names as ctest gives them; a
# shard without its XML, or whose XML names no test, fails the gate.
mkdir -p "$dir/shards/unit-shards"
printf '# none\n' > "$dir/allow"
cat > "$dir/shards/junit.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="t" tests="1" failures="0" disabled="0" skipped="0">
  <testcase name="unit.shard1" classname="unit.shard1" time="9.0" status="run"><system-out/></testcase>
</testsuite>
XML
if out=$(python3 "$check" "$dir/shards/junit.xml" "$dir/allow" release 2>&1); then fail "a shard without XML passed: $out"; fi
grep -qF "$dir/shards/unit-shards/shard1.xml" <<<"$out" || fail "the missing shard XML is not named: $out"
printf '<?xml version="1.0"?>\n<testsuites tests="0"></testsuites>\n' > "$dir/shards/unit-shards/shard1.xml"
if out=$(python3 "$check" "$dir/shards/junit.xml" "$dir/allow" release 2>&1); then fail "an empty shard passed: $out"; fi
grep -qF "no test ran in this shard" <<<"$out" || fail "got: $out"
cat > "$dir/shards/unit-shards/shard1.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="0" disabled="0" errors="0" name="AllTests">
  <testsuite name="Paths/Resolve" tests="3" failures="0" disabled="0" skipped="1" errors="0">
    <testcase name="Passes" status="run" result="completed" classname="Paths/Resolve" />
    <testcase name="NeedsRoot/walk" status="run" result="skipped" classname="Paths/Resolve">
      <skipped message="/src/tests/rootfs/in_root_test.cpp:40&#x0A;the walk needs root"><![CDATA[x]]></skipped>
    </testcase>
    <testcase name="Other" status="run" result="completed" classname="Paths/Resolve" />
  </testsuite>
</testsuites>
XML
if out=$(python3 "$check" "$dir/shards/junit.xml" "$dir/allow" release); then fail "a shard's skip passed: $out"; fi
want="skipped [release] Paths/Resolve.NeedsRoot/walk: the walk needs root -> NOT ALLOWED
1 skipped in release, 1 not on $dir/allow"
[ "$out" = "$want" ] || fail "got: $out"
printf 'release Paths/Resolve\.NeedsRoot/.* roots only\n' > "$dir/allow"
python3 "$check" "$dir/shards/junit.xml" "$dir/allow" release >/dev/null || fail "an allowed shard skip failed"

echo "check_skips: ok"
