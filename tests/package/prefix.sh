#!/usr/bin/env bash
# A tree configured with CMake's default prefix, /usr/local, installs as it must work: the config at
# /etc/gpuctk/config.yaml (where gpuctk reads it) and the hooks.d files in /usr/share/containers/oci/hooks.d
# (where podman reads them), both naming /usr/local/bin/gpuctk; the units and the udev rule under
# /usr/local/lib (systemd and udev read those), nothing under /usr/local/etc or /usr/local/share/containers.
# And cpack refuses to make a .deb of it with one line. The tree is configured here (no build: the files
# checked are made at configure time, installed by packaging/cmake_install.cmake), nothing is written
# outside a temporary directory.
#   usage: prefix.sh <cmake> <cpack> <source dir>
# shellcheck source=tests/package/lib.sh
source "$(dirname "$0")/lib.sh"
cmake=$1
cpack=$2
source_dir=$3
package_lab prefix
tree=$lab/tree
"$cmake" -S "$source_dir" -B "$tree" -DGPUCTK_TESTS=OFF -DGPUCTK_BENCH=OFF -DGPUCTK_MAN_PAGES=OFF \
  >"$lab/configure.log" 2>&1 || fail "configure with the default prefix failed: $(tail -20 "$lab/configure.log")"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$tree/CMakeCache.txt")
[ "$prefix" = /usr/local ] || fail "the default prefix is $prefix, not /usr/local"

root=$lab/root
DESTDIR=$root "$cmake" -P "$tree/packaging/cmake_install.cmake" >"$lab/install.log" 2>&1 ||
  fail "installing the packaging files failed: $(cat "$lab/install.log")"
(cd "$root" && find . ! -type d | sed 's|^\.||' | sort) >"$lab/files"
expected="/etc/gpuctk/config.yaml
/usr/local/lib/systemd/system/gpuctk-cdi-refresh.path
/usr/local/lib/systemd/system/gpuctk-cdi-refresh.service
/usr/local/lib/udev/rules.d/60-gpuctk-cdi-refresh.rules
/usr/local/share/bash-completion/completions/gpuctk
/usr/local/share/doc/gpuctk/changelog.gz
/usr/local/share/doc/gpuctk/copyright
/usr/local/share/lintian/overrides/gpuctk
/usr/share/containers/oci/hooks.d/gpuctk-precreate.json
/usr/share/containers/oci/hooks.d/gpuctk-prestart.json"
[ "$(cat "$lab/files")" = "$expected" ] || fail "installed files: $(cat "$lab/files") (want: $expected)"
grep -qx "hook-path: /usr/local/bin/gpuctk" "$root/etc/gpuctk/config.yaml" ||
  fail "config.yaml's hook-path is not /usr/local/bin/gpuctk: $(grep hook-path "$root/etc/gpuctk/config.yaml")"
for hook in precreate prestart; do
  grep -qF '"path": "/usr/local/bin/gpuctk"' "$root/usr/share/containers/oci/hooks.d/gpuctk-$hook.json" ||
    fail "gpuctk-$hook.json does not run /usr/local/bin/gpuctk"
done
grep -qx "ExecStart=/usr/local/bin/gpuctk cdi generate --output /var/run/cdi/nvidia.yaml" \
  "$root/usr/local/lib/systemd/system/gpuctk-cdi-refresh.service" ||
  fail "the service does not run /usr/local/bin/gpuctk"
echo "ok: prefix /usr/local installs the config and the hooks where gpuctk and podman read them"

if out=$(cd "$lab" && "$cpack" -G DEB --config "$tree/CPackConfig.cmake" 2>&1); then
  fail "cpack made a package of a /usr/local tree: $out"
fi
grep -qF "gpuctk: error: package: this tree is configured with CMAKE_INSTALL_PREFIX=/usr/local; a .deb is made only from a tree configured with -DCMAKE_INSTALL_PREFIX=/usr (its binary, config and hooks name that prefix)" <<<"$out" ||
  fail "cpack did not say why it refused: $out"
! compgen -G "$lab/*.deb" >/dev/null || fail "cpack left a .deb: $(ls "$lab"/*.deb)"
echo "PASS: a /usr/local tree installs where the tools read, and cpack refuses to package it"
