#!/usr/bin/env bash
# docker as clusters and workstations run it today: docker 26 (Debian 13, CDI behind "features": {"cdi":
# true}) or 28 (Debian unstable, CDI on by default), fetched into the test cache, with its own containerd
# (1.7 or 2.x, from the same suite) and Debian 12's runc, all its state in the lab. daemon.json names the
# lab's CDI directory, and `gpuctk runtime configure --runtime docker` adds the runtime "nvidia" to it
# before dockerd starts; dockerd finds gpuctk under the docker hook's name (nvidia-container-runtime-hook)
# on its PATH. On the real-package host (Debian 12's real driver, two GPUs, GPU 1 in MIG mode) an image
# holding the real CUDA 11.8 runtime gets exactly the GPU it asked for, and cudaGetDeviceCount reaches
# the kernel boundary through the real libcuda.so.1:
#   - `docker run --device nvidia.com/gpu=0` (docker's CDI);
#   - `docker run --gpus device=1` (the prestart hook, through the docker hook name);
#   - `docker run --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=1` (the runtime shim);
#   - `docker run --runtime nvidia` without the variable: nothing injected.
# Afterwards docker lists no container, and once dockerd stops the host's mounts are what they were.
#   usage: engines_docker.sh <gpuctk> <gpuctk-fixture> <trixie|sid>
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$(dirname "$0")/../engines/lib.sh"
e2e_init gpuctk fixture suite -- "$@"
e2e_needs runc
command -v cc >/dev/null || e2e_skip "no C compiler (cc) to build the image's programs"
engines_fetch "$suite"
engines_real_host "$gpuctk" "$fixture"
engines_probe_image
shim=$LAB/bin/gpuctk-runtime
mkdir -p "$LAB/hookbin"
ln -s "$(realpath "$gpuctk")" "$LAB/hookbin/nvidia-container-runtime-hook"

d=$LAB/docker
mkdir -p "$d"
# The operator's command: the runtime "nvidia", and on docker 26 CDI, an experimental feature there
# (`features.cdi`); docker 28 has it on by default. daemon.json names the lab's spec directory.
echo "{\"cdi-spec-dirs\": [\"$LAB/cdi\"]}" >"$d/daemon.json"
case "$docker_version" in
  2[0-7].*) cdi=(--cdi) cdi_phrase=", CDI enabled" ;;
  *) cdi=() cdi_phrase="" ;;
esac
out=$("$gpuctk" runtime configure --runtime docker --config "$d/daemon.json" --runtime-path "$shim" "${cdi[@]}" 2>&1) ||
  e2e_fail "runtime configure --runtime docker failed: $out"
expected="docker: runtime \"nvidia\" ($shim) added$cdi_phrase; $d/daemon.json written (the original kept as $d/daemon.json.gpuctk-backup); restart docker"
[ "$out" = "$expected" ] || e2e_fail "unexpected output of runtime configure: $out (want: $expected)"

e2e_mounts_snapshot "$LAB/mountinfo.before"
# shellcheck disable=SC2034  # the client e2e_dockerd_start uses: the fetched release's
docker_cli=$engines_root/usr/bin/docker
e2e_dockerd_start "$d" "$LAB/hookbin:$engines_root/usr/sbin:$engines_root/usr/bin"
server=$("${DOCKER[@]}" version --format '{{.Server.Version}}') || e2e_fail "docker version failed"
[[ "$server" == "$docker_version"* ]] || e2e_fail "dockerd is $server, not the fetched $docker_version"
echo "engines: dockerd $server"
e2e_cleanup_add "${DOCKER[*]} rmi -f gpuctk.test/probe:1"
out=$("${DOCKER[@]}" load -i "$LAB/images/probe.tar" 2>&1) || e2e_fail "docker load failed: $out"

# docker_run NAME DOCKER-RUN-FLAGS...: the probe in a container; prints its output and "container exit N".
docker_run() {
  local name=gpuctk-e2e-$1-$$ out status=0
  shift
  e2e_cleanup_add "${DOCKER[*]} rm -f $name"
  out=$("${DOCKER[@]}" run --rm --network=none --name "$name" "$@" gpuctk.test/probe:1 /bin/sh -c "$engines_probe" 2>&1) ||
    status=$?
  printf '%s\ncontainer exit %s\n' "$out" "$status"
}

v="docker $server"
out=$(docker_run cdi --device nvidia.com/gpu=0)
engines_check_gpu "$out" "$v, --device nvidia.com/gpu=0 (CDI)" "$(engines_spec_nodes 0)"
e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=void"

out=$(docker_run gpus --gpus device=1)
engines_check_gpu "$out" "$v, --gpus device=1 (nvidia-container-runtime-hook prestart)" /dev/nvidia1
e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=1"
grep -q "prestart: injected nvidia.com/gpu=1 from $LAB/cdi/nvidia.yaml into container" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say the prestart hook injected GPU 1: $(cat "$LAB/gpuctk.log")"

out=$(docker_run runtime --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=1)
engines_check_gpu "$out" "$v, --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=1 (gpuctk-runtime)" /dev/nvidia1
grep -q "injected nvidia.com/gpu=1 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "the log does not say what the shim injected: $(cat "$LAB/gpuctk.log")"

out=$(docker_run none --runtime nvidia)
engines_check_nothing "$out" "$v, --runtime nvidia without a request"
if grep -i 'error' "$LAB/gpuctk.log"; then e2e_fail "gpuctk logged an error"; fi

leftover=$("${DOCKER[@]}" ps -aq)
[ -z "$leftover" ] || e2e_fail "docker kept containers: $leftover"
"${DOCKER[@]}" rmi gpuctk.test/probe:1 >/dev/null || e2e_fail "docker rmi failed"
e2e_dockerd_stop
e2e_expect_mounts_unchanged "$LAB/mountinfo.before" "dockerd $server (after it stopped)"
left=$(pgrep -f -- "$d/" || true)
[ -z "$left" ] || e2e_fail "processes of dockerd left: $(ps -o pid,args -p "${left//$'\n'/,}")"
echo "PASS: docker $server: --device nvidia.com/gpu=0 (CDI), --gpus device=1 (hook), --runtime nvidia (shim) each gave exactly the GPU asked for; without a request nothing"
