#!/usr/bin/env python3
"""clang-tidy's verdicts, remembered by what they were about (scripts/lint.sh).

A source file that passed clang-tidy passes again while nothing it is analysed with has changed: the
clang-tidy binary, every .clang-tidy of the repository, the arguments, the file's compile command, and
the contents of the file and of every header it includes (Ninja's dependency records of the build, system
headers included). The key is a SHA-256 over all of them, so a stamp only ever stands for the very same
analysis, whatever checkout or commit asks.

usage: tidy_cache.py todo BUILD_DIR STAMP_DIR KEY_FILE TIDY ARGS... -- FILES...
         prints the files that must be analysed (those without a stamp for their key; every file with
         GPUCTK_TIDY_ALL=1; a unity source for the files it includes) and writes "FILE KEY" lines for
         them to KEY_FILE
       tidy_cache.py pass STAMP_DIR KEY
         records that the analysis KEY passed
"""
import hashlib
import json
import os
import shlex
import subprocess
import sys


def dependencies(build: str) -> dict[str, list[str]]:
    """Every object's inputs as Ninja recorded them (absolute paths)."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], check=True, capture_output=True,
                         text=True).stdout
    build = os.path.abspath(build)
    deps: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            target = line.split(":", 1)[0]
            current = deps.setdefault(os.path.normpath(os.path.join(build, target)), [])
        elif current is not None:
            current.append(os.path.normpath(os.path.join(build, line.strip())))
    return deps


def object_file(command: dict) -> str:
    """The object a compile command writes (its -o)."""
    if "output" in command:
        return command["output"]
    args = command.get("arguments") or shlex.split(command["command"])
    return args[args.index("-o") + 1]


class Hasher:
    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def file(self, path: str) -> str:
        if path not in self.known:
            try:
                with open(path, "rb") as f:
                    self.known[path] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                self.known[path] = "missing"
        return self.known[path]


def todo(build: str, stamps: str, key_file: str, tidy: str, args: list[str], files: list[str]) -> int:
    version = subprocess.run([tidy, "--version"], check=True, capture_output=True, text=True).stdout
    configs = subprocess.run(["git", "ls-files", "*.clang-tidy", ".clang-tidy"], check=True,
                             capture_output=True, text=True).stdout.split()
    hasher = Hasher()
    common = hashlib.sha256()
    for part in [version, *args, *[f"{c} {hasher.file(c)}" for c in configs]]:
        common.update(part.encode() + b"\0")
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = {os.path.normpath(os.path.join(c["directory"], c["file"])): c for c in json.load(f)}
    # A source compiled as part of a unity source (CMake's UNITY_BUILD) is analysed there.
    for unity, command in list(commands.items()):
        if os.path.basename(os.path.dirname(unity)) == "Unity":
            with open(unity) as f:
                for line in f:
                    if line.startswith('#include "'):
                        commands.setdefault(os.path.normpath(line.split('"')[1]), command)
    done: set[str] = set()
    deps = dependencies(build)
    force = os.environ.get("GPUCTK_TIDY_ALL") == "1"
    with open(key_file, "w") as keys:
        for name in files:
            path = os.path.abspath(name)
            command = commands.get(path)
            if command is None:
                print(f"tidy_cache.py: {name} is not in {build}/compile_commands.json", file=sys.stderr)
                return 2
            analysed = os.path.normpath(os.path.join(command["directory"], command["file"]))
            if analysed in done:
                continue
            done.add(analysed)
            output = os.path.normpath(os.path.join(command["directory"], object_file(command)))
            inputs = deps.get(output)
            if not inputs:
                print(f"tidy_cache.py: Ninja has no dependencies of {output} (build first)", file=sys.stderr)
                return 2
            key = common.copy()
            key.update(command["command"].encode() + b"\0")
            for dep in sorted(set([analysed, *inputs])):
                key.update(f"{dep} {hasher.file(dep)}".encode() + b"\0")
            digest = key.hexdigest()
            if force or not os.path.exists(os.path.join(stamps, digest)):
                keys.write(f"{analysed} {digest}\n")
                print(analysed)
    return 0


def record(stamps: str, key: str) -> int:
    os.makedirs(stamps, exist_ok=True)
    with open(os.path.join(stamps, key), "w"):
        pass
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] == "todo" and "--" in argv:
        split = argv.index("--")
        build, stamps, key_file, tidy, *args = argv[2:split]
        return todo(build, stamps, key_file, tidy, args, argv[split + 1:])
    if len(argv) == 4 and argv[1] == "pass":
        return record(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
