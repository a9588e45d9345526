#!/usr/bin/env bash
# Issue 38's end to end: gpuctk-dra-plugin's prepared claims, handed to containerd 2.1 over CRI as the kubelet
# hands them. The host is engines_containerd.sh's (the real-package host: Debian 12's real 535 driver user
# space, GPU 0 an A10, GPU 1 an A30 in MIG mode with two 2g.12gb MIG devices; the CUDA 11.8 probe image),
# with containerd from Debian unstable (sid) started once, CDI turned on by `gpuctk runtime configure --cdi`.
#
# The lab's CDI spec dirs mirror a node's: $LAB/cdi holds the node's static spec (/etc/cdi's place: the
# expected nodes are read from it) and $LAB/run-cdi, the daemon's --cdi-root, its claim specs (/var/run/cdi's
# place, where NVIDIA's driver writes them); both are containerd's cdi_spec_dirs. The daemon reads the GPUs
# through the fixture's mock NVML (as engines_plugin_containerd.sh's device plugin: the real libnvidia-ml
# cannot initialise without a kernel module, and /proc has no MIG profiles or UUIDs), while its driver files
# are the real packages' (--nvidia-driver-root the real root) and its nodes the spec's dev root: the claim
# specs mount Debian's real driver files.
#
# The cluster around it: tests/kube/apiserver.py serves resource.k8s.io/v1 (the schemas of Debian's
# types.go); tests/dra/kubelet_dra.py is the kubelet's plugin watcher (register), the scheduler (allocate)
# and the kubelet's DRA manager (prepare, unprepare). The flow:
#   1. the daemon publishes the node's devices: gpu-0 and GPU 1's two 2g.12gb MIG devices (GPU 1 itself is
#      in MIG mode, so not published whole), with the manifest's UUIDs;
#   2. a claim allocated gpu-0 and one allocated the MIG device 1:0 (found in the slices by its profile and
#      UUID) are prepared in one NodePrepareResources call, as the kubelet does for one pod's claims: each
#      answers its CDI id k8s.gpu.nvidia.com/claim=<uid>-<device> and has its spec in $LAB/run-cdi;
#   3. a pod per claim through the default handler (runc: CDI needs no runtime class), its CDI id in
#      CreateContainer's CDI_devices: the container loads the real libcuda.so.1 and has exactly the nodes the
#      node spec gives that device (engines_check_gpu), and nothing is left after it (engines_expect_clean);
#   4. SIGTERM: the daemon exits 0, its sockets go, the claim specs stay; with the claims deleted from the
#      API (only the checkpoint knows them), a new daemon registers and answers the same prepare, the specs
#      unchanged; the GPU pod runs once more;
#   5. unprepare: both specs are gone; the daemon and the API stop; no process or mount of containerd is
#      left (engines_containerd_stop_clean).
#   usage: engines_dra_containerd.sh <gpuctk> <gpuctk-fixture> <sid> <gpuctk-dra-plugin> <resource/v1
#          types.go> <the kubelet's pluginregistration api.proto> <the kubelet's DRA v1beta1 api.proto>
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/engines/lib.sh
source "$(dirname "$0")/../engines/lib.sh"
gpuctk=$1
fixture=$2
suite=$3
daemon=$4
types=$5
registration_proto=$6
dra_proto=$7
tests=$(cd "$(dirname "$0")/.." && pwd)
node=e2e-node
e2e_init
start_all=$SECONDS
e2e_needs runc
command -v cc >/dev/null || e2e_skip "no C compiler (cc) to build the images' programs"
engines_python_check
[ -x "$daemon" ] || e2e_fail "no gpuctk-dra-plugin at $daemon"
[ -f "$types" ] || e2e_fail "no resource.k8s.io/v1 types.go at $types (scripts/deps.sh test)"
for proto in "$registration_proto" "$dra_proto"; do
  [ -f "$proto" ] || e2e_fail "no kubelet api.proto at $proto (scripts/deps.sh plugin)"
done
engines_containerd_lab "$gpuctk" "$fixture" "$suite"
case $containerd_version in
  2.*) ;;
  *) e2e_fail "containerd $containerd_version from Debian $suite: this test drives containerd 2.x's CRI (sid)" ;;
esac
# The claim specs' dir beside the static one, before runtime configure: its drop-in carries the CRI table as
# the file has it.
mkdir -p "$LAB/run-cdi"
"$engines_python" "$engines_dir/toml_set.py" "$c/config.toml" plugins.io.containerd.cri.v1.runtime cdi_spec_dirs \
  "[\"$LAB/cdi\", \"$LAB/run-cdi\"]" || e2e_fail "could not add $LAB/run-cdi to containerd's cdi_spec_dirs"
out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" --runtime-path "$shim" --cdi 2>&1) ||
  e2e_fail "runtime configure failed: $out"
"$engines_root/usr/bin/containerd" --config "$c/config.toml" config dump >"$c/config.dump.toml" 2>"$c/dump.err" ||
  e2e_fail "containerd config dump failed: $(cat "$c/dump.err")"
[ "$(engines_toml_get "$c/config.dump.toml" plugins "io.containerd.cri.v1.runtime" enable_cdi)" = true ] ||
  e2e_fail "CDI is not on in containerd's config: $(grep -n cdi "$c/config.dump.toml")"
dirs=$(engines_toml_get "$c/config.dump.toml" plugins "io.containerd.cri.v1.runtime" cdi_spec_dirs)
[ "$dirs" = "[\"$LAB/cdi\", \"$LAB/run-cdi\"]" ] || e2e_fail "containerd's cdi_spec_dirs are $dirs"
engines_containerd_start "$c"
engines_import "$LAB/images/pause.tar" "$LAB/images/probe.tar"
v="containerd $containerd_version"

# The daemon's view of the host, read through --nvml-library: the mock NVML's root.
manifest=$LAB/devices/manifest/host.yaml
mock_driver_root=$(engines_mock_nvml_root "$fixture" dra-host)
nvml=$mock_driver_root/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
[ -f "$nvml" ] || e2e_fail "no mock libnvidia-ml.so.1 at $nvml"
uuid0=$(sed -n '/^  - minor: 0$/,/uuid:/s/^    uuid: //p' "$manifest")
mig0=$(sed -n 's/^ *- {gi: 1, ci: 0, profile: 2g.12gb, uuid: \(MIG-[0-9a-f-]*\),.*/\1/p' "$manifest")
mig1=$(sed -n 's/^ *- {gi: 2, ci: 0, profile: 2g.12gb, uuid: \(MIG-[0-9a-f-]*\),.*/\1/p' "$manifest")
if [ -z "$uuid0" ] || [ -z "$mig0" ] || [ -z "$mig1" ]; then e2e_fail "no GPU 0 UUID or MIG UUIDs in $manifest"; fi
# What each container must see, from the node's spec (cdi generate from /proc): not from the daemon.
gpu0=$(engines_spec_nodes 0)
mig=$(engines_spec_nodes 1:0)
[ "$gpu0" = /dev/nvidia0 ] || e2e_fail "the spec gives nvidia.com/gpu=0 the nodes $gpu0"
caps=/dev/nvidia-caps/nvidia-cap
[ "$mig" = "${caps}147 ${caps}148 /dev/nvidia1" ] || e2e_fail "the spec gives nvidia.com/gpu=1:0 the nodes $mig"

# The API server, with its kubeconfig for the daemon.
api=$LAB/api
"$engines_python" "$tests/kube/apiserver.py" --dir "$api" --resource-types "$types" --node "$node" \
  >"$LAB/apiserver.log" 2>&1 &
api_pid=$!
e2e_cleanup_add "e2e_stop_daemon $api_pid"
for _ in $(seq 300); do
  [ -f "$api/ready" ] && break
  kill -0 "$api_pid" 2>/dev/null || e2e_fail "apiserver.py exited: $(tail -5 "$LAB/apiserver.log")"
  sleep 0.1
done
[ -f "$api/ready" ] || e2e_fail "apiserver.py not ready within 30 s: $(tail -5 "$LAB/apiserver.log")"

# The kubelet's folders, and the daemon as a DaemonSet would run it on this node.
registry=$LAB/kubelet/plugins_registry
plugins=$LAB/kubelet/plugins
endpoint=$plugins/gpu.nvidia.com/dra.sock
mkdir -p "$registry" "$plugins"

# dra_start LIFE: the daemon in the background, its log $LAB/dra-LIFE.log; sets dra_pid and dra_log.
dra_start() {
  dra_log=$LAB/dra-$1.log
  "$daemon" --node-name "$node" --kubeconfig "$api/kubeconfig" --cdi-root "$LAB/run-cdi" \
    --kubelet-registrar-directory-path "$registry" --kubelet-plugins-directory-path "$plugins" \
    --nvidia-driver-root "$driver_root" --dev-root "$dev_root" --device-discovery-strategy nvml \
    --nvml-library "$nvml" --gpuctk-path "$(realpath "$gpuctk")" 2>"$dra_log" &
  dra_pid=$!
  e2e_cleanup_add "e2e_stop_daemon $dra_pid"
}

# dra_stop: SIGTERM to the daemon, which must exit 0 with its sockets gone and say no error.
dra_stop() {
  local status=0
  kill -TERM "$dra_pid"
  e2e_ended "$dra_pid" 20 || e2e_fail "the daemon did not stop on SIGTERM: $(tail -5 "$dra_log")"
  wait "$dra_pid" || status=$?
  [ "$status" = 0 ] || e2e_fail "the daemon exited $status on SIGTERM: $(tail -5 "$dra_log")"
  if [ -n "$(ls -A "$registry")" ] || [ -e "$endpoint" ]; then
    e2e_fail "sockets left after SIGTERM: $(ls -A "$registry") $(ls -A "$plugins/gpu.nvidia.com")"
  fi
  if grep -i 'error' "$dra_log"; then e2e_fail "the daemon logged an error ($dra_log)"; fi
}

# kubelet_dra COMMAND ...: the kubelet's (and the scheduler's) side; prints its one JSON line.
kubelet_dra() {
  local out
  out=$(PYTHONDONTWRITEBYTECODE=1 "$engines_python" "$tests/dra/kubelet_dra.py" --registration-proto \
    "$registration_proto" --dra-proto "$dra_proto" --stubs "$LAB/dra-stubs" "$@" 2>"$LAB/kubelet_dra.err") ||
    e2e_fail "kubelet_dra.py $1 failed: $(cat "$LAB/kubelet_dra.err"); the daemon's log: $(tail -5 "$dra_log")"
  echo "$out"
}

# json_get JSON KEY: the string at KEY of a JSON object.
json_get() {
  "$engines_python" -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

# published: the node's published devices, one "name type uuid profile" line each (profile "-" for a
# whole GPU), sorted, once the pool's slices list 3 devices (30 s at most).
published() {
  PYTHONPATH=$tests/dra "$engines_python" - "$api" "$node" <<'PY'
import sys, time
from dra_api import RESOURCE, Api
api, node = Api(sys.argv[1]), sys.argv[2]
deadline = time.monotonic() + 30
while True:
    slices = api.expect(200, "GET", RESOURCE + "/resourceslices",
                        query={"fieldSelector": f"spec.nodeName={node},spec.driver=gpu.nvidia.com"})["items"]
    devices = [d for s in slices for d in s["spec"].get("devices") or []]
    if len(devices) >= 3 or time.monotonic() > deadline:
        break
    time.sleep(0.05)
attribute = lambda d, key: next(iter((d.get("attributes", {}).get(key) or {"-": "-"}).values()))
print("\n".join(sorted(f"{d['name']} {attribute(d, 'type')} {attribute(d, 'uuid')} {attribute(d, 'profile')}"
                       for d in devices)))
PY
}

# claim NAME DEVICE: a claim of one request "gpu" (DeviceClass gpu.nvidia.com), allocated DEVICE of this
# node's pool by the scheduler; prints its uid.
claim() {
  local made
  made=$(kubelet_dra create-claim --apiserver "$api" --namespace e2e --name "$1" --request gpu)
  kubelet_dra allocate --apiserver "$api" --claim "e2e/$1" --device "$node/$2" >/dev/null
  json_get "$made" uid
}

# want_prepared UID=DEVICE...: NodePrepareResources' answer (as kubelet_dra.py prints it) for these claims,
# each allocated DEVICE by its request "gpu" in this node's pool.
want_prepared() {
  "$engines_python" - "$node" "$@" <<'PY'
import json, sys
node, answer = sys.argv[1], {}
for pair in sys.argv[2:]:
    uid, device = pair.split("=")
    answer[uid] = {"devices": [{"request_names": ["gpu"], "pool_name": node, "device_name": device,
                                "cdi_device_ids": [f"k8s.gpu.nvidia.com/claim={uid}-{device}"]}], "error": ""}
print(json.dumps(answer, sort_keys=True))
PY
}

# delete_claim NAME: the claim leaves the API (a GET of it is 404 then).
delete_claim() {
  PYTHONPATH=$tests/dra "$engines_python" - "$api" "$1" <<'PY'
import sys
from dra_api import Api, ApiError, claim_path
api, path = Api(sys.argv[1]), claim_path("e2e", sys.argv[2])
try:
    api.expect(200, "DELETE", path)
    api.expect(404, "GET", path)
except ApiError as e:
    sys.exit(f"delete_claim: {e}")
PY
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# daemon_us: the microseconds the daemon's last NodePrepareResources took, as its log says (the round
# trips measured here also hold kubelet_dra.py's start).
daemon_us() {
  sed -n 's/^gpuctk-dra-plugin: prepared claim .* devices (\([0-9]*\) us for the call)$/\1/p' "$dra_log" | tail -1
}

setup_s=$((SECONDS - start_all))

# 1. The daemon's first life: registered, its devices published.
start_ms=$(now_ms)
dra_start first
info=$(kubelet_dra register --registry "$registry")
if [ "$(json_get "$info" endpoint)" != "$endpoint" ] || [ "$(json_get "$info" chosen)" != v1 ]; then
  e2e_fail "registration: $info"
fi
devices=$(published)
slices_ms=$(($(now_ms) - start_ms))
mig_name=$(awk -v u="$mig0" '$2 == "mig" && $3 == u && $4 == "2g.12gb" { print $1 }' <<<"$devices")
mig1_name=$(awk -v u="$mig1" '$2 == "mig" && $3 == u && $4 == "2g.12gb" { print $1 }' <<<"$devices")
want="gpu-0 gpu $uuid0 -"$'\n'"$mig_name mig $mig0 2g.12gb"$'\n'"$mig1_name mig $mig1 2g.12gb"
if [ -z "$mig_name" ] || [ -z "$mig1_name" ] || [ "$devices" != "$(LC_ALL=C sort <<<"$want")" ]; then
  e2e_fail "the daemon published:
$devices
want gpu-0 ($uuid0) and GPU 1's two 2g.12gb MIG devices ($mig0, $mig1)"
fi
echo "ok: published gpu-0 and the MIG devices $mig_name, $mig1_name in ${slices_ms} ms from the daemon's start"

# 2. Two claims, prepared in one call.
gpu_uid=$(claim one-gpu gpu-0)
mig_uid=$(claim one-mig "$mig_name")
claims=(--claim "e2e/one-gpu/$gpu_uid" --claim "e2e/one-mig/$mig_uid")
t=$(now_ms)
prepared=$(kubelet_dra prepare --endpoint "$endpoint" "${claims[@]}")
prepare_ms=$(($(now_ms) - t))
prepare_us=$(daemon_us)
want=$(want_prepared "$gpu_uid=gpu-0" "$mig_uid=$mig_name")
[ "$prepared" = "$want" ] || e2e_fail "NodePrepareResources answered:
$prepared
want:
$want"
gpu_cdi=k8s.gpu.nvidia.com/claim=$gpu_uid-gpu-0
mig_cdi=k8s.gpu.nvidia.com/claim=$mig_uid-$mig_name
specs=("$LAB/run-cdi/k8s.gpu.nvidia.com-claim_$gpu_uid.yaml" "$LAB/run-cdi/k8s.gpu.nvidia.com-claim_$mig_uid.yaml")
for spec in "${specs[@]}"; do
  [ -f "$spec" ] || e2e_fail "no claim spec $spec: $(ls "$LAB/run-cdi")"
done
sums=$(sha256sum "${specs[@]}")
echo "ok: prepared $gpu_cdi and $mig_cdi in ${prepare_ms} ms (one NodePrepareResources; the daemon's part ${prepare_us} us)"

# 3. A pod per claim, its CDI id in CDI_devices.
start_pods=$SECONDS
out=$(engines_pod dra-gpu --cdi-device "$gpu_cdi" 2>&1) || e2e_fail "the GPU claim's pod failed: $out"
engines_expect_clean "the GPU claim's pod"
engines_check_gpu "$out" "$v, default handler, claim of gpu-0 ($uuid0): $gpu_cdi" "$gpu0"
out=$(engines_pod dra-mig --cdi-device "$mig_cdi" 2>&1) || e2e_fail "the MIG claim's pod failed: $out"
engines_expect_clean "the MIG claim's pod"
engines_check_gpu "$out" "$v, default handler, claim of MIG 1:0 ($mig0, 2g.12gb): $mig_cdi" "$mig"
pods_s=$((SECONDS - start_pods))

# 4. A restart keeps the prepared claims.
dra_stop
[ "$(sha256sum "${specs[@]}")" = "$sums" ] || e2e_fail "the claim specs changed when the daemon stopped"
# The claims leave the API: only the checkpoint can answer now (a fetch of either would find nothing).
for name in one-gpu one-mig; do
  delete_claim "$name" || e2e_fail "could not delete the claim e2e/$name"
done
t=$(now_ms)
dra_start second
kubelet_dra register --registry "$registry" >/dev/null
again=$(kubelet_dra prepare --endpoint "$endpoint" "${claims[@]}")
restart_ms=$(($(now_ms) - t))
again_us=$(daemon_us)
[ "$again" = "$want" ] || e2e_fail "after the restart NodePrepareResources answered:
$again
want:
$want"
[ "$(sha256sum "${specs[@]}")" = "$sums" ] || e2e_fail "the claim specs changed across the restart"
echo "ok: restarted, registered and prepared the same claims again in ${restart_ms} ms (the daemon's part ${again_us} us)"
start_again=$SECONDS
out=$(engines_pod dra-gpu-again --cdi-device "$gpu_cdi" 2>&1) || e2e_fail "the GPU claim's pod after the restart failed: $out"
engines_expect_clean "the GPU claim's pod after the restart"
engines_check_gpu "$out" "$v, default handler, after the daemon's restart: $gpu_cdi" "$gpu0"
pods_s=$((pods_s + SECONDS - start_again))

# 5. Unprepared: the specs go; then everything stops.
t=$(now_ms)
unprepared=$(kubelet_dra unprepare --endpoint "$endpoint" "${claims[@]}")
unprepare_ms=$(($(now_ms) - t))
want=$("$engines_python" -c 'import json, sys; print(json.dumps({u: {"error": ""} for u in sys.argv[1:]}, sort_keys=True))' \
  "$gpu_uid" "$mig_uid")
[ "$unprepared" = "$want" ] || e2e_fail "NodeUnprepareResources answered $unprepared, want $want"
for spec in "${specs[@]}"; do
  [ ! -e "$spec" ] || e2e_fail "unprepare left the claim spec $spec"
done
echo "ok: unprepared both claims in ${unprepare_ms} ms; their specs are gone"
dra_stop
e2e_stop_daemon "$api_pid"
if grep -i 'error' "$LAB/gpuctk.log" 2>/dev/null; then e2e_fail "gpuctk logged an error"; fi

engines_containerd_stop_clean
echo "time: setup ${setup_s} s, start to slices ${slices_ms} ms, prepare ${prepare_ms} ms (daemon ${prepare_us} us), restart to prepared ${restart_ms} ms, unprepare ${unprepare_ms} ms, 3 pods ${pods_s} s, total $((SECONDS - start_all)) s"
echo "PASS: $v through CRI's CDI_devices, the default handler: gpuctk-dra-plugin's claims for GPU 0 and the MIG device 1:0 (2g.12gb) prepared in one call, each container with the real libcuda.so.1 and exactly its device's nodes; a restart kept the prepared claims; unprepare removed their specs; nothing left behind"
