#!/usr/bin/env bash
# Installs, with apt-get, the Debian 12 packages gpuctk needs that are missing.
#   scripts/deps.sh demo    compiler, CMake, the libraries and help2man (the man pages): what
#                           scripts/demo.sh builds (gpuctk, its fixtures and man pages; no tests)
#   scripts/deps.sh build   demo + GoogleTest and Google Benchmark: a default configure (tests, benchmarks)
#   scripts/deps.sh plugin  build + gRPC C++, protobuf and the kubelet's device plugin API (api.proto) that
#                           gpuctk-device-plugin is generated from (-DGPUCTK_DEVICE_PLUGIN=ON), the proto
#                           fetched once into the test cache
#   scripts/deps.sh test    plugin + GoogleTest, Google Benchmark, Ninja and ccache, the real runtimes the
#                           end-to-end tests start, the fuzz packages and the linters
#   scripts/deps.sh fuzz    build + clang 16 with libFuzzer and the sanitizer runtimes (scripts/fuzz.sh)
set -euo pipefail

demo_packages=(g++ cmake make pkg-config nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libseccomp-dev
  libcap-dev libbpf-dev libelf-dev zlib1g-dev libtomlplusplus-dev help2man)
build_packages=(libgtest-dev libbenchmark-dev)
# gpuctk-device-plugin only (-DGPUCTK_DEVICE_PLUGIN=ON; gpuctk itself never links gRPC): gRPC C++ and
# protobuf, protoc and its gRPC plugin (the stubs are generated at build time), and gogo.proto, which the
# kubelet's api.proto imports for its options.
plugin_packages=(libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  golang-github-gogo-protobuf-dev)
# binutils' readelf is not needed; ldconfig (libc-bin) builds the fixture hosts' ld.so.cache. The package
# test (tests/package): cpack's dpkg-shlibdeps (dpkg-dev), lintian, systemd-analyze (systemd). The
# real-package host (tests/realhost): debootstrap makes the Debian root its driver packages install into.
# The engines suite (tests/engines): its kubelet stand-in speaks CRI with Debian's gRPC for python3 and
# generates its stubs with grpc_tools' protoc. musl-tools: musl-gcc and musl's loader for the musl
# (Alpine-like) image of e2e.musl_podman.
# scripts/test.sh builds with Ninja (its log and dependency records feed scripts/lint.sh's clang-tidy
# cache) through ccache.
test_packages=(ninja-build ccache libc-bin python3 runc crun podman containerd docker.io busybox-static hyperfine util-linux
  dpkg-dev lintian systemd buildah debootstrap python3-grpcio python3-grpc-tools musl-tools
  python3-yaml)
# fuzz/ (gcc has no libFuzzer): clang, libFuzzer and the ASan/UBSan runtimes (libclang-rt), and
# llvm-symbolizer for readable stacks in crash reports (llvm-16).
fuzz_packages=(clang-16 libclang-rt-16-dev llvm-16)
# scripts/lint.sh: the formatter and clang-tidy of the same LLVM (clang-tidy 16 parses C++23).
lint_packages=(clang-format-16 clang-tidy-16 git)

wanted=("${demo_packages[@]}")
case "${1:-build}" in
  demo) ;;
  build) wanted+=("${build_packages[@]}") ;;
  plugin) wanted+=("${build_packages[@]}" "${plugin_packages[@]}") ;;
  test) wanted+=("${build_packages[@]}" "${plugin_packages[@]}" "${test_packages[@]}" "${fuzz_packages[@]}" "${lint_packages[@]}") ;;
  fuzz) wanted+=("${build_packages[@]}" "${fuzz_packages[@]}") ;;
  *)
    echo "scripts/deps.sh: unknown set \"$1\" (want demo, build, plugin, test or fuzz)" >&2
    exit 2
    ;;
esac

# The kubelet's device plugin API v1beta1 (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto) is in
# no Debian 12 package: Debian unstable's golang-github-kubernetes-kubelet-dev has it. It is fetched with the
# private apt configuration of tests/realhost/debian_cache.sh (the host's sources are never touched) into
# the test cache, keyed by the package's version, and the stable link $GPUCTK_TEST_CACHE/
# kubelet-deviceplugin-v1beta1.proto (CMake's default GPUCTK_KUBELET_PROTO) points at it. The build never
# downloads; it compiles a copy of this file. Runs after the packages (apt-get and dpkg-deb are needed).
kubelet_proto() {
  # shellcheck source=tests/realhost/debian_cache.sh
  source "$(dirname "$0")/../tests/realhost/debian_cache.sh"
  local package=golang-github-kubernetes-kubelet-dev spec key entry
  local inside=usr/share/gocode/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto
  debcache_sources sid "deb http://deb.debian.org/debian sid main"
  debcache_lists sid
  spec=$(debcache_candidates sid "$package") || exit 1
  key=$(debcache_key "recipe=1 suite=sid $spec $inside")
  # shellcheck disable=SC2317  # called by debcache_entry
  build_kubelet_proto() {
    local tmp=$1 spec=$2 deb
    debcache_download sid "$tmp/debs" "$spec"
    for deb in "$tmp/debs"/*.deb; do
      dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$inside" >"$tmp/api.proto" ||
        debcache_fail "$deb: no ./$inside in the package"
    done
    rm -rf "$tmp/debs"
    echo "$spec" >"$tmp/version"
  }
  entry=$(debcache_entry kubelet-deviceplugin-api "$key" build_kubelet_proto "$spec") || exit 1
  ln -sfn "$entry/api.proto" "$(debcache_dir)/kubelet-deviceplugin-v1beta1.proto"
}

missing=()
for package in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -ne 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/deps.sh: missing packages: ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "scripts/deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
case "${1:-build}" in
  test | plugin) kubelet_proto ;;
esac
