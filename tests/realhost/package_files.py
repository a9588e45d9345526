#!/usr/bin/env python3
"""Compares a CDI spec made on the real-package root with what Debian's driver packages installed.

    usage: package_files.py ROOT SPEC.json FILES

FILES has one "<package> <path>" line per file the driver packages installed (dpkg's own lists in ROOT,
var/lib/dpkg/info/<package>.list; directories left out). Every such file must be mounted by the spec
(the spec's hostPath is the file resolved inside ROOT), every such link that leads to a mounted file must
be made in the container by the spec's create-symlinks hook, and every file the spec mounts from ROOT must
come from a driver package; the exceptions are the explicit list below, each with the reason. So a new
Debian driver release that adds or moves a file fails here with a line naming it. Prints one line per
problem and exits 1, or prints a summary and exits 0.
"""

import json
import os
import re
import sys

# Package files that are deliberately not mounted into containers: (pattern on the path as the package
# lists it, why). A listed file that the spec does mount is a failure too: the list must stay true.
NOT_MOUNTED = [
    (r"^/usr/share/doc/", "documentation"),
    (r"^/usr/share/man/", "manual pages"),
    (r"^/usr/share/lintian/", "Debian's packaging checks"),
    (r"^/usr/share/bug/", "Debian's bug-report scripts"),
    (r"^/usr/lib/nvidia/current/nvidia-smi\.1\.gz$",
     "nvidia-smi's manual page, kept beside it for update-alternatives"),
    (r"^/etc/init\.d/", "service scripts: the daemons (nvidia-persistenced) run on the host"),
    (r"^/(usr/)?lib/systemd/", "service units: the daemons run on the host"),
    (r"^/usr/share/nvidia/rim/",
     "the GSP firmware's reference integrity manifest, for attestation tools on the host; nvidia-ctk does "
     "not mount it either"),
    (r"^/usr/lib/nvidia/current/nvidia\.ids$",
     "the PCI ids this driver supports, for Debian's nvidia-detect on the host"),
    (r"/nvidia/current/nvidia/wine/[^/]+\.dll$",
     "NGX for Windows programs under Wine or Proton (DLSS in Windows games), not a Linux library; "
     "nvidia-ctk does not mount them either"),
    (r"^/lib$", "the usrmerge link /lib -> usr/lib of the packages' own layout, not a driver file"),
    (r"^/usr/lib/nvidia/current/libglxserver_nvidia\.so$",
     "the X server loads the GLX extension from its modules directory: the spec mounts the file there "
     "and links libglxserver_nvidia.so beside it"),
]


def resolve_in_root(root, path, depth=0):
    """The path inside ROOT that PATH (absolute, inside ROOT) leads to, links followed as if ROOT were /;
    None when a link dangles or loops."""
    if depth > 40:
        return None
    parts = [p for p in path.split("/") if p]
    done = ""
    for i, part in enumerate(parts):
        if part == "..":
            done = os.path.dirname(done) if done else ""
            continue
        candidate = done + "/" + part
        host = root + candidate
        if os.path.islink(host):
            target = os.readlink(host)
            base = target if target.startswith("/") else (done or "") + "/" + target
            resolved = resolve_in_root(root, base, depth + 1)
            if resolved is None:
                return None
            done = "" if resolved == "/" else resolved
        elif os.path.lexists(host):
            done = candidate
        else:
            return None
    return done or "/"


def links_of(spec):
    """(target, link) pairs of every create-symlinks hook in the spec, and of the container-start hook,
    whose --link options are its create-symlinks step."""
    edits = [spec.get("containerEdits", {})] + [d.get("containerEdits", {}) for d in spec.get("devices", [])]
    pairs = set()
    for edit in edits:
        for hook in edit.get("hooks", []):
            args = hook.get("args", [])
            if len(args) > 2 and args[2] in ("create-symlinks", "container-start"):
                for i, arg in enumerate(args):
                    if arg == "--link" and i + 1 < len(args):
                        target, _, link = args[i + 1].partition("::")
                        pairs.add((target, link))
    return pairs


def main():
    root, spec_path, files_path = sys.argv[1:4]
    root = root.rstrip("/")
    spec = json.load(open(spec_path))
    mounts = spec.get("containerEdits", {}).get("mounts", [])
    mounted = {}  # host path inside the root -> container path
    for mount in mounts:
        host = mount["hostPath"]
        if host.startswith(root + "/"):
            mounted[host[len(root):]] = mount["containerPath"]
    links = links_of(spec)
    problems = []
    package_files = set()  # resolved paths of the packages' regular files
    checked = 0
    for line in open(files_path):
        package, path = line.rstrip("\n").split(" ", 1)
        checked += 1
        excluded = next((why for pattern, why in NOT_MOUNTED if re.search(pattern, path)), None)
        resolved = resolve_in_root(root, path)
        if resolved is None:
            problems.append(f"package {package}: {path} is a link that dangles in the root")
            continue
        if not os.path.islink(root + path):
            package_files.add(resolved)
        if excluded is not None:
            if resolved in mounted and not os.path.islink(root + path):
                problems.append(f"package {package}: {path} is listed as not mounted ({excluded}), "
                                f"but the spec mounts it at {mounted[resolved]}")
            continue
        if os.path.islink(root + path):
            target = os.readlink(root + path)
            if resolved not in mounted:
                problems.append(f"package {package}: link {path} -> {target} leads to {resolved}, "
                                "which the spec does not mount")
            elif (target, path) not in links:
                problems.append(f"package {package}: link {path} -> {target} is not made in the container "
                                "(no create-symlinks --link " + target + "::" + path + ")")
            continue
        if resolved not in mounted:
            problems.append(f"package {package}: {path} is not mounted by the spec and not in the "
                            "deliberately-not-mounted list of tests/realhost/package_files.py")
    for host, container in sorted(mounted.items()):
        if host not in package_files:
            problems.append(f"the spec mounts {root}{host} (at {container}), which no driver package installed")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"ok: {checked} files of the driver packages: {len(mounted)} mounted, every link made, "
          f"the rest deliberately left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
