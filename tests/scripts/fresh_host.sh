#!/usr/bin/env bash
# scripts/fresh_host.sh shows a command a fresh machine's state: what an earlier run left in the folders
# the suite touches (/etc/cdi, /etc/containers, /var/lib/containers, /run/containerd, gpuctk's log) is not
# there, what packages ship is, the checkout is seen under /tmp, and nothing the command writes reaches
# the host. A test that reads a leftover (here: cat of a spec left in /etc/cdi) fails in it.
#   fresh_host.sh REPOSITORY
set -euo pipefail
repo=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a mount namespace)" >&2; exit 77; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The leftovers of "an earlier run", made where the test runs (inside scripts/test.sh that is its own fresh
# namespace, so the real host never changes); each is removed afterwards unless it was there before.
tag=gpuctk-fresh-test-$$
leftovers=(/etc/cdi/$tag.yaml /etc/containers/$tag.conf /var/lib/containers/$tag/storage.db
  /run/containerd/$tag.sock /var/lib/kubelet/$tag)
made=()
cleanup() {
  local path
  for path in "${made[@]}"; do rm -rf "$path"; done
  [ -z "${log_was_made:-}" ] || rm -f /var/log/gpuctk.log
  rmdir "/tmp/$tag" 2>/dev/null || true
}
trap cleanup EXIT
for path in "${leftovers[@]}"; do
  top=$path
  while [ ! -e "$(dirname "$top")" ]; do top=$(dirname "$top"); done
  mkdir -p "$(dirname "$path")"
  echo "left by an earlier run" >"$path"
  made+=("$top")
done
if [ ! -e /var/log/gpuctk.log ]; then
  echo "left by an earlier run" >/var/log/gpuctk.log
  log_was_made=1
fi

cd "$repo"
out=$(bash scripts/fresh_host.sh --checkout-at "/tmp/$tag" -- bash -c '
  set -u
  for path in "$@"; do
    if cat "$path" >/dev/null 2>&1; then echo "leftover seen: $path"; fi
  done
  if [ -e /var/log/gpuctk.log ]; then echo "leftover seen: /var/log/gpuctk.log"; fi
  [ "$PWD" = "/tmp/'"$tag"'" ] || echo "runs in $PWD, not /tmp/'"$tag"'"
  [ -f scripts/fresh_host.sh ] || echo "the checkout is not at $PWD"
  [ "${GPUCTK_FRESH_HOST:-}" = 1 ] || echo "GPUCTK_FRESH_HOST is not 1"
  # What a package ships is there, as the package has it.
  if dpkg-query -S /etc/containers/policy.json >/dev/null 2>&1; then
    [ -f /etc/containers/policy.json ] || echo "podman'"'"'s /etc/containers/policy.json is missing"
  fi
  # Writes stay in the namespace.
  mkdir -p /etc/cdi /var/lib/containers && echo inside >/etc/cdi/inside.yaml && echo inside >/var/lib/containers/inside
  echo done
' fresh "${leftovers[@]}" 2>&1) || fail "scripts/fresh_host.sh failed: $out"
[ "$(tail -n 1 <<<"$out")" = done ] || fail "in the fresh namespace: $out"
[ "$out" = done ] || fail "in the fresh namespace: $(head -n -1 <<<"$out" | tr '\n' ';')"
for path in /etc/cdi/inside.yaml /var/lib/containers/inside; do
  [ ! -e "$path" ] || fail "$path, written in the fresh namespace, reached the host"
done
[ ! -e "/tmp/$tag" ] || fail "/tmp/$tag (the checkout's mount point) was left behind"
for path in "${leftovers[@]}"; do
  [ -e "$path" ] || fail "$path (the host's) is gone after the fresh namespace"
done

# And a test that reads what an earlier run left fails there, while it passes on the changed host.
cat "/etc/cdi/$tag.yaml" >/dev/null || fail "the leftover is not readable on the host"
if bash scripts/fresh_host.sh --checkout-at "/tmp/$tag" -- cat "/etc/cdi/$tag.yaml" >/dev/null 2>&1; then
  fail "a command reading /etc/cdi/$tag.yaml (left by an earlier run) passed in the fresh namespace"
fi
echo "ok: leftovers hidden, package files kept, writes contained, checkout at /tmp/$tag"
