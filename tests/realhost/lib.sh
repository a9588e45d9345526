# shellcheck shell=bash
# Shared helpers of the real-package host tests (sourced; bash): a driver root in which Debian 12's real
# NVIDIA driver packages installed themselves (debian_nvidia_root.sh, cached) and a dev root with the
# devices of two GPUs (debian12-devices.yaml, materialised with the packages' driver version).
#
# The cached root is shared by every test and must never be changed: a test that needs to change a
# driver root copies what it changes.

set -euo pipefail

realhost_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

realhost_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Exit 77 is ctest's SKIP_RETURN_CODE for these tests: a skip is never a pass.
realhost_skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# realhost_root: the cached Debian root (built on first use; that needs the network, root and
# debootstrap). Sets real_root, real_version (the driver version of the fetched packages, x.y.z),
# real_cudart (the root's libcudart.so.11.0) and real_entry (the cache entry, with its `versions` file).
realhost_root() {
  local out
  [ "$(id -u)" -eq 0 ] || realhost_skip "needs root: debootstrap and chroot make the real-package root"
  command -v debootstrap >/dev/null || realhost_skip "debootstrap is not installed (scripts/deps.sh test)"
  out=$(bash "$realhost_dir/debian_nvidia_root.sh") || exit 1
  real_entry=$(sed -n 's/^entry=//p' <<<"$out")
  real_root=$(sed -n 's/^root=//p' <<<"$out")
  real_version=$(sed -n 's/^driver_version=//p' <<<"$out")
  real_cudart=$(sed -n 's/^cudart=//p' <<<"$out")
  [ -d "$real_root" ] && [ -n "$real_version" ] || realhost_fail "debian_nvidia_root.sh printed no root: $out"
}

# realhost_devices FIXTURE DIR: the devices of debian12-devices.yaml, with the driver version replaced by
# $real_version, materialised in DIR/host by the fixture builder FIXTURE. Sets real_dev_root. Device nodes
# must be real (root can mknod): the tests open them.
realhost_devices() {
  local fixture=$1 dir=$2
  mkdir -p "$dir/manifest"
  sed "s/^  version: .*/  version: $real_version/" "$realhost_dir/debian12-devices.yaml" >"$dir/manifest/host.yaml"
  grep -qx "  version: $real_version" "$dir/manifest/host.yaml" || realhost_fail "could not set the version in $dir/manifest/host.yaml"
  "$fixture" materialize "$dir/manifest/host.yaml" "$dir/host" >"$dir/roots" 2>"$dir/materialize.err" ||
    realhost_fail "materialising the devices failed: $(cat "$dir/materialize.err")"
  grep -qx "nodes=real" "$dir/roots" || realhost_skip "fixture device nodes are not real char devices"
  real_dev_root=$(sed -n 's/^dev_root=//p' "$dir/roots")
}

# realhost_lab FIXTURE: realhost_root, a scratch directory $LAB (removed when the test exits) and the
# devices in $LAB/devices (realhost_devices, with the fixture builder FIXTURE).
realhost_lab() {
  realhost_root
  LAB=$(mktemp -d /tmp/gpuctk-realhost.XXXXXX)
  trap 'rm -rf "$LAB"' EXIT
  realhost_devices "$1" "$LAB/devices"
}

# realhost_package_files: the files Debian's driver packages installed in $real_root (dpkg's own lists,
# var/lib/dpkg/info/<package>.list), one "<package> <path>" per line, directories left out. The driver's
# packages are those built from the sources of the packages debian_nvidia_root.sh asked for, the CUDA
# runtime's (an image's, never the driver's) excepted.
realhost_package_files() {
  local sources package source list path
  sources=$(chroot "$real_root" dpkg-query -W -f '${source:Package}\n' $(sed 's/=.*//' "$real_entry/versions") |
    sort -u | grep -vx nvidia-cuda-toolkit)
  chroot "$real_root" dpkg-query -W -f '${Package} ${source:Package}\n' | while read -r package source; do
    grep -qxF "$source" <<<"$sources" || continue
    list=$real_root/var/lib/dpkg/info/$package.list
    [ -f "$list" ] || list=$real_root/var/lib/dpkg/info/$package:amd64.list  # Multi-Arch: same
    [ -f "$list" ] || realhost_fail "$package: no dpkg file list in $real_root/var/lib/dpkg/info"
    while read -r path; do
      [ -d "$real_root$path" ] && [ ! -L "$real_root$path" ] && continue
      echo "$package $path"
    done <"$list"
  done
}
