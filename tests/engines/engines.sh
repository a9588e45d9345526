#!/usr/bin/env bash
# The container engines clusters run today, from Debian's newer suites, unpacked (never installed) into
# the test cache (tests/realhost/debian_cache.sh: GPUCTK_TEST_CACHE, default /var/cache/gpuctk-tests,
# which survives `rm -rf build`), keyed by the exact package versions:
#
#   engines.sh trixie   containerd 1.7, docker.io 26 and its client, the CRI v1 proto of cri-api 0.32
#                       (Debian 13)
#   engines.sh sid      containerd 2.x, docker.io 28 and its client, the CRI v1 proto of cri-api 0.3x
#                       (Debian unstable)
#   engines.sh podman   a Debian 13 root made by `debootstrap --variant=minbase
#                       --include=podman,crun,catatonit trixie` (podman 5, crun 1.2x need glibc 2.38,
#                       which Debian 12 lacks: they run inside it)
#
# The Go engines run on Debian 12 as they are (static Go, libc only for cgo's getpwnam and the like);
# runc stays Debian 12's (the newer suites' runc needs glibc 2.38). Prints, one per line:
#   entry=<dir>                  the cache entry
#   root=<dir>                   the unpacked packages (`dpkg -x` of each into one directory), or the
#                                Debian 13 root
#   containerd_version=<x.y.z>   (trixie, sid) the upstream versions, as `containerd --version` and
#   docker_version=<x.y.z>       `dockerd --version` say them
#   cri_proto=<file>             (trixie, sid) k8s.io/cri-api/pkg/apis/runtime/v1/api.proto
#   podman_version=<x.y.z>       (podman) the upstream versions of the installed packages
#   crun_version=<x.y>           (podman)
# and the package versions on stderr. Exit 1 with one "FAIL: ..." line when a fetch or a build fails (a
# test that needs the engines has failed then; it is never a skip).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/realhost/debian_cache.sh
source "$here/../realhost/debian_cache.sh"

# Bumped whenever what a builder does changes, so a cached entry of the old recipe is rebuilt.
recipe=1
mirror=http://deb.debian.org/debian

# The packages of each suite, one per line with what it brings. Dependencies are left out on purpose: the
# Go binaries need nothing but the C library, and runc comes from the host (Debian 12).
trixie_packages=(
  containerd                          # containerd, containerd-shim-runc-v2, ctr (1.7)
  docker.io                           # dockerd, docker-init, docker-proxy (26)
  docker-cli                          # docker, the client of the same release
  golang-github-kubernetes-cri-api-dev # k8s.io/cri-api 0.32: the CRI v1 api.proto
)
sid_packages=(
  containerd                   # containerd 2.x
  docker.io                    # dockerd 28
  docker-cli                   # docker 28
  golang-k8s-cri-api-dev       # k8s.io/cri-api 0.3x: the CRI v1 api.proto
)
# The path of the CRI proto inside the packages (Go's source layout under /usr/share/gocode).
cri_proto_path=usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto

suite_sources() {
  local suite=$1
  echo "deb $mirror $suite main"
}

# build_unpacked DIR SUITE SPEC...: the .debs of SUITE into DIR/debs, each unpacked into DIR/root, and
# DIR/versions (the specs).
build_unpacked() {
  local tmp=$1 suite=$2 deb
  shift 2
  debcache_download "$suite" "$tmp/debs" "$@"
  mkdir -p "$tmp/root"
  for deb in "$tmp/debs"/*.deb; do
    dpkg -x "$deb" "$tmp/root" 2>"$tmp/dpkg.err" || debcache_fail "dpkg -x $deb failed: $(tail -1 "$tmp/dpkg.err")"
  done
  rm -rf "$tmp/debs"
  printf '%s\n' "$@" >"$tmp/versions"
}

# The version a binary prints: `containerd --version` is "containerd github.com/... 1.7.24~ds1 ..." or
# "containerd containerd.io 2.1.9 ..."; `dockerd --version` is "Docker version 26.1.5+dfsg1, build ...".
# The first x.y.z of its output.
binary_version() {
  { "$@" 2>&1 || true; } | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1 || true
}

engines() {
  local suite=$1 specs key entry root containerd_version docker_version packages
  if [ "$suite" = trixie ]; then packages=("${trixie_packages[@]}"); else packages=("${sid_packages[@]}"); fi
  debcache_sources "$suite" "$(suite_sources "$suite")"
  debcache_lists "$suite"
  specs=$(debcache_candidates "$suite" "${packages[@]}") || exit 1
  mapfile -t specs <<<"$specs"
  key=$(debcache_key "recipe=$recipe suite=$suite arch=amd64 ${specs[*]}")
  entry=$(debcache_entry "engines-$suite" "$key" build_unpacked "$suite" "${specs[@]}") || exit 1
  root=$entry/root
  [ -f "$root/$cri_proto_path" ] || debcache_fail "$entry: no $cri_proto_path in the CRI API package"
  containerd_version=$(binary_version "$root/usr/bin/containerd" --version)
  docker_version=$(binary_version "$root/usr/sbin/dockerd" --version)
  [ -n "$containerd_version" ] || debcache_fail "$root/usr/bin/containerd --version printed no version"
  [ -n "$docker_version" ] || debcache_fail "$root/usr/sbin/dockerd --version printed no version"
  echo "engines: Debian $suite: $(tr '\n' ' ' <"$entry/versions")" >&2
  echo "entry=$entry"
  echo "root=$root"
  echo "containerd_version=$containerd_version"
  echo "docker_version=$docker_version"
  echo "cri_proto=$root/$cri_proto_path"
}

# build_podman_root DIR SPEC...: `debootstrap --variant=minbase --include=<the packages> trixie` into
# DIR/root, with the exact versions checked afterwards (debootstrap takes the suite's current ones, which
# are those of the private lists the key was made from, unless the mirror moved in between: then the
# build fails and the next run makes a new key).
build_podman_root() {
  local tmp=$1 root=$1/root spec
  shift
  mkdir -p "$(debcache_dir)/apt/trixie/debootstrap"
  debootstrap --variant=minbase --include="$(printf '%s\n' "${@%%=*}" | paste -sd,)" \
    --cache-dir="$(debcache_dir)/apt/trixie/debootstrap" trixie "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
    debcache_fail "debootstrap --variant=minbase trixie failed: $(debcache_why "$(cat "$tmp/debootstrap.log")")"
  chroot "$root" dpkg-query -W -f '${Package}=${Version}\n' "${@%%=*}" >"$tmp/versions"
  for spec in "$@"; do
    grep -qxF "$spec" "$tmp/versions" || debcache_fail "$root: installed $(grep "^${spec%%=*}=" "$tmp/versions"), wanted $spec"
  done
  rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*_*
}

podman_root() {
  local specs key entry root podman_version crun_version
  debcache_sources trixie "$(suite_sources trixie)"
  debcache_lists trixie
  specs=$(debcache_candidates trixie podman crun catatonit) || exit 1
  mapfile -t specs <<<"$specs"
  key=$(debcache_key "recipe=$recipe suite=trixie arch=amd64 variant=minbase ${specs[*]}")
  entry=$(debcache_entry trixie-podman "$key" build_podman_root "${specs[@]}") || exit 1
  root=$entry/root
  # From the packages' versions (the binaries need /proc to say theirs: that is only there once entered).
  podman_version=$(sed -n 's/^podman=\([0-9.]*\).*/\1/p' "$entry/versions")
  crun_version=$(sed -n 's/^crun=\([0-9.]*\).*/\1/p' "$entry/versions")
  [ -n "$podman_version" ] && [ -n "$crun_version" ] || debcache_fail "$entry/versions: no podman or crun version"
  echo "engines: Debian trixie root: $(tr '\n' ' ' <"$entry/versions")" >&2
  echo "entry=$entry"
  echo "root=$root"
  echo "podman_version=$podman_version"
  echo "crun_version=$crun_version"
}

case "${1:-}" in
  trixie | sid) engines "$1" ;;
  podman) podman_root ;;
  *)
    echo "usage: engines.sh trixie|sid|podman" >&2
    exit 2
    ;;
esac
