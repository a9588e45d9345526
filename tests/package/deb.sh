#!/usr/bin/env bash
# The .deb, end to end on this host: cpack builds it from the build tree, its Installed-Size is what its
# files take (dpkg-gencontrol's rule), lintian finds no error, dpkg installs it (twice: the maintainer
# scripts must be safe to repeat), every file is where the package says, podman runs the INSTALLED
# hooks.d files, which run the installed /usr/bin/gpuctk with the installed config path
# (/etc/gpuctk/config.yaml, given the fixture host's roots for the test and restored after) and put GPU 0
# of the t4-debian fixture into a glibc container; then dpkg --purge leaves nothing behind (no file of
# the package, /etc/gpuctk, or the units' enablement). Purged on failure too.
#   usage: deb.sh <build dir> <install prefix> <sanitize ON|OFF> <gpuctk-fixture>
source "$(dirname "$0")/../e2e/lib.sh"
build=$(realpath "$1")
prefix=$2
sanitize=$3
fixture=$4

[ "$prefix" = /usr ] || e2e_skip "the build's prefix is $prefix: a package is built from a tree configured with -DCMAKE_INSTALL_PREFIX=/usr"
case "$sanitize" in ON | TRUE | 1) e2e_skip "a sanitizer build is never packaged" ;; esac
e2e_init
for tool in dpkg dpkg-deb cpack lintian; do
  command -v "$tool" >/dev/null || e2e_skip "$tool is not installed"
done
if dpkg-query -W -f='${Status}' gpuctk 2>/dev/null | grep -q "installed"; then
  e2e_skip "a gpuctk package is installed on this host; the test would replace it"
fi
[ ! -e /etc/gpuctk ] || e2e_skip "/etc/gpuctk exists on this host; the test would overwrite it"

cpack -G DEB -B "$LAB/pkg" --config "$build/CPackConfig.cmake" >"$LAB/cpack.log" 2>&1 ||
  e2e_fail "cpack failed: $(cat "$LAB/cpack.log")"
deb=$(echo "$LAB"/pkg/gpuctk_*.deb)
[ -f "$deb" ] || e2e_fail "cpack wrote no gpuctk_*.deb: $(ls "$LAB/pkg")"
echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes"
dpkg-deb -f "$deb" Depends
# Installed-Size is dpkg-gencontrol's sum over the files as they are installed (stripped: CPACK_STRIP_FILES),
# deb-substvars(5): each regular file and symlink ceil(size / 1024) KiB (a symlink's size is its target's
# length), every other object (a directory, the root included) 1 KiB, a hard link once.
dpkg-deb -x "$deb" "$LAB/unpacked"
installed_size=$(find "$LAB/unpacked" -printf '%y %s %i\n' |
  awk '$1 == "f" || $1 == "l" { if (!seen[$3]++) kib += int(($2 + 1023) / 1024); next } { kib += 1 } END { print kib }')
[ "$(dpkg-deb -f "$deb" Installed-Size)" = "$installed_size" ] ||
  e2e_fail "Installed-Size is $(dpkg-deb -f "$deb" Installed-Size) KiB; the installed files take $installed_size KiB (dpkg-gencontrol's rule)"
echo "ok: Installed-Size $installed_size KiB, the stripped files'"
lintian --fail-on error "$deb" || e2e_fail "lintian finds errors in $(basename "$deb")"
echo "ok: lintian, no error"

# The package's paths, and which of them this host has already (/usr/bin, ...): after the purge, those
# must be all that is left.
mapfile -t paths < <(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's|^\./|/|' -e 's|/$||' | grep -vx '/\?')
preexisting=()
for path in "${paths[@]}"; do
  if [ -e "$path" ] || [ -L "$path" ]; then preexisting+=("$path"); fi
done

# From here on, whatever happens, the package goes and the host keeps nothing of it.
e2e_cleanup_add "dpkg --purge gpuctk"
for run in 1 2; do
  dpkg -i "$deb" >"$LAB/dpkg-i.$run.log" 2>&1 || e2e_fail "dpkg -i (run $run) failed: $(cat "$LAB/dpkg-i.$run.log")"
done
echo "ok: dpkg -i, twice"

listed=$(dpkg -L gpuctk)
for path in /usr/bin/gpuctk /usr/bin/gpuctk-runtime /usr/libexec/gpuctk/docker/nvidia-container-runtime-hook \
  /usr/libexec/gpuctk/cdi-hook/nvidia-cdi-hook \
  /etc/gpuctk/config.yaml /usr/share/containers/oci/hooks.d/gpuctk-precreate.json \
  /usr/share/containers/oci/hooks.d/gpuctk-prestart.json /lib/systemd/system/gpuctk-cdi-refresh.service \
  /lib/systemd/system/gpuctk-cdi-refresh.path /lib/udev/rules.d/60-gpuctk-cdi-refresh.rules \
  /usr/share/man/man1/gpuctk.1.gz /usr/share/man/man1/gpuctk-cdi-generate.1.gz \
  /usr/share/man/man5/gpuctk-config.yaml.5.gz \
  /usr/share/man/man7/gpuctk-requests.7.gz \
  /usr/share/bash-completion/completions/gpuctk /usr/share/doc/gpuctk/copyright /usr/share/doc/gpuctk/changelog.gz; do
  e2e_expect_line "$listed" "$path"
  [ -e "$path" ] || e2e_fail "$path is listed but missing"
done
grep -qx 'License: Apache-2.0' /usr/share/doc/gpuctk/copyright &&
  grep -qF '/usr/share/common-licenses/Apache-2.0' /usr/share/doc/gpuctk/copyright ||
  e2e_fail "the package's copyright file does not give the Apache-2.0 license"
[ "$(readlink -f /usr/bin/gpuctk-runtime)" = /usr/bin/gpuctk ] || e2e_fail "/usr/bin/gpuctk-runtime does not reach /usr/bin/gpuctk"
[ "$(readlink -f /usr/libexec/gpuctk/docker/nvidia-container-runtime-hook)" = /usr/bin/gpuctk ] ||
  e2e_fail "the docker hook link does not reach /usr/bin/gpuctk"
# nvidia-cdi-hook: beside the docker link, never /usr/bin/nvidia-cdi-hook (NVIDIA's package owns that path);
# the link answers as NVIDIA's hook does.
[ "$(readlink -f /usr/libexec/gpuctk/cdi-hook/nvidia-cdi-hook)" = /usr/bin/gpuctk ] ||
  e2e_fail "the nvidia-cdi-hook link does not reach /usr/bin/gpuctk"
if grep -qx /usr/bin/nvidia-cdi-hook <<<"$listed"; then e2e_fail "the package ships /usr/bin/nvidia-cdi-hook"; fi
out=$(/usr/libexec/gpuctk/cdi-hook/nvidia-cdi-hook noop 2>&1) || e2e_fail "nvidia-cdi-hook noop failed: $out"
[ -z "$out" ] || e2e_fail "nvidia-cdi-hook noop printed: $out"
e2e_expect_line "$(dpkg-query -W -f='${Conffiles}\n' gpuctk | awk 'NF {print $1}')" /etc/gpuctk/config.yaml
# postinst enabled the spec refresh (deb-systemd-helper, which needs no running systemd).
for unit in gpuctk-cdi-refresh.path gpuctk-cdi-refresh.service; do
  [ -L "/etc/systemd/system/multi-user.target.wants/$unit" ] || e2e_fail "postinst did not enable $unit"
done
echo "ok: $(wc -l <<<"$listed") paths installed, config.yaml a conffile, the refresh units enabled"

# The installed hooks.d files run the installed binary with the installed config file: point that
# config at the fixture host (the spec generated by /usr/bin/gpuctk), as an admin would edit it.
e2e_podman_init
e2e_glibc_rootfs
e2e_t4_host_with_spec /usr/bin/gpuctk "$fixture"
cp -p /etc/gpuctk/config.yaml "$LAB/config.yaml.packaged"
e2e_cleanup_add "cp -p '$LAB/config.yaml.packaged' /etc/gpuctk/config.yaml"
cp "$LAB/gpuctk.yaml" /etc/gpuctk/config.yaml
PODMAN+=(--hooks-dir /usr/share/containers/oci/hooks.d)
out=$(e2e_podman_run -e NVIDIA_VISIBLE_DEVICES=0 --rootfs "$(e2e_rootfs_copy gpu0)" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "podman run with NVIDIA_VISIBLE_DEVICES=0 failed: $out"
e2e_check_t4_gpu0 "$out" "podman with the installed hooks.d files and /usr/bin/gpuctk"
out=$(e2e_podman_run --rootfs "$(e2e_rootfs_copy none)" /bin/sh -c "$e2e_t4_probe" 2>&1) ||
  e2e_fail "podman run without a request failed: $out"
e2e_check_t4_nothing "$out" "podman without a request, installed hooks"
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what was injected: $(cat "$LAB/gpuctk.log")"
cp -p "$LAB/config.yaml.packaged" /etc/gpuctk/config.yaml
out=$(dpkg --verify gpuctk 2>&1) || e2e_fail "dpkg --verify gpuctk: $out"
[ -z "$out" ] || e2e_fail "the installed files differ from the package: $out"

dpkg --purge gpuctk >"$LAB/purge.log" 2>&1 || e2e_fail "dpkg --purge failed: $(cat "$LAB/purge.log")"
left=()
for path in "${paths[@]}"; do
  if [ -e "$path" ] || [ -L "$path" ]; then
    printf '%s\n' "${preexisting[@]}" | grep -qxF -- "$path" || left+=("$path")
  fi
done
[ "${#left[@]}" -eq 0 ] || e2e_fail "dpkg --purge left: ${left[*]}"
[ ! -e /etc/gpuctk ] || e2e_fail "dpkg --purge left /etc/gpuctk"
if compgen -G "/etc/systemd/system/*/gpuctk-cdi-refresh.*" >/dev/null ||
  grep -rqs gpuctk /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked; then
  e2e_fail "dpkg --purge left the units' enablement behind"
fi
echo "PASS: the .deb installs twice, passes lintian, its hooks.d files and binary inject GPU 0 under podman, and purge leaves nothing of it (${#paths[@]} paths, ${#preexisting[@]} shared directories kept)"
