#!/usr/bin/env bash
# Every file Debian's driver packages installed in the real-package root (dpkg's own lists,
# var/lib/dpkg/info/*.list) is mounted by the spec `gpuctk cdi generate` writes with default options, or
# made by its create-symlinks hook when it is a link, or named with its reason in the explicit list of
# files deliberately not mounted (package_files.py); and the spec mounts nothing from the root that no
# driver package installed. A new Debian driver release that adds or moves a file fails with a line naming
# it.
#   usage: package_files.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
gpuctk=$1
fixture=$2
realhost_lab "$fixture"
"$gpuctk" cdi generate --driver-root "$real_root" --dev-root "$real_dev_root" --mode proc --format json \
  --output "$LAB/spec.json" 2>"$LAB/generate.err" || realhost_fail "cdi generate failed: $(cat "$LAB/generate.err")"
realhost_package_files >"$LAB/files"
[ -s "$LAB/files" ] || realhost_fail "no driver package files found in $real_root/var/lib/dpkg/info"
python3 "$realhost_dir/package_files.py" "$real_root" "$LAB/spec.json" "$LAB/files" ||
  realhost_fail "the spec and the driver packages' files differ (lines above)"
echo "PASS: the spec mounts what Debian's $real_version packages installed"
