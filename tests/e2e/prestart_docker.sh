#!/usr/bin/env bash
# End to end for `docker run --gpus` (Debian's docker.io 20.10): dockerd enables --gpus when an executable
# named nvidia-container-runtime-hook is on its PATH, and then adds to config.json a prestart hook
# running it with the argument `prestart` and dockerd's environment. Here that name is a symlink to
# gpuctk, which then behaves as `gpuctk hook prestart`, and GPUCTK_CONFIG in dockerd's environment points
# it at the lab's config. dockerd runs by hand with all its state in the lab and no networking; the
# busybox and the glibc roots are imported as images. With --gpus device=0 and --gpus all the container
# gets GPU 0's nodes and the control nodes, allowed in the device cgroup while an unrequested node (195:1,
# made in the container with mknod) stays refused, the driver files read-only, nosuid, nodev, the
# createContainer hooks' links and linker cache, and the glibc container loads libcuda.so.1; the env
# keeps what docker set (NVIDIA_VISIBLE_DEVICES=0, =all). Without --gpus nothing is injected; a GPU that
# does not exist refuses the container with the hook's reason. Once dockerd is stopped, the host's mounts
# are exactly what they were before it started.
#   usage: prestart_docker.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_docker_tools
e2e_prestart_lab "$gpuctk" "$fixture"
mkdir -p "$LAB/hookbin"
ln -s "$hook" "$LAB/hookbin/nvidia-container-runtime-hook"

e2e_mounts_snapshot "$LAB/mountinfo.before"

# dockerd with the hook's name first on its PATH (docker enables --gpus only then).
d=$LAB/docker
mkdir -p "$d"
echo "{\"deprecated-key-path\": \"$d/key.json\"}" >"$d/daemon.json"
e2e_dockerd_start "$d" "$LAB/hookbin"
[ "$(cat "$d/dockerd.pid")" = "$dockerd_pid" ] || e2e_fail "dockerd's pid file does not hold its pid"

for kind in busybox glibc; do
  image=gpuctk-e2e-$kind:$$
  e2e_cleanup_add "${DOCKER[*]} rmi -f $image"
  tar -C "$LAB/root-$kind" -c . | "${DOCKER[@]}" import - "$image" >"$LAB/import-$kind.out" 2>&1 ||
    e2e_fail "docker import of the $kind root failed: $(cat "$LAB/import-$kind.out")"
done

# docker_run NAME IMAGE-KIND DOCKER-RUN-FLAGS... -- COMMAND...
docker_run() {
  local name=gpuctk-e2e-$1-$$ kind=$2
  shift 2
  local flags=()
  while [ "$1" != -- ]; do
    flags+=("$1")
    shift
  done
  shift
  e2e_cleanup_add "${DOCKER[*]} rm -f $name"
  "${DOCKER[@]}" run --rm --network=none --name "$name" "${flags[@]}" "gpuctk-e2e-$kind:$$" "$@"
}

# No LAB/host path (the fixture's driver files and nodes) and no libcuda may be mounted on the host at any time.
expect_no_driver_mounts() {
  local leaked
  leaked=$(grep -E "$LAB/host|libcuda" /proc/self/mountinfo) && e2e_fail "$1 left driver mounts on the host: $leaked"
  return 0
}

for kind in busybox glibc; do
  out=$(docker_run "gpu0-$kind" "$kind" --gpus device=0 -- /bin/sh -c "$e2e_prestart_probe" 2>&1) ||
    e2e_fail "docker run --gpus device=0 ($kind image) failed: $out"
  e2e_check_prestart_gpu0 "$out" "docker --gpus device=0, $kind image" "$kind" 0
  expect_no_driver_mounts "docker --gpus device=0 ($kind image)"

  out=$(docker_run "all-$kind" "$kind" --gpus all -- /bin/sh -c "$e2e_prestart_probe" 2>&1) ||
    e2e_fail "docker run --gpus all ($kind image) failed: $out"
  e2e_check_prestart_gpu0 "$out" "docker --gpus all, $kind image" "$kind" all
  expect_no_driver_mounts "docker --gpus all ($kind image)"

  out=$(docker_run "none-$kind" "$kind" -- /bin/sh -c "$e2e_prestart_probe" 2>&1) ||
    e2e_fail "docker run without --gpus ($kind image) failed: $out"
  e2e_check_prestart_nothing "$out" "docker without --gpus, $kind image" "$kind"

  bad=GPU-00000000-0000-0000-0000-000000000000
  if out=$(docker_run "bad-$kind" "$kind" --gpus "device=$bad" -- /bin/true 2>&1); then
    e2e_fail "docker started a container asking for $bad ($kind image): $out"
  fi
  e2e_expect_hook_refusal "$out" "docker --gpus device=$bad ($kind image)" "$bad"
  expect_no_driver_mounts "a refused docker --gpus ($kind image)"
done
# The hook ran as nvidia-container-runtime-hook with the config from dockerd's environment.
grep -qF "$LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not name the spec file the hook used: $(cat "$LAB/gpuctk.log")"

leftover=$("${DOCKER[@]}" ps -aq)
[ -z "$leftover" ] || e2e_fail "docker kept containers: $leftover"
for kind in busybox glibc; do
  "${DOCKER[@]}" rmi "gpuctk-e2e-$kind:$$" >/dev/null || e2e_fail "docker rmi gpuctk-e2e-$kind:$$ failed"
done
e2e_dockerd_stop
e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "dockerd with the prestart hook (after it stopped)"
echo "PASS: docker 20.10 --gpus ran gpuctk as nvidia-container-runtime-hook prestart on busybox and glibc images; no --gpus untouched, a bad GPU refused, host mounts unchanged"
