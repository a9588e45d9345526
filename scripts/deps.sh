#!/usr/bin/env bash
# Installs, with apt-get, the Debian 12 packages gpuctk needs that are missing.
#   scripts/deps.sh build   compiler, CMake, the libraries and help2man (the man pages)
#   scripts/deps.sh test    + GoogleTest, Google Benchmark, the real runtimes the end-to-end tests start,
#                           the fuzz packages and the linters
#   scripts/deps.sh fuzz    build + clang 16 with libFuzzer and the sanitizer runtimes (scripts/fuzz.sh)
set -euo pipefail

build_packages=(g++ cmake make pkg-config nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libseccomp-dev
  libcap-dev libbpf-dev libelf-dev zlib1g-dev libtomlplusplus-dev libgtest-dev libbenchmark-dev
  help2man)
# binutils' readelf is not needed; ldconfig (libc-bin) builds the fixture hosts' ld.so.cache. The package
# test (tests/package): cpack's dpkg-shlibdeps (dpkg-dev), lintian, systemd-analyze (systemd). The
# real-package host (tests/realhost): debootstrap makes the Debian root its driver packages install into.
# The engines suite (tests/engines): its kubelet stand-in speaks CRI with Debian's gRPC for python3 and
# generates its stubs with grpc_tools' protoc. musl-tools: musl-gcc and musl's loader for the musl
# (Alpine-like) image of e2e.musl_podman.
test_packages=(libc-bin python3 runc crun podman containerd docker.io busybox-static hyperfine util-linux
  dpkg-dev lintian systemd buildah debootstrap python3-grpcio python3-grpc-tools musl-tools
  python3-yaml)
# fuzz/ (gcc has no libFuzzer): clang, libFuzzer and the ASan/UBSan runtimes (libclang-rt), and
# llvm-symbolizer for readable stacks in crash reports (llvm-16).
fuzz_packages=(clang-16 libclang-rt-16-dev llvm-16)
# scripts/lint.sh: the formatter and clang-tidy of the same LLVM (clang-tidy 16 parses C++23).
lint_packages=(clang-format-16 clang-tidy-16 git)

wanted=("${build_packages[@]}")
case "${1:-build}" in
  test) wanted+=("${test_packages[@]}" "${fuzz_packages[@]}" "${lint_packages[@]}") ;;
  fuzz) wanted+=("${fuzz_packages[@]}") ;;
esac

missing=()
for package in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/deps.sh: missing packages: ${missing[*]}; run as root or install them" >&2
  exit 1
fi
echo "scripts/deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
