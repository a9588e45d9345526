#!/usr/bin/env python3
"""Part of scripts/lint.sh: every path of this repository that a tracked Markdown file names in backticks
(`src/plugin/daemon.cpp`, `tests/kube/apiserver.py:12`, `deploy/kubernetes/`) must exist, so that a doc
cannot go on naming a file that was moved or removed. A unit may be named without its extension. A name with a placeholder (`<target>`, `*`, `...`)
is checked up to the placeholder: its folder must exist.
    scripts/doc_refs.py    prints "FILE:LINE: `NAME` names no file or folder" per miss; exit 1 if any
"""
import os
import re
import subprocess
import sys

# The repository's own top-level folders: a backticked name starting with one of them is a path here.
ROOTS = ("src/", "tests/", "scripts/", "deploy/", "docs/", "bench/", "fuzz/", "fixtures/", "cmake/",
         "packaging/", ".ci/")
# A unit may be named without its extension (`src/metrics/grpc_unary`, `bench/plugin_client`).
UNIT_SUFFIXES = ("", ".cpp", ".hpp", ".h", ".c", ".py", ".sh")
TICKED = re.compile(r"`([^`\n]+)`")
PLACEHOLDER = re.compile(r"[<*{…$]|\.\.\.")


def candidates(text):
    for match in TICKED.finditer(text):
        for word in match.group(1).split():
            word = word.strip("\"'(),;")
            if word.startswith(ROOTS):
                yield word


def exists(name):
    name = re.sub(r":\d+(-\d+)?$", "", name)  # path:line
    cut = PLACEHOLDER.search(name)
    if cut:
        name = name[:cut.start()]
        name = name[:name.rfind("/") + 1] if "/" in name else name
    name = name.rstrip("/") or "."
    return any(os.path.exists(name + suffix) for suffix in UNIT_SUFFIXES)


def main():
    files = subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True,
                           check=True).stdout.split()
    misses = 0
    for path in files:
        if path.startswith(("tests/golden/", "fixtures/")):
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for name in candidates(line):
                    if not exists(name):
                        print(f"{path}:{number}: `{name}` names no file or folder", file=sys.stderr)
                        misses += 1
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
