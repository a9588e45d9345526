#!/usr/bin/env bash
# A Debian 12 root in which Debian's real NVIDIA driver packages (the 535 user space of non-free, and
# CUDA 11.8's runtime) installed themselves: `debootstrap --variant=minbase bookworm`, then, chrooted in a
# private mount namespace, `apt-get install --no-install-recommends` of the driver's user space for every
# capability, so their maintainer scripts ran (the update-alternatives group `nvidia`, ldconfig). Made
# once into the test cache (tests/realhost/debian_cache.sh: GPUCTK_TEST_CACHE, default
# /var/cache/gpuctk-tests), keyed by the exact versions, and reused; tests must never change it.
#
#   usage: debian_nvidia_root.sh
#   prints (stdout), one per line:
#     entry=<dir>             the cache entry
#     root=<dir>              the Debian root (a driver root for gpuctk)
#     driver_version=<x.y.z>  from the file name of libcuda.so.<x.y.z> in the root (checked against the
#                             libcuda1 package's upstream version)
#     cudart=<path>           the root's libcudart.so.11.0 (the CUDA runtime belongs to an image: tests copy it)
#   and the package versions on stderr. Exit 1 with one "FAIL: ..." line when the root cannot be made.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/realhost/debian_cache.sh
source "$here/debian_cache.sh"

# Bumped whenever what the builder does changes, so a cached root of the old recipe is rebuilt.
recipe=1
suite=bookworm
mirror=http://deb.debian.org/debian
sources=(
  "deb $mirror $suite main contrib non-free non-free-firmware"
  "deb $mirror $suite-updates main contrib non-free non-free-firmware"
  "deb http://deb.debian.org/debian-security $suite-security main contrib non-free non-free-firmware"
)

# The driver's user space, one package per line with the capability it serves (what gpuctk must find).
# Left out: nvidia-driver / nvidia-kernel-dkms (the kernel module: no use without the kernel, and dkms
# pulls a compiler), nvidia-settings and nvidia-xconfig (desktop configuration tools, which gpuctk does not
# mount), the i386 packages (Debian installs them only with the i386 architecture added; the 32-bit layout
# is the a10-debian-packaged fixture's). Debian 12 does not package nvidia-debugdump, nvidia-imex, the
# fabric manager or libnvidia-nscq.
packages=(
  libcuda1                  # compute: libcuda.so.1, libcuda.so
  libnvidia-ptxjitcompiler1 # compute
  libnvidia-nvvm4           # compute
  libnvidia-pkcs11-openssl3 # compute (confidential computing's PKCS#11)
  libcudadebugger1          # compute: the CUDA debugger's backend (cuda-gdb)
  nvidia-cuda-mps           # compute: nvidia-cuda-mps-control / -server
  libcudart11.0             # the CUDA 11.8 runtime: an image's, copied into the test image, never mounted
  libnvidia-ml1             # utility: NVML
  libnvidia-cfg1            # utility
  nvidia-smi                # utility: nvidia-smi
  nvidia-persistenced       # utility: nvidia-persistenced (its own, older, source package)
  libnvcuvid1               # video
  libnvidia-encode1         # video
  libnvidia-opticalflow1    # video
  libgl1-nvidia-glvnd-glx   # graphics (pulls libglx-nvidia0)
  libglx-nvidia0            # graphics: libGLX_nvidia
  libegl-nvidia0            # graphics: libEGL_nvidia
  libgles-nvidia1           # graphics: libGLESv1_CM_nvidia
  libgles-nvidia2           # graphics: libGLESv2_nvidia
  libnvidia-eglcore         # graphics
  libnvidia-glcore          # graphics
  libnvidia-glvkspirv       # graphics
  libnvidia-rtcore          # graphics (ray tracing; OptiX)
  nvidia-vulkan-icd         # graphics: the Vulkan ICD json
  nvidia-egl-icd            # graphics: the glvnd EGL vendor json
  libnvidia-egl-gbm1        # graphics: EGL's GBM platform (its own version)
  libnvidia-egl-wayland1    # graphics: EGL's Wayland platform (its own version)
  libnvidia-allocator1      # graphics: libnvidia-allocator, gbm/nvidia-drm_gbm.so
  nvidia-vdpau-driver       # video: vdpau/libvdpau_nvidia
  nvidia-opencl-icd         # compute: libnvidia-opencl, the OpenCL ICD file
  libnvidia-ngx1            # ngx
  libnvidia-fbc1            # video (NvFBC)
  libnvidia-api1            # libnvidia-api (NVAPI)
  firmware-nvidia-gsp       # GSP firmware (every capability)
  xserver-xorg-video-nvidia # display: nvidia_drv.so, libglxserver_nvidia
)

build_root() {
  local tmp=$1 root=$1/root specs
  shift
  mkdir -p "$(debcache_dir)/apt/$suite/debootstrap"
  specs=("$@")
  debootstrap --variant=minbase --cache-dir="$(debcache_dir)/apt/$suite/debootstrap" "$suite" "$root" "$mirror" \
    >"$tmp/debootstrap.log" 2>&1 ||
    debcache_fail "debootstrap --variant=minbase $suite failed: $(debcache_why "$(cat "$tmp/debootstrap.log")")"
  printf '%s\n' "${sources[@]}" >"$root/etc/apt/sources.list"
  # No service of a package starts in the chroot.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  # The private lists are what the versions were taken from: install exactly those.
  cp "$(debcache_dir)/apt/$suite/lists/"*_* "$root/var/lib/apt/lists/"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mkdir -p "$root/var/cache/apt/archives"
  # A private mount namespace: /proc and the shared archives/ are mounted for apt and vanish with it.
  unshare -m --propagation private sh -c '
    set -e
    root=$1; archives=$2; shift 2
    mount -t proc proc "$root/proc"
    mount --bind "$archives" "$root/var/cache/apt/archives"
    DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -q -y --no-install-recommends \
      -o Dpkg::Use-Pty=0 -o APT::Keep-Downloaded-Packages=true install "$@"
  ' sh "$root" "$(debcache_dir)/apt/$suite/archives" "${specs[@]}" >"$tmp/install.log" 2>&1 ||
    debcache_fail "apt-get install of the driver packages in $root failed: $(debcache_why "$(cat "$tmp/install.log")")"
  rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
  rm -rf "$root/var/lib/apt/lists/"*_* "$root/var/cache/apt/"*.bin
  # What was installed, for the test's versions line and the key check.
  chroot "$root" dpkg-query -W -f '${Package}=${Version}\n' "${specs[@]%%=*}" >"$tmp/versions"
  local spec
  for spec in "${specs[@]}"; do
    grep -qxF "$spec" "$tmp/versions" || debcache_fail "$root: installed $(grep "^${spec%%=*}=" "$tmp/versions"), wanted $spec"
  done
}

main() {
  local specs key entry root libcuda version want
  debcache_sources "$suite" "${sources[@]}"
  debcache_lists "$suite"
  specs=$(debcache_candidates "$suite" "${packages[@]}") || exit 1
  mapfile -t specs <<<"$specs"
  want=$(printf '%s\n' "${specs[@]}" | sed -n 's/^libcuda1=\([0-9.]*\).*/\1/p')
  key=$want-$(debcache_key "recipe=$recipe suite=$suite arch=amd64 ${specs[*]}")
  entry=$(debcache_entry debian12-nvidia "$key" build_root "${specs[@]}") || exit 1
  root=$entry/root
  libcuda=$(find "$root/usr/lib/x86_64-linux-gnu/nvidia/current" -maxdepth 1 -name 'libcuda.so.*.*' -printf '%f\n')
  version=${libcuda#libcuda.so.}
  [ "$version" = "$want" ] ||
    debcache_fail "$root: libcuda.so.$version, but the libcuda1 package is $want"
  [ -f "$root/usr/lib/x86_64-linux-gnu/libcudart.so.11.0" ] ||
    debcache_fail "$root: no usr/lib/x86_64-linux-gnu/libcudart.so.11.0 (package libcudart11.0)"
  echo "realhost: Debian $suite root $root: $(tr '\n' ' ' <"$entry/versions")" >&2
  echo "entry=$entry"
  echo "root=$root"
  echo "driver_version=$version"
  echo "cudart=$root/usr/lib/x86_64-linux-gnu/libcudart.so.11.0"
}

main "$@"
