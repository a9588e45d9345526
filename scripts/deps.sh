#!/usr/bin/env bash
# Installs, with apt-get, the Debian 12 packages gpuctk needs that are missing.
#   scripts/deps.sh build   compiler, CMake and the libraries
#   scripts/deps.sh test    + GoogleTest, Google Benchmark, and the real runtimes the end-to-end tests start
set -euo pipefail

build_packages=(g++ cmake make pkg-config nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libseccomp-dev
  libcap-dev libgtest-dev libbenchmark-dev)
# binutils' readelf is not needed; ldconfig (libc-bin) builds the fixture hosts' ld.so.cache.
test_packages=(libc-bin python3 runc crun podman containerd busybox-static hyperfine util-linux)

wanted=("${build_packages[@]}")
if [ "${1:-build}" = test ]; then
  wanted+=("${test_packages[@]}")
fi

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
