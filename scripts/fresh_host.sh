#!/usr/bin/env bash
# Runs a command as on a fresh machine: in a private mount namespace where the host state that gpuctk's
# tests read or change is what a fresh Debian 12 machine with the same packages has, and where the
# checkout is seen at a path under /tmp. scripts/test.sh runs its suites this way (so .ci/run does), so a
# test that depends on what an earlier run left behind fails in CI, not on a user's first run.
#
#   scripts/fresh_host.sh [--checkout-at DIR] -- COMMAND [ARGS…]
#
# In the namespace (the host itself never changes; everything written there is gone afterwards):
#   - /etc and /var/log are overlays of the host's (writes land in a tmpfs), without the folders of
#     k_fresh_etc below and gpuctk's log; a folder some installed package ships comes back holding only
#     the package's files (a conffile edited on the host is said on stderr, and kept);
#   - /var/lib and /run are tmpfs holding every other entry of the host's, bound back, so that what a test
#     makes beside them (podman's /var/lib/containers, /run/containerd) is fresh and vanishes with it;
#     the folders of k_fresh_var_lib and k_fresh_run are absent unless a package ships them;
#   - the checkout is bound at DIR (default /tmp/gpuctk-checkout) and COMMAND runs there.
# What the suite may rely on is what scripts/deps.sh installs; CONTRIBUTING, "Host state", lists both.
set -euo pipefail

# The folders of gpuctk, the engines and the Kubernetes node agent that a test reads or writes.
k_fresh_etc=(cdi containers containerd docker crio cni gpuctk nvidia-container-runtime
  nvidia-container-toolkit kubernetes)
k_fresh_var_lib=(containers containerd docker cni kubelet gpuctk nvidia-container-toolkit crio)
k_fresh_run=(cdi containers containerd docker docker.sock docker.pid crun runc libpod netns gpuctk
  nvidia-container-toolkit crio)

fail() {
  echo "scripts/fresh_host.sh: $*" >&2
  exit 1
}

# package_files DIR: the files and folders under DIR that installed packages ship, one per line.
package_files() {
  local dir=$1 owners
  owners=$(dpkg-query -S "$dir" 2>/dev/null | sed -n "s|: $dir\$||p" | tr -d ',') || true
  [ -n "$owners" ] || return 0
  # shellcheck disable=SC2086  # one word per package
  dpkg-query -L $owners 2>/dev/null | grep -E "^$dir(/|\$)" | sort -u
}

# modified_conffiles DIR: the conffiles under DIR whose content differs from what their package shipped.
modified_conffiles() {
  local dir=$1
  dpkg-query -W -f='${Conffiles}\n' 2>/dev/null | awk -v dir="$dir/" \
    'index($1, dir) == 1 && $3 != "obsolete" { print $1, $2 }' | while read -r file sum; do
    [ -f "$file" ] || continue
    [ "$(md5sum <"$file" | cut -d' ' -f1)" = "$sum" ] || echo "$file"
  done
}

# refill DIR ORIGINAL: DIR (gone from the namespace's view) comes back with only what packages ship of
# it, copied from ORIGINAL (the host's own copy of DIR).
refill() {
  local dir=$1 original=$2 path
  while read -r path; do
    [ -e "$original${path#"$dir"}" ] || [ -L "$original${path#"$dir"}" ] || continue
    if [ -d "$original${path#"$dir"}" ] && [ ! -L "$original${path#"$dir"}" ]; then
      mkdir -p "$path"
      chmod --reference="$original${path#"$dir"}" "$path"
    else
      mkdir -p "$(dirname "$path")"
      cp -a "$original${path#"$dir"}" "$path"
    fi
  done < <(package_files "$dir")
  while read -r path; do
    echo "scripts/fresh_host.sh: $path differs from its package's (kept as the host has it)" >&2
  done < <(modified_conffiles "$dir")
}

# overlay PARENT STAGE NAMES...: PARENT becomes an overlay of itself (upper layer on the tmpfs STAGE),
# without NAMES (each refilled with its package files).
overlay() {
  local parent=$1 stage=$2 name
  shift 2
  local key=${parent//\//_}
  mkdir -p "$stage/lower$key" "$stage/upper$key" "$stage/work$key"
  mount --bind "$parent" "$stage/lower$key"
  mount -t overlay overlay -o "lowerdir=$stage/lower$key,upperdir=$stage/upper$key,workdir=$stage/work$key" \
    "$parent"
  for name in "$@"; do
    if [ -e "$parent/$name" ] || [ -L "$parent/$name" ]; then
      rm -rf "${parent:?}/$name"
      refill "$parent/$name" "$stage/lower$key/$name"
    fi
  done
}

# shadow PARENT STAGE NAMES...: PARENT becomes a tmpfs holding every entry of the host's PARENT but
# NAMES: folders bound back (with their own mounts), files bound, links copied; NAMES refilled with their
# package files.
shadow() {
  local parent=$1 stage=$2 entry name
  shift 2
  local key=${parent//\//_}
  mkdir -p "$stage/host$key"
  mount --rbind "$parent" "$stage/host$key"
  mount --make-rprivate "$stage/host$key"
  mount -t tmpfs -o "mode=$(stat -c %a "$parent")" tmpfs "$parent"
  for entry in "$stage/host$key"/* "$stage/host$key"/.[!.]*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    name=${entry##*/}
    if [[ " $* " == *" $name "* ]]; then
      refill "$parent/$name" "$entry"
    elif [ -L "$entry" ]; then
      cp -P "$entry" "$parent/$name"
    elif [ -d "$entry" ]; then
      mkdir -p "$parent/$name"  # (mount may have made /run/mount already, for its utab)
      mount --rbind "$entry" "$parent/$name"
    else
      touch "$parent/$name"
      mount --bind "$entry" "$parent/$name"
    fi
  done
}

inside() {
  local checkout_at=$1 source=$2 stage=$3
  shift 3
  mount -t tmpfs -o mode=0755 tmpfs "$stage"
  overlay /etc "$stage" "${k_fresh_etc[@]}"
  # gpuctk's default log (/var/log/gpuctk.log) and whatever an earlier run rotated beside it.
  overlay /var/log "$stage" $(cd /var/log && compgen -G 'gpuctk*' || true)
  shadow /var/lib "$stage" "${k_fresh_var_lib[@]}"
  shadow /run "$stage" "${k_fresh_run[@]}"
  mount --bind "$source" "$checkout_at"
  cd "$checkout_at"
  export GPUCTK_FRESH_HOST=1
  exec "$@"
}

main() {
  local checkout_at=/tmp/gpuctk-checkout
  while [ $# -gt 0 ]; do
    case $1 in
      --checkout-at) checkout_at=${2:?--checkout-at needs a folder}; shift 2 ;;
      --inside) shift; inside "$@" ;;
      --) shift; break ;;
      *) fail "unknown option $1 (usage: scripts/fresh_host.sh [--checkout-at DIR] -- COMMAND…)" ;;
    esac
  done
  [ $# -gt 0 ] || fail "no command (usage: scripts/fresh_host.sh [--checkout-at DIR] -- COMMAND…)"
  [ "$(id -u)" -eq 0 ] || fail "needs root (a private mount namespace, overlays of /etc and /var/log)"
  command -v unshare >/dev/null || fail "unshare (util-linux) is not installed"
  [[ "$checkout_at" == /tmp/* ]] || fail "--checkout-at $checkout_at: not under /tmp"
  local source made= stage
  source=$(pwd -P)
  # One run per checkout path: removing the mount point of a run that is still going would take its
  # checkout away (an rmdir detaches the mounts of other namespaces).
  exec {lock}>"$checkout_at.lock"
  flock -n "$lock" || fail "$checkout_at is in use by another run of scripts/fresh_host.sh"
  stage=$(mktemp -d /tmp/gpuctk-fresh-stage.XXXXXX)
  if [ ! -d "$checkout_at" ]; then
    mkdir -p "$checkout_at"
    made=1
  fi
  local status=0
  unshare --mount --propagation private -- bash "${BASH_SOURCE[0]}" --inside "$checkout_at" "$source" "$stage" "$@" \
    {lock}>&- || status=$?
  # The namespace's mounts are gone with it; what is left on the host are the empty mount points.
  rmdir "$stage"
  [ -z "$made" ] || rmdir "$checkout_at" 2>/dev/null || true
  rm -f "$checkout_at.lock"
  return "$status"
}

main "$@"
