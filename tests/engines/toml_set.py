#!/usr/bin/python3
"""Sets keys in a TOML file that `containerd config default` printed, line by line, so that everything
else stays as containerd wrote it (the tests move containerd's paths into their lab; `gpuctk runtime
configure` then edits the file like any other).

    usage: toml_set.py FILE TABLE KEY VALUE [TABLE KEY VALUE ...]
      TABLE  the table's dotted name with the quotes left out ("" for the top level), e.g.
             plugins.io.containerd.grpc.v1.cri (containerd 1.7 writes [plugins."io.containerd.grpc.v1.cri"],
             2.x [plugins.'io.containerd.cri.v1.runtime'])
      VALUE  a TOML value as written, e.g. '"/tmp/x"' or true

A key that is in the table gets the new value; one that is not is added as the table's first key. A table
that is not in the file is an error (the engine's defaults changed: the test must learn the new layout).
"""
import re
import sys

HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*$")


def table_name(header):
    return header.replace('"', "").replace("'", "").strip()


def set_key(lines, table, key, value):
    start = 0 if table == "" else None
    for i, line in enumerate(lines):
        m = HEADER.match(line)
        if m and table != "" and table_name(m.group(1)) == table:
            start = i + 1
            break
    if start is None:
        raise SystemExit(f"toml_set.py: no table [{table}]")
    end = len(lines)
    for i in range(start, len(lines)):
        if HEADER.match(lines[i]):
            end = i
            break
    pattern = re.compile(r"^(\s*)" + re.escape(key) + r"\s*=")
    for i in range(start, end):
        m = pattern.match(lines[i])
        if m:
            lines[i] = f"{m.group(1)}{key} = {value}\n"
            return
    indent = re.match(r"^(\s*)", lines[start] if start < end else "").group(1)
    lines.insert(start, f"{indent}{key} = {value}\n")


def main(argv):
    if len(argv) < 5 or (len(argv) - 2) % 3 != 0:
        raise SystemExit(__doc__)
    path = argv[1]
    with open(path) as f:
        lines = f.readlines()
    for i in range(2, len(argv), 3):
        set_key(lines, argv[i], argv[i + 1], argv[i + 2])
    with open(path, "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main(sys.argv)
