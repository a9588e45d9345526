#!/usr/bin/env python3
"""Fails a test run that skipped a test the allow-list does not name.

ctest counts a skipped test (an end-to-end script's exit 77, a GTEST_SKIP) as passed, so a run on a
machine without a tool, or with something left over from an earlier run, could be green with half the
suite gone. scripts/test.sh runs this after each ctest: it prints every skipped test with its reason and
exits 1 unless each one matches a line of the allow-list for this build.

usage: check_skips.py JUNIT_XML ALLOW_LIST BUILD
  JUNIT_XML   ctest --output-junit's file. A ctest entry unit.shard<N> (a build configured with
              GPUCTK_UNIT_SHARDS, tests/CMakeLists.txt) is one process running a shard of gpuctk_tests:
              its tests are read from GoogleTest's XML, unit-shards/shard<N>.xml next to JUNIT_XML, which
              must exist and name at least one test.
  ALLOW_LIST  lines "<build> <test-name regex> <why it may skip there>"; '#' starts a comment
  BUILD       the build the run was (release, asan): only that build's lines apply
"""
import os
import re
import sys
import xml.etree.ElementTree as ET


def reasons(output: str) -> list[str]:
    """The reasons a test printed for its skips: e2e scripts' "SKIP: why" and GoogleTest's
    "file:line: Skipped" followed by the message."""
    found: list[str] = []
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("SKIP: "):
            found.append(line[len("SKIP: "):])
        elif line.endswith(": Skipped") and i + 1 < len(lines) and lines[i + 1].strip():
            found.append(lines[i + 1].strip())
    return list(dict.fromkeys(found)) or ["(no reason printed)"]


def shard_skips(path: str) -> list[tuple[str, list[str]]]:
    """The skipped tests of a GoogleTest XML file, named as ctest names them (Suite.Test), with the
    messages they gave; an error if the file is missing or names no test (the shard did not run)."""
    try:
        cases = list(ET.parse(path).getroot().iter("testcase"))
    except (OSError, ET.ParseError) as e:
        raise SystemExit(f"check_skips.py: {path}: {e}")
    if not cases:
        raise SystemExit(f"check_skips.py: {path}: no test ran in this shard")
    found = []
    for case in cases:
        if case.get("result") == "skipped" or case.get("status") == "notrun":
            message = case.find("skipped")
            text = message.get("message", "") if message is not None else ""
            # "file:line\nreason": the reason is what follows the location.
            why = [line.strip() for line in text.splitlines()[1:] if line.strip()]
            found.append((f"{case.get('classname', '?')}.{case.get('name', '?')}", why or ["(no reason printed)"]))
    return found


def main() -> int:
    if len(sys.argv) != 4:
        print("usage: check_skips.py JUNIT_XML ALLOW_LIST BUILD", file=sys.stderr)
        return 2
    junit, allow_list, build = sys.argv[1:]
    allowed: list[tuple[re.Pattern[str], str]] = []
    with open(allow_list, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 2)
            if len(parts) != 3:
                print(f"{allow_list}:{number}: want <build> <regex> <reason>", file=sys.stderr)
                return 2
            if parts[0] == build:
                allowed.append((re.compile(parts[1]), parts[2]))
    skipped = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        shard = re.fullmatch(r"unit\.(shard[0-9]+)", case.get("name", ""))
        if shard:
            skipped += shard_skips(os.path.join(os.path.dirname(junit), "unit-shards", shard[1] + ".xml"))
        if case.get("status") in ("notrun", "disabled"):
            out = case.findtext("system-out") or ""
            skipped.append((case.get("name", "?"), reasons(out)))
    unexpected = 0
    for name, why in skipped:
        allow = next((reason for pattern, reason in allowed if pattern.fullmatch(name)), None)
        verdict = f"allowed ({allow})" if allow else "NOT ALLOWED"
        unexpected += allow is None
        print(f"skipped [{build}] {name}: {'; '.join(why)} -> {verdict}")
    print(f"{len(skipped)} skipped in {build}, {unexpected} not on {allow_list}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
