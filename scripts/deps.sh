#!/usr/bin/env bash
# Installs, with apt-get, the Debian 12 packages gpuctk needs that are missing.
#   scripts/deps.sh demo    compiler, CMake, the libraries and help2man (the man pages): what
#                           scripts/demo.sh builds (gpuctk, its fixtures and man pages; no tests)
#   scripts/deps.sh build   demo + GoogleTest and Google Benchmark: a default configure (tests, benchmarks)
#   scripts/deps.sh plugin  build + gRPC C++, protobuf and the kubelet's device plugin and pod-resources
#                           APIs (api.proto) that gpuctk-device-plugin (-DGPUCTK_DEVICE_PLUGIN=ON) and
#                           gpuctk-exporter (-DGPUCTK_EXPORTER=ON) are generated from, the protos
#                           fetched once into the test cache
#   scripts/deps.sh test    plugin + GoogleTest, Google Benchmark, Ninja and ccache, the real runtimes the
#                           end-to-end tests start, the fuzz packages and the linters
#   scripts/deps.sh fuzz    build + clang 16 with libFuzzer and the sanitizer runtimes (scripts/fuzz.sh)
set -euo pipefail

# libcrypt-dev: bcrypt for gpuctk-exporter's basic authentication (src/metrics/password_check.cpp; g++'s
# libc6-dev depends on it, named here because CMake looks for it at configure time).
demo_packages=(g++ cmake make pkg-config nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libseccomp-dev
  libcap-dev libbpf-dev libelf-dev zlib1g-dev libtomlplusplus-dev help2man libcrypt-dev)
build_packages=(libgtest-dev libbenchmark-dev)
# gpuctk-device-plugin and gpuctk-exporter only (-DGPUCTK_DEVICE_PLUGIN=ON, -DGPUCTK_EXPORTER=ON; gpuctk
# itself never links gRPC): gRPC C++ and protobuf, protoc and its gRPC plugin (the stubs are generated at
# build time), and gogo.proto, which the kubelet's api.proto files import for their options.
# libnghttp2-dev: gpuctk-exporter speaks gRPC's protocol to the kubelet over HTTP/2 with nghttp2 (and
# protobuf-lite from libprotobuf-dev) instead of linking gRPC's runtime; it ships libnghttp2.a.
# libcurl4-openssl-dev: the Kubernetes API client (src/kube, the device plugin's per-node configs) speaks
# HTTPS with libcurl (OpenSSL: its CA, client certificate and key given as PEM text in memory).
plugin_packages=(libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  golang-github-gogo-protobuf-dev libnghttp2-dev libcurl4-openssl-dev)
# gpuctk-exporter only (-DGPUCTK_EXPORTER=ON, beside the gRPC of plugin_packages for its pod-resources
# client): libmicrohttpd, its HTTP server, built with GnuTLS, whose API verifies client certificates, and
# libcrypt's crypt_r, which checks the web config's bcrypt passwords.
exporter_packages=(libmicrohttpd-dev libgnutls28-dev libcrypt-dev)
# binutils' readelf is not needed; ldconfig (libc-bin) builds the fixture hosts' ld.so.cache. The package
# test (tests/package): cpack's dpkg-shlibdeps (dpkg-dev), lintian, systemd-analyze (systemd). The
# real-package host (tests/realhost): debootstrap makes the Debian root its driver packages install into.
# The engines suite (tests/engines): its kubelet stand-in speaks CRI with Debian's gRPC for python3 and
# generates its stubs with grpc_tools' protoc. musl-tools: musl-gcc and musl's loader for the musl
# (Alpine-like) image of e2e.musl_podman.
# scripts/test.sh builds with Ninja (its log and dependency records feed scripts/lint.sh's clang-tidy
# cache) through ccache. prometheus: the real Prometheus that scrapes gpuctk-exporter and its promtool,
# which checks the exposition (metrics.promtool) and unit-tests the alerts (tests/metrics; run as plain processes, never the service).
# openssl: the certificates of gpuctk-exporter's TLS test (exporter.daemon).
test_packages=(ninja-build ccache libc-bin python3 runc crun podman containerd docker.io busybox-static hyperfine util-linux
  dpkg-dev lintian systemd buildah debootstrap python3-grpcio python3-grpc-tools musl-tools
  python3-yaml prometheus openssl)
# fuzz/ (gcc has no libFuzzer): clang, libFuzzer and the ASan/UBSan runtimes (libclang-rt), and
# llvm-symbolizer for readable stacks in crash reports (llvm-16).
fuzz_packages=(clang-16 libclang-rt-16-dev llvm-16)
# scripts/lint.sh: the formatter and clang-tidy of the same LLVM (clang-tidy 16 parses C++23).
lint_packages=(clang-format-16 clang-tidy-16 git)

wanted=("${demo_packages[@]}")
case "${1:-build}" in
  demo) ;;
  build) wanted+=("${build_packages[@]}") ;;
  plugin) wanted+=("${build_packages[@]}" "${plugin_packages[@]}" "${exporter_packages[@]}") ;;
  test) wanted+=("${build_packages[@]}" "${plugin_packages[@]}" "${exporter_packages[@]}" "${test_packages[@]}" "${fuzz_packages[@]}" "${lint_packages[@]}") ;;
  fuzz) wanted+=("${build_packages[@]}" "${fuzz_packages[@]}") ;;
  *)
    echo "scripts/deps.sh: unknown set \"$1\" (want demo, build, plugin, test or fuzz)" >&2
    exit 2
    ;;
esac

# The kubelet's device plugin API v1beta1 (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto), its
# pod-resources API v1 (k8s.io/kubelet/pkg/apis/podresources/v1/api.proto, for gpuctk-exporter), its DRA
# plugin API v1beta1 (dra/v1beta1/api.proto) and plugin registration API v1 (pluginregistration/v1/api.proto,
# both for gpuctk-dra-plugin) are in no Debian 12 package: Debian unstable's
# golang-github-kubernetes-kubelet-dev has them. The Kubernetes API's resource.k8s.io/v1 types
# (k8s.io/api/resource/v1/types.go, golang-k8s-api-dev) give the stand-in API server the ResourceSlice and
# ResourceClaim field names and limits it validates with. They are fetched with the private apt
# configuration of tests/realhost/debian_cache.sh (the host's sources are never touched) into one test cache
# entry, keyed by the packages' versions and the recipe, and stable links in $GPUCTK_TEST_CACHE
# (kubelet-deviceplugin-v1beta1.proto, kubelet-podresources-v1.proto, kubelet-dra-v1beta1.proto,
# kubelet-pluginregistration-v1.proto, k8s-api-resource-v1-types.go; CMake's GPUCTK_*_PROTO defaults) point
# into it. The build never downloads; it compiles copies of these files. Runs after the packages (apt-get
# and dpkg-deb are needed).
kubelet_proto() {
  # shellcheck source=tests/realhost/debian_cache.sh
  source "$(dirname "$0")/../tests/realhost/debian_cache.sh"
  local spec key entry
  local apis=usr/share/gocode/src/k8s.io/kubelet/pkg/apis
  local types=usr/share/gocode/src/k8s.io/api/resource/v1/types.go
  debcache_sources sid "deb http://deb.debian.org/debian sid main"
  debcache_lists sid
  spec=$(debcache_candidates sid golang-github-kubernetes-kubelet-dev golang-k8s-api-dev) || exit 1
  # recipe=3: the DRA and registration APIs and the resource.k8s.io/v1 types beside the others (recipe 2
  # had the device plugin's and the pod-resources API).
  key=$(debcache_key "recipe=3 suite=sid $spec $apis $types")
  # shellcheck disable=SC2317  # called by debcache_entry
  build_kubelet_proto() {
    local tmp=$1 deb
    shift
    debcache_download sid "$tmp/debs" "$@"
    for deb in "$tmp/debs"/golang-github-kubernetes-kubelet-dev_*.deb; do
      # The device plugin's file keeps the name recipe 1 gave it (api.proto).
      kubelet_proto_extract "$deb" "$apis/deviceplugin/v1beta1/api.proto" "$tmp/api.proto"
      kubelet_proto_extract "$deb" "$apis/podresources/v1/api.proto" "$tmp/podresources-v1.proto"
      kubelet_proto_extract "$deb" "$apis/dra/v1beta1/api.proto" "$tmp/dra-v1beta1.proto"
      kubelet_proto_extract "$deb" "$apis/pluginregistration/v1/api.proto" "$tmp/pluginregistration-v1.proto"
    done
    for deb in "$tmp/debs"/golang-k8s-api-dev_*.deb; do
      kubelet_proto_extract "$deb" "$types" "$tmp/resource-v1-types.go"
    done
    [ -s "$tmp/dra-v1beta1.proto" ] && [ -s "$tmp/resource-v1-types.go" ] ||
      debcache_fail "the packages $* lack the DRA API or the resource.k8s.io/v1 types"
    rm -rf "$tmp/debs"
    echo "$*" >"$tmp/version"
  }
  # shellcheck disable=SC2317  # called by build_kubelet_proto
  kubelet_proto_extract() {
    local deb=$1 inside=$2 out=$3
    dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$inside" >"$out" ||
      debcache_fail "$deb: no ./$inside in the package"
  }
  # shellcheck disable=SC2086  # one spec per package
  entry=$(debcache_entry kubelet-deviceplugin-api "$key" build_kubelet_proto $spec) || exit 1
  ln -sfn "$entry/api.proto" "$(debcache_dir)/kubelet-deviceplugin-v1beta1.proto"
  ln -sfn "$entry/podresources-v1.proto" "$(debcache_dir)/kubelet-podresources-v1.proto"
  ln -sfn "$entry/dra-v1beta1.proto" "$(debcache_dir)/kubelet-dra-v1beta1.proto"
  ln -sfn "$entry/pluginregistration-v1.proto" "$(debcache_dir)/kubelet-pluginregistration-v1.proto"
  ln -sfn "$entry/resource-v1-types.go" "$(debcache_dir)/k8s-api-resource-v1-types.go"
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
