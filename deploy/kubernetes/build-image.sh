#!/usr/bin/env bash
# Builds the gpuctk installer image offline with buildah (Debian's package), no daemon, nothing left in
# /var/lib/containers: vfs storage in a temporary directory, the result an OCI archive.
#   deploy/kubernetes/build-image.sh [--device-plugin PLUGIN_BINARY] [--mps-control-daemon MPS_BINARY]
#                                    [--exporter EXPORTER_BINARY] [--dra-plugin DRA_BINARY]
#                                    GPUCTK_BINARY OUTPUT.tar [IMAGE_NAME]
# Prints the image's reference by digest (IMAGE_NAME without its tag, @sha256:...) for the DaemonSet.
# The image is FROM scratch: gpuctk (stripped), the shared libraries it links (ldd: glibc; libstdc++ is
# static), the dynamic loader, and the glibc libraries the node's libnvidia-ml.so.1 links, which gpuctk
# dlopens from the host root for NVML discovery. No shell. Containerfile describes the same image.
# --device-plugin adds gpuctk-device-plugin (a build with -DGPUCTK_DEVICE_PLUGIN=ON) as
# /gpuctk-device-plugin, stripped, with the libraries it links (glibc; gRPC is linked statically) and
# libcurl.so.4 with its own, which it loads for per-node configs, for gpuctk-device-plugin.yaml; --mps-control-daemon adds gpuctk-mps-control-daemon (the same
# build) as /gpuctk-mps-control-daemon, for that file's MPS DaemonSet. --exporter adds gpuctk-exporter (a
# build with -DGPUCTK_EXPORTER=ON) as /gpuctk-exporter, stripped, with the libraries it links (glibc, libcrypt, GnuTLS's), for
# gpuctk-exporter.yaml. --dra-plugin adds gpuctk-dra-plugin (a build with -DGPUCTK_DEVICE_PLUGIN=ON) as
# /gpuctk-dra-plugin, with libcurl.so.4 as for the device plugin (its API client), for
# gpuctk-dra-plugin.yaml.
set -euo pipefail

usage="usage: build-image.sh [--device-plugin PLUGIN_BINARY] [--mps-control-daemon MPS_BINARY] [--exporter EXPORTER_BINARY] [--dra-plugin DRA_BINARY] GPUCTK_BINARY OUTPUT.tar [IMAGE_NAME]"
plugin=
dra=
mps=
exporter=
while true; do
  case "${1:-}" in
    --device-plugin) plugin=${2:?$usage} ;;
    --mps-control-daemon) mps=${2:?$usage} ;;
    --exporter) exporter=${2:?$usage} ;;
    --dra-plugin) dra=${2:?$usage} ;;
    *) break ;;
  esac
  shift 2
done
binary=${1:?$usage}
output=${2:?$usage}
name=${3:-localhost/gpuctk-installer:latest}
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v buildah >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y buildah >/dev/null
fi

work=$(mktemp -d /tmp/gpuctk-image.XXXXXX)
container=
# buildah (containers/image) keeps a blob-info cache in /var/lib/containers/cache whatever --root says: what
# it makes there that was not there before is removed afterwards (a fresh machine has no such folder).
made_by_buildah=()
for path in /var/lib/containers /var/lib/containers/cache /var/lib/containers/cache/blob-info-cache-v1.boltdb; do
  [ -e "$path" ] || made_by_buildah+=("$path")
done
cleanup() {
  if [ -n "$container" ]; then
    buildah "${store[@]}" rm "$container" >/dev/null 2>&1 || true
  fi
  # vfs layers are plain directories; buildah's own unshare is not needed as root.
  rm -rf "$work"
  local i
  for ((i = ${#made_by_buildah[@]} - 1; i >= 0; i--)); do
    if [ -d "${made_by_buildah[$i]}" ]; then
      rmdir "${made_by_buildah[$i]}" 2>/dev/null || true
    else
      rm -f "${made_by_buildah[$i]}"
    fi
  done
}
trap cleanup EXIT
store=(--storage-driver vfs --root "$work/storage" --runroot "$work/runroot")

# The build context (what Containerfile COPYs): rootfs/ with every file at its place in the image.
context=$work/context
mkdir -p "$context/rootfs"
cp "$here/Containerfile" "$context/"
objcopy --strip-unneeded "$binary" "$context/rootfs/gpuctk"
chmod 0755 "$context/rootfs/gpuctk"
# The daemons beside gpuctk, each at the path its DaemonSet runs.
add_daemon() {
  objcopy --strip-unneeded "$1" "$context/rootfs/$2"
  chmod 0755 "$context/rootfs/$2"
}
[ -z "$plugin" ] || add_daemon "$plugin" gpuctk-device-plugin
[ -z "$mps" ] || add_daemon "$mps" gpuctk-mps-control-daemon
[ -z "$exporter" ] || add_daemon "$exporter" gpuctk-exporter
[ -z "$dra" ] || add_daemon "$dra" gpuctk-dra-plugin
libraries() {
  # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" and "/lib64/ld-linux-x86-64.so.2 (0x…)"
  ldd "$1" | sed -nE 's/.*=> (\/[^ ]+) .*/\1/p; s/^[[:space:]]*(\/[^ ]+) \(0x.*/\1/p'
}
mapfile -t needed < <({
  libraries "$binary"
  [ -z "$plugin" ] || libraries "$plugin"
  [ -z "$mps" ] || libraries "$mps"
  [ -z "$exporter" ] || libraries "$exporter"
  [ -z "$dra" ] || libraries "$dra"
} | sort -u)
# libnvidia-ml.so.1 links these (glibc 2.34+ keeps them as small stubs); without them NVML cannot load.
libdir=$(dirname "$(ldd "$binary" | sed -nE 's/.*libc\.so\.6 => (\/[^ ]+) .*/\1/p')")
for extra in libpthread.so.0 libdl.so.2 librt.so.1; do
  [ -e "$libdir/$extra" ] && needed+=("$libdir/$extra")
done
# gpuctk-device-plugin and gpuctk-dra-plugin load libcurl.so.4 themselves, for the Kubernetes API
# (src/kube/curl_library.hpp): it and the libraries it links, which ldd of the daemon does not list.
if [ -n "$plugin$dra" ]; then
  [ -e "$libdir/libcurl.so.4" ] ||
    { echo "build-image.sh: no $libdir/libcurl.so.4 (package libcurl4: scripts/deps.sh plugin)" >&2; exit 1; }
  needed+=("$libdir/libcurl.so.4")
  mapfile -t -O "${#needed[@]}" needed < <(libraries "$libdir/libcurl.so.4")
fi
for library in "${needed[@]}"; do
  mkdir -p "$context/rootfs$(dirname "$library")"
  cp -L "$library" "$context/rootfs$library"
  # The loader is found at its ABI path, which on merged-/usr Debian is a link (/lib64 -> usr/lib64):
  # the image keeps the path as a plain directory.
done

# "gpuctk 0.1.0 (commit 0123456789ab)": the release and the commit, as OCI's version and revision.
version_line=$("$binary" --version)
version=$(sed -E 's/^gpuctk ([^ ]+).*/\1/' <<<"$version_line")
revision=$(sed -nE 's/.*\(commit ([^)]+)\)$/\1/p' <<<"$version_line")
container=$(buildah "${store[@]}" from --quiet scratch)
buildah "${store[@]}" copy --quiet "$container" "$context/rootfs/" / >/dev/null
buildah "${store[@]}" config --entrypoint '["/gpuctk"]' --cmd '["install", "--help"]' \
  --label org.opencontainers.image.title=gpuctk-installer \
  --label "org.opencontainers.image.version=$version" --label "org.opencontainers.image.revision=$revision" \
  "$container"
rm -f "$output"
buildah "${store[@]}" commit --quiet --format oci "$container" "oci-archive:$output:$name" >/dev/null
# The manifest's digest, for the DaemonSet's image (name@digest): the archive's index names it, and the
# engines keep it when they load the archive.
digest=$(tar -xOf "$output" index.json | grep -o '"digest":"sha256:[0-9a-f]\{64\}"' | head -n 1 | cut -d'"' -f4)
[ -n "$digest" ] || { echo "build-image.sh: no manifest digest in $output's index.json" >&2; exit 1; }
repository=$name
case "${name##*/}" in *:*) repository=${name%:*} ;; esac  # the tag, not a registry's port
echo "$repository@$digest"
echo "built $output ($name, $(du -h "$output" | cut -f1))"
