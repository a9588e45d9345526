#!/usr/bin/env bash
# End to end: `gpuctk cdi generate --vendor-set nvidia,amd,intel` on the AMD MI300X-like and Intel Flex-like
# fixture hosts writes one spec per vendor with GPUs (amd.com/gpu, intel.com/gpu) and one note line per
# vendor without, and real podman 4.3.1 injects `--device amd.com/gpu=N` / `--device intel.com/gpu=0` from
# them: the container sees exactly that GPU's /dev/dri nodes (and /dev/kfd for AMD) with their numbers, its
# /dev/dri/by-path links (the create-symlinks hook), nothing of the other GPUs, and the device cgroup lets
# it open the nodes (ENXIO: no driver behind them here, not EPERM).
#   usage: cdi_generate_vendors_podman.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init --own-cdi gpuctk fixture -- "$@"
e2e_podman_init
e2e_busybox_rootfs


# generate HOST KIND: materialises HOST in $LAB/HOST, generates its vendor-set specs into $LAB/out-HOST,
# checks the notes, and installs the KIND spec in /etc/cdi under a name of this test's own.
generate() {
  local host=$1 kind=$2 root notes
  "$fixture" materialize "$host" "$LAB/$host" >"$LAB/$host.roots" || e2e_fail "could not materialise $host"
  grep -qx "nodes=real" "$LAB/$host.roots" || e2e_skip "fixture device nodes are not real char devices"
  root=$(sed -n 's/^dev_root=//p' "$LAB/$host.roots")
  mkdir -p "$LAB/out-$host"
  "$gpuctk" cdi generate --dev-root "$root" --driver-root "$root" --vendor-set nvidia,amd,intel \
    "${e2e_podman431_spec_options[@]}" \
    --output "$LAB/out-$host" 2>"$LAB/$host.err" || e2e_fail "cdi generate on $host failed: $(cat "$LAB/$host.err")"
  notes=$(e2e_without_hook_path_warnings <"$LAB/$host.err")  # this build tree's gpuctk will not last
  [ "$(ls "$LAB/out-$host")" = "$kind.yaml" ] || e2e_fail "$host: expected only $kind.yaml, got: $(ls "$LAB/out-$host")"
  [ "$(grep -c '^gpuctk: note: ' <<<"$notes")" = 2 ] || e2e_fail "$host: expected two note lines, got: $notes"
  [ "$(wc -l <<<"$notes")" = 2 ] || e2e_fail "$host: expected nothing but the two notes on stderr, got: $notes"
  "$gpuctk" cdi validate "$LAB/out-$host/$kind.yaml" || e2e_fail "$host: $kind.yaml does not validate"
  grep -qx 'cdiVersion: "0.5.0"' "$LAB/out-$host/$kind.yaml" || e2e_fail "$host: spec is not cdiVersion 0.5.0"
  cp "$LAB/out-$host/$kind.yaml" "/etc/cdi/gpuctk-e2e-$$-$kind.yaml"
  e2e_cleanup_add "rm -f '/etc/cdi/gpuctk-e2e-$$-$kind.yaml'"
  echo "ok: $host: $kind spec and two notes"
}
generate mi300x-amd amd.com-gpu
generate flex170-intel intel.com-gpu

# Every node and link the container has under /dev/dri, and /dev/kfd: "node PATH MAJOR,MINOR open: ERROR"
# and "link PATH -> TARGET", sorted.
# shellcheck disable=SC2016  # expanded in the container
probe='for n in /dev/dri/* /dev/dri/by-path/* /dev/kfd; do
  if [ -L "$n" ]; then echo "link $n -> $(readlink "$n")"
  elif [ -c "$n" ]; then set -- $(ls -l "$n"); echo "node $n $5$6 open: $(cat "$n" 2>&1 >/dev/null | sed "s/.*: //")"
  fi
done | sort'

# expect_exactly DEVICE... -- LINE...: a container started with those devices sees exactly those lines.
expect_exactly() {
  local args=() want out
  while [ "$1" != -- ]; do args+=(--device "$1"); shift; done
  shift
  want=$(printf '%s\n' "$@" | sort)
  out=$(e2e_podman_run "${args[@]}" --rootfs "$(e2e_rootfs_copy "$$-$RANDOM")" /bin/sh -c "$probe" 2>&1) ||
    e2e_fail "podman run ${args[*]} failed: $out"
  [ "$out" = "$want" ] || e2e_fail "podman run ${args[*]}: expected
$want
got
$out"
  echo "ok: podman ${args[*]}"
}

enxio="open: No such device or address"
expect_exactly amd.com/gpu=0 -- \
  "node /dev/dri/card1 226,1 $enxio" \
  "node /dev/dri/renderD128 226,128 $enxio" \
  "node /dev/kfd 235,0 $enxio" \
  "link /dev/dri/by-path/pci-0000:05:00.0-card -> ../card1" \
  "link /dev/dri/by-path/pci-0000:05:00.0-render -> ../renderD128"
# A partition of the CPX-mode GPU: its own platform device's nodes and links only.
expect_exactly amd.com/gpu=3 -- \
  "node /dev/dri/card9 226,9 $enxio" \
  "node /dev/dri/renderD136 226,136 $enxio" \
  "node /dev/kfd 235,0 $enxio" \
  "link /dev/dri/by-path/platform-amdgpu_xcp_0-card -> ../card9" \
  "link /dev/dri/by-path/platform-amdgpu_xcp_0-render -> ../renderD136"
# By UUID: the same GPU as index 0.
expect_exactly amd.com/gpu=0x2C9E4B6D10F58A31 -- \
  "node /dev/dri/card1 226,1 $enxio" \
  "node /dev/dri/renderD128 226,128 $enxio" \
  "node /dev/kfd 235,0 $enxio" \
  "link /dev/dri/by-path/pci-0000:05:00.0-card -> ../card1" \
  "link /dev/dri/by-path/pci-0000:05:00.0-render -> ../renderD128"
expect_exactly intel.com/gpu=0 -- \
  "node /dev/dri/card1 226,1 $enxio" \
  "node /dev/dri/renderD128 226,128 $enxio" \
  "link /dev/dri/by-path/pci-0000:4d:00.0-card -> ../card1" \
  "link /dev/dri/by-path/pci-0000:4d:00.0-render -> ../renderD128"
expect_exactly intel.com/gpu=1 -- \
  "node /dev/dri/card2 226,2 $enxio" \
  "node /dev/dri/renderD129 226,129 $enxio" \
  "link /dev/dri/by-path/pci-0000:ca:00.0-card -> ../card2" \
  "link /dev/dri/by-path/pci-0000:ca:00.0-render -> ../renderD129"
# Without a device request: nothing.
expect_exactly --
echo "PASS: podman 4.3.1 ran amd.com/gpu=0, =3 (a partition), =<uuid> and intel.com/gpu=0, =1 from gpuctk specs"
