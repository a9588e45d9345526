#!/usr/bin/env bash
# End to end for the OCI prestart hook against hostile images under runc: the hook works from the host's
# side of the container's mount namespace before pivot_root, where a symlink in the image that points
# outside the root would reach the host if it were followed as a host path. The images (busybox and glibc
# roots) have one of:
#   lib-abs  /usr/lib/x86_64-linux-gnu -> $LAB/outside                   (absolute, a host directory)
#   lib-rel  /usr/lib/x86_64-linux-gnu -> ../../../../../../../..$LAB/outside  (climbs above the root)
#   dev-abs  /dev -> $LAB/outside-dev
#   dev-rel  /dev -> ../../../../../../../..$LAB/outside-dev
#   etc-abs  /etc -> $LAB/outside-etc                                    (where the linker cache goes)
# Each image first runs without the hook: runc resolves its own mounts inside the root, and so it starts;
# but runc 1.1.5 itself makes its /dev links (fd, ptmx, stdin, stdout, stderr) through an image's /dev
# link, in the host directory (noted, not the hook's doing): the host directories are compared from after
# that run on. With the hook and no request, nothing changes. With the hook and a GPU 0 request the
# container must either start with the injection inside its own root (the driver file or GPU node
# visible through the link in the container) or fail to start with the hook's one-line reason; in both
# cases the host directories $LAB/outside* are exactly as they were (a listing with types, modes, sizes
# and mtimes) and the host's mount table is unchanged. Last, the hook is handed the pid of a running
# container that has pivoted into its own root, planted with a script at gpuctk's path: refused.
#   usage: prestart_hostile.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs runc "python3 (it writes config.json)"
e2e_prestart_lab "$gpuctk" "$fixture"

# The host directories the links point at, each with a file of its own.
for dir in outside outside-dev outside-etc; do
  mkdir -p "$LAB/$dir"
  echo "host data in $dir" >"$LAB/$dir/marker"
done
# A listing of them: path, type, mode, size, mtime; except that runc re-makes its /dev links on each run
# (ptmx is removed and made again), so the times of those links and of the directory holding them are
# left out (their names, types and modes stay; anything else that appears there shows).
outside_listing() {
  find "$LAB/outside" "$LAB/outside-dev" "$LAB/outside-etc" -printf '%p %y %m %s %T@\n' | sort |
    sed -E "s#^($LAB/outside-dev(/(fd|ptmx|stdin|stdout|stderr))?) (.*) [0-9.]+\$#\1 \4 (time left out: runc)#"
}
e2e_mounts_snapshot "$LAB/mountinfo.before"

# hostile_root KIND CASE: prints $LAB/hostile-KIND-CASE, the KIND root with the CASE link.
hostile_root() {
  local kind=$1 case=$2 root=$LAB/hostile-$1-$2 climb=../../../../../../../..
  local link target
  case "$case" in
    lib-abs) link=/usr/lib/x86_64-linux-gnu target=$LAB/outside ;;
    lib-rel) link=/usr/lib/x86_64-linux-gnu target=$climb$LAB/outside ;;
    dev-abs) link=/dev target=$LAB/outside-dev ;;
    dev-rel) link=/dev target=$climb$LAB/outside-dev ;;
    etc-abs) link=/etc target=$LAB/outside-etc ;;
    *) e2e_fail "unknown case $case" ;;
  esac
  # (A command substitution does not inherit set -e: every step says so when it fails.)
  cp -a "$LAB/root-$kind" "$root" || e2e_fail "cp -a $LAB/root-$kind failed"
  if ! { rm -rf "${root:?}$link" && mkdir -p "$(dirname "$root$link")" && ln -s "$target" "$root$link"; }; then
    e2e_fail "could not make the link $link -> $target in $root"
  fi
  echo "$root"
}

# runc_run NAME ROOT ENV STAGE: `runc run` of a bundle on a copy of ROOT with the hook in hooks.STAGE
# (prestart, or none).
runc_run() {
  local bundle id=gpuctk-e2e-hostile-$1-$$
  bundle=$(e2e_prestart_bundle "$1" "$2" "$3" "$hook" "$4" "$LAB/gpuctk.yaml")
  e2e_cleanup_add "runc delete -f $id"
  runc run --bundle "$bundle" "$id" 2>&1
}

# expect_host_unchanged WHO: the host directories and the host's mounts are as they were.
expect_host_unchanged() {
  local changes
  changes=$(diff "$LAB/outside.before" <(outside_listing)) ||
    e2e_fail "$1 changed the host directories outside the root (< before, > now):
$changes"
  e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "$1"
}

for kind in busybox glibc; do
  for case in lib-abs lib-rel dev-abs dev-rel etc-abs; do
    root=$(hostile_root "$kind" "$case")
    who="$case image ($kind root)"
    outside_listing >"$LAB/outside.before"
    out=$(runc_run "nohook-$kind-$case" "$root" "" none) ||
      e2e_fail "runc does not start the $who even without the hook, so the case tests nothing: $out"
    if ! changes=$(diff "$LAB/outside.before" <(outside_listing)); then
      case "$case" in
        dev-*) echo "note: runc itself (no hook) wrote through the $who's /dev link into the host: ${changes//$'\n'/ }" ;;
        *) e2e_fail "runc itself (no hook) changed the host directories through the $who: $changes" ;;
      esac
      outside_listing >"$LAB/outside.before"
    fi
    e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "runc without the hook on the $who"

    out=$(runc_run "none-$kind-$case" "$root" "" prestart) ||
      e2e_fail "runc with the hook does not start the $who without a request: $out"
    expect_host_unchanged "the hook on the $who without a request"

    if out=$(runc_run "gpu0-$kind-$case" "$root" NVIDIA_VISIBLE_DEVICES=0 prestart); then
      # Started: what was injected is inside the container's own root, seen through its link.
      case "$case" in
        lib-*)
          e2e_expect_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
          e2e_expect_line "$out" "append libcuda: Read-only file system"
          ;;
        dev-*)
          e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
          e2e_expect_gpu0_enxio "$out"
          ;;
        etc-*) e2e_expect_line "$out" "ld.so.cache names the driver folder's libcuda.so.1" ;;
      esac
      echo "ok: the $who started with GPU 0 injected inside its root"
    else
      errors=$(grep -o "gpuctk: error: [^\"]*" <<<"$out") ||
        e2e_fail "the $who failed to start, but not with the hook's reason: $out"
      [ "$(grep -c . <<<"$errors")" = 1 ] || e2e_fail "expected one error line from the hook: $out"
      echo "ok: the $who was refused: ${errors//\\n/}"
    fi
    expect_host_unchanged "the $who with a request"
  done
done
# A container already past pivot_root: a running busybox container (in the host's PID namespace, so its
# /proc shows this hook's own process, and with CAP_MKNOD) whose image plants a script at gpuctk's own path
# and the directory of a GPU container's root. `gpuctk hook prestart` handed a state with its pid (a
# runtime that runs the hook late, a hook in the wrong stage, a config.json that joins that container's
# namespaces) must refuse in one line before it does anything: were it to look host paths up in that
# root, it would run the planted script as root in the host's PID and network namespaces (gpuctk's own
# hooks taken for another vendor's). Nothing planted runs, nothing is made in the planted root, and the
# running container's device cgroup is as it was (GPU 0's node, made there, cannot be opened: EPERM).
attacker_root=$LAB/attacker-root
cp -a "$LAB/root-busybox" "$attacker_root" || e2e_fail "cp -a $LAB/root-busybox failed"
mkdir -p "$attacker_root$(dirname "$hook")"
printf '#!/bin/sh\necho planted > /planted-ran\n' >"$attacker_root$hook"
chmod 755 "$attacker_root$hook"
victim_bundle=$(e2e_prestart_bundle victim "$LAB/root-busybox" NVIDIA_VISIBLE_DEVICES=0 "$hook" none "$LAB/gpuctk.yaml")
mkdir -p "$attacker_root$LAB/rootfs-victim"
attacker_bundle=$LAB/bundle-attacker attacker_id=gpuctk-e2e-attacker-$$
mkdir -p "$attacker_bundle"
(cd "$attacker_bundle" && runc spec) || e2e_fail "runc spec failed"
python3 - "$attacker_bundle/config.json" "$attacker_root" <<'PY' || e2e_fail "could not write $attacker_bundle/config.json"
import json, sys
path, root = sys.argv[1:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sleep", "600"]
for kind in ("bounding", "effective", "permitted"):
    c["process"]["capabilities"][kind].append("CAP_MKNOD")
c["root"] = {"path": root, "readonly": False}
c["linux"]["namespaces"] = [ns for ns in c["linux"]["namespaces"] if ns["type"] != "pid"]
json.dump(c, open(path, "w"), indent=1)
PY
e2e_cleanup_add "runc delete -f $attacker_id"
runc run -d --bundle "$attacker_bundle" "$attacker_id" </dev/null >"$LAB/attacker.out" 2>&1 ||
  e2e_fail "runc does not start the attacking container: $(cat "$LAB/attacker.out")"
attacker_pid=$(runc state "$attacker_id" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])')
outside_listing >"$LAB/outside.before"
state='{"ociVersion":"1.0.2","id":"victim","status":"creating","pid":'$attacker_pid',"bundle":"'$victim_bundle'"}'
if out=$(env -i GPUCTK_CONFIG="$LAB/gpuctk.yaml" "$hook" hook prestart <<<"$state" 2>&1); then
  e2e_fail "the hook injected into a container past pivot_root: $out"
fi
[ "$out" = "gpuctk: error: prestart: the root directory of process $attacker_pid is not the host's: its container has already pivoted into its own root (a prestart hook runs before pivot_root); refused" ] ||
  e2e_fail "the hook's refusal of a container past pivot_root is not the one line expected: $out"
[ ! -e "$attacker_root/planted-ran" ] || e2e_fail "the hook ran the script planted at its own path ($hook)"
[ -z "$(ls -A "$attacker_root$LAB/rootfs-victim")" ] ||
  e2e_fail "the hook made something in the planted root: $(ls -A "$attacker_root$LAB/rootfs-victim")"
opened=$(runc exec --cap CAP_MKNOD "$attacker_id" /bin/sh -c 'mknod /tmp/gpu0 c 195 0 && cat /tmp/gpu0 2>&1 >/dev/null | sed "s/.*: //"')
[ "$opened" = "Operation not permitted" ] ||
  e2e_fail "the running container's device cgroup changed (opening 195:0 there: $opened)"
expect_host_unchanged "the hook on a container past pivot_root"
echo "ok: a container past pivot_root was refused in one line; nothing planted ran, its root and cgroup are as they were"

# A glibc image whose library folder has a library-named link to a FIFO of the image: ldconfig blocks in
# open() on it, and so did the hook and runc, for ever. The sandbox kills ldconfig at its deadline (30 s):
# the start fails with the hook's one line, in bounded time (120 s given here), the host unchanged.
fifo_root=$LAB/hostile-glibc-fifo
cp -a "$LAB/root-glibc" "$fifo_root" || e2e_fail "cp -a $LAB/root-glibc failed"
if ! { mkfifo "$fifo_root/fifo" && ln -s /fifo "$fifo_root/usr/lib/x86_64-linux-gnu/libfifo.so.1"; }; then
  e2e_fail "could not make the FIFO and its library-named link in $fifo_root"
fi
outside_listing >"$LAB/outside.before"
fifo_bundle=$(e2e_prestart_bundle gpu0-glibc-fifo "$fifo_root" NVIDIA_VISIBLE_DEVICES=0 "$hook" prestart "$LAB/gpuctk.yaml")
fifo_id=gpuctk-e2e-hostile-fifo-$$
e2e_cleanup_add "runc delete -f $fifo_id"
started=$SECONDS
if out=$(timeout 120 runc run --bundle "$fifo_bundle" "$fifo_id" 2>&1); then
  e2e_fail "the image with a library-named FIFO started, so ldconfig never reached it: $out"
fi
[ $((SECONDS - started)) -lt 120 ] || e2e_fail "the start of the image with a library-named FIFO hung (runc was killed after 120 s)"
grep -qF "update-ldcache: ldconfig was killed after its deadline of 30 s (a FIFO or a device in the image can block it)" <<<"$out" ||
  e2e_fail "the start of the image with a library-named FIFO did not fail with the sandbox's deadline: $out"
[ "$(grep -o "gpuctk: error: " <<<"$out" | wc -l)" = 1 ] || e2e_fail "expected one error line from the hook: $out"
expect_host_unchanged "the hook on the image with a library-named FIFO"
echo "ok: the image with a library-named FIFO failed to start after $((SECONDS - started)) s with the sandbox's deadline"

echo "PASS: hostile images (lib, dev and etc links out of the root, absolute and climbing; a library-named FIFO) started with the injection inside their root or were refused; a container past pivot_root was refused; the host directories and mounts are unchanged"
