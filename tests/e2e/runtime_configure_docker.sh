#!/usr/bin/env bash
# End to end for `gpuctk runtime configure --runtime docker` with docker 20.10 (Debian's docker.io) as the
# consumer: a daemon.json of the lab gets runtime "nvidia" (gpuctk-runtime) and features.cdi (which 20.10
# ignores), and a directory of dockerd's PATH the link nvidia-container-runtime-hook to gpuctk
# (--docker-hook-dir: the lab's stand-in for /usr/local/bin); dockerd starts with that file and that PATH
# (all its state in the lab, no networking, GPUCTK_CONFIG in its environment; no systemd drop-in), lists
# the runtime, and `docker run --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=0` on an imported glibc root
# sees GPU 0, its driver files and loads libcuda.so.1: the container went through gpuctk's shim; `docker
# run --gpus all` gets them through the hook dockerd found by that link. Without --runtime or --gpus the
# container is untouched (docker's default runc). --remove gives back daemon.json's bytes and takes the
# link away.
#   usage: runtime_configure_docker.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_docker_tools
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"
shim=$LAB/bin/gpuctk-runtime
# The gpuctk beside the shim, which the docker hook link names.
ln -s "$(realpath "$gpuctk")" "$LAB/bin/gpuctk"
hookdir=$LAB/path-bin

# daemon.json: the lab's trust key (/etc/docker/key.json otherwise) and a key gpuctk must keep.
d=$LAB/docker
mkdir -p "$d"
printf '{\n  "deprecated-key-path": "%s",\n  "log-level": "info"\n}\n' "$d/key.json" >"$d/daemon.json"
cp "$d/daemon.json" "$LAB/daemon.json.original"
out=$("$gpuctk" runtime configure --runtime docker --config "$d/daemon.json" --runtime-path "$shim" --cdi \
  --docker-hook-dir "$hookdir" 2>&1) || e2e_fail "runtime configure failed: $out"
[ "$out" = "docker: runtime \"nvidia\" ($shim) added, CDI enabled; $d/daemon.json written (the original kept as $d/daemon.json.gpuctk-backup); restart docker
docker: linked $hookdir/nvidia-container-runtime-hook -> $LAB/bin/gpuctk (docker run --gpus, once dockerd restarts)" ] ||
  e2e_fail "unexpected output: $out"
python3 - "$d/daemon.json" "$shim" "$d/key.json" <<'PY' || e2e_fail "daemon.json is not what it should be: $(cat "$d/daemon.json")"
import json, sys
path, shim, key = sys.argv[1:]
doc = json.load(open(path))
assert list(doc) == ["deprecated-key-path", "log-level", "runtimes", "features"], list(doc)
assert doc["features"] == {"cdi": True}, doc["features"]
assert doc["deprecated-key-path"] == key and doc["log-level"] == "info"
assert doc["runtimes"] == {"nvidia": {"path": shim}}, doc["runtimes"]
PY
echo "ok: daemon.json configured, its own keys kept in order"

e2e_dockerd_start "$d" "$hookdir"

runtimes=$("${DOCKER[@]}" info --format '{{json .Runtimes}}' 2>&1) || e2e_fail "docker info failed: $runtimes"
python3 - "$runtimes" "$shim" <<'PY' || e2e_fail "docker info does not list runtime nvidia with path $shim: $runtimes"
import json, sys
runtimes, shim = sys.argv[1:]
assert json.loads(runtimes)["nvidia"]["path"] == shim
PY
echo "ok: dockerd lists runtime \"nvidia\" at $shim"

image=gpuctk-e2e-glibc:$$
e2e_cleanup_add "${DOCKER[*]} rmi -f $image"
tar -C "$LAB/rootfs" -c . | "${DOCKER[@]}" import - "$image" >"$LAB/import.out" 2>&1 ||
  e2e_fail "docker import failed: $(cat "$LAB/import.out")"

# docker_run NAME DOCKER-RUN-FLAGS...: the t4 probe in a container of the imported root.
docker_run() {
  local name=gpuctk-e2e-$1-$$
  shift
  e2e_cleanup_add "${DOCKER[*]} rm -f $name"
  "${DOCKER[@]}" run --rm --network=none --name "$name" "$@" "$image" /bin/sh -c "$e2e_t4_probe"
}

out=$(docker_run gpu0 --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=0 2>&1) ||
  e2e_fail "docker run --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=0 failed: $out"
e2e_check_t4_gpu0 "$out" "docker run --runtime nvidia (the configured runtime) -e NVIDIA_VISIBLE_DEVICES=0"
grep -q "injected nvidia.com/gpu=0 from $LAB/cdi/nvidia.yaml" "$LAB/gpuctk.log" ||
  e2e_fail "gpuctk's log does not say the shim injected GPU 0: $(cat "$LAB/gpuctk.log")"

out=$(docker_run runc -e NVIDIA_VISIBLE_DEVICES=0 2>&1) || e2e_fail "docker run with docker's runc failed: $out"
e2e_expect_no_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
e2e_expect_line "$out" "cuda-version exit 1"
e2e_check_t4_no_gpu1 "$out"
echo "ok: without --runtime nvidia docker's own runc gives no GPU"

# docker --gpus: dockerd found nvidia-container-runtime-hook on its PATH (configure's link) and runs it as
# the container's prestart hook, which puts both GPUs into it live; the env stays docker's.
out=$(docker_run gpus --gpus all 2>&1) || e2e_fail "docker run --gpus all failed: $out"
e2e_expect_line "$out" "crw-rw-rw- 195, 0 /dev/nvidia0"
e2e_expect_line "$out" "crw-rw-rw- 195, 255 /dev/nvidiactl"
e2e_expect_line "$out" "file /usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"
e2e_expect_line "$out" "env NVIDIA_VISIBLE_DEVICES=all"
e2e_check_t4_driver_loads "$out"
e2e_check_t4_gpu1 "$out"
echo "ok: docker run --gpus all went through the linked hook"

leftover=$("${DOCKER[@]}" ps -aq)
[ -z "$leftover" ] || e2e_fail "docker kept containers: $leftover"
"${DOCKER[@]}" rmi "$image" >/dev/null || e2e_fail "docker rmi $image failed"
e2e_dockerd_stop

out=$("$gpuctk" runtime configure --runtime docker --config "$d/daemon.json" --runtime-path "$shim" --remove \
  --docker-hook-dir "$hookdir" 2>&1) || e2e_fail "runtime configure --remove failed: $out"
[ "$out" = "docker: $d/daemon.json restored from $d/daemon.json.gpuctk-backup; restart docker
docker: removed $hookdir/nvidia-container-runtime-hook" ] || e2e_fail "unexpected output of --remove: $out"
cmp -s "$d/daemon.json" "$LAB/daemon.json.original" || e2e_fail "--remove did not give back daemon.json's bytes"
[ ! -e "$hookdir/nvidia-container-runtime-hook" ] || e2e_fail "--remove left the docker hook link"
echo "PASS: gpuctk runtime configure wired gpuctk-runtime and --gpus into docker 20.10 (docker run --runtime nvidia and --gpus all got GPU 0) and took them out again"
