#!/usr/bin/env bash
# `DESTDIR=… cmake --install` of a build tree, twice (an install must be safe to repeat): every file of the
# install layout is there, the links resolve to the installed binary, the config and hooks.d files name
# it, and `systemd-analyze verify` accepts the units with nothing to say (it exits 0 on unknown keys and
# bad values, so any output fails the test). Nothing is written outside a temporary directory.
#   usage: install.sh <build dir> <install prefix>
# shellcheck source=tests/package/lib.sh
source "$(dirname "$0")/lib.sh"
build=$1
prefix=$2
[ "$prefix" = /usr ] || skip "the build's prefix is $prefix; the layout checked here is /usr's"
package_lab install
root=$lab/root

for run in 1 2; do
  DESTDIR=$root cmake --install "$build" >"$lab/install.$run.log" 2>&1 ||
    fail "cmake --install (run $run) failed: $(cat "$lab/install.$run.log")"
done

expected=(
  usr/bin/gpuctk
  usr/bin/gpuctk-runtime
  usr/libexec/gpuctk/docker/nvidia-container-runtime-hook
  usr/libexec/gpuctk/cdi-hook/nvidia-cdi-hook
  etc/gpuctk/config.yaml
  usr/share/containers/oci/hooks.d/gpuctk-precreate.json
  usr/share/containers/oci/hooks.d/gpuctk-prestart.json
  lib/systemd/system/gpuctk-cdi-refresh.service
  lib/systemd/system/gpuctk-cdi-refresh.path
  lib/udev/rules.d/60-gpuctk-cdi-refresh.rules
  usr/share/man/man1/gpuctk.1.gz
  usr/share/man/man1/gpuctk-cdi-generate.1.gz
  usr/share/man/man1/gpuctk-hook-prestart.1.gz
  usr/share/man/man1/gpuctk-runtime-configure.1.gz
  usr/share/man/man1/gpuctk-config.1.gz
  usr/share/man/man1/gpuctk-system-create-device-nodes.1.gz
  usr/share/man/man5/gpuctk-config.yaml.5.gz
  usr/share/man/man7/gpuctk-requests.7.gz
  usr/share/bash-completion/completions/gpuctk
  usr/share/doc/gpuctk/copyright
  usr/share/doc/gpuctk/changelog.gz
  usr/share/lintian/overrides/gpuctk
)
for path in "${expected[@]}"; do
  [ -e "$root/$path" ] || fail "not installed: /$path"
done
[ "$(readlink "$root/usr/bin/gpuctk-runtime")" = gpuctk ] || fail "gpuctk-runtime is not a link to gpuctk"
[ "$(readlink "$root/usr/libexec/gpuctk/docker/nvidia-container-runtime-hook")" = ../../../bin/gpuctk ] ||
  fail "the docker hook link does not point at ../../../bin/gpuctk"
[ "$(readlink "$root/usr/libexec/gpuctk/cdi-hook/nvidia-cdi-hook")" = ../../../bin/gpuctk ] ||
  fail "the nvidia-cdi-hook link does not point at ../../../bin/gpuctk"
[ ! -e "$root/usr/bin/nvidia-cdi-hook" ] || fail "/usr/bin/nvidia-cdi-hook is installed (NVIDIA's package owns it)"
grep -qx "hook-path: /usr/bin/gpuctk" "$root/etc/gpuctk/config.yaml" || fail "config.yaml: hook-path is not /usr/bin/gpuctk"
for hook in precreate prestart; do
  grep -qF '"path": "/usr/bin/gpuctk"' "$root/usr/share/containers/oci/hooks.d/gpuctk-$hook.json" ||
    fail "gpuctk-$hook.json does not run /usr/bin/gpuctk"
done
grep -qx "ExecStart=/usr/bin/gpuctk cdi generate --output /var/run/cdi/nvidia.yaml" \
  "$root/lib/systemd/system/gpuctk-cdi-refresh.service" || fail "the service does not run /usr/bin/gpuctk cdi generate"
# The installed man page is the binary's own help.
zcat "$root/usr/share/man/man1/gpuctk-cdi-generate.1.gz" | grep -qF -- '\-\-device\-name\-strategy' ||
  fail "gpuctk-cdi-generate.1 does not list --device-name-strategy"
"$root/usr/bin/gpuctk" --version >/dev/null || fail "the installed gpuctk does not run"

# Offline verification inside a copy of this host's units (the targets the units name), with the
# installed files on top; MANPATH lets it find the Documentation= pages.
if ! command -v systemd-analyze >/dev/null; then
  skip "no systemd-analyze to verify the units (the layout passed)"
fi
verify=$lab/verify
mkdir -p "$verify/lib/systemd/system"
cp -a /lib/systemd/system/. "$verify/lib/systemd/system/"
cp -a "$root/." "$verify/"
units=("$verify/lib/systemd/system/gpuctk-cdi-refresh.service" "$verify/lib/systemd/system/gpuctk-cdi-refresh.path")
out=$(MANPATH=$verify/usr/share/man systemd-analyze verify --root="$verify" "${units[@]}" 2>&1) ||
  fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say: $out"
echo "PASS: DESTDIR install twice, ${#expected[@]} files in place, systemd-analyze verify accepts the units"
