#!/usr/bin/env bash
# deploy/kubernetes: build-image.sh builds the installer image offline; its OCI config runs /gpuctk, its
# one layer holds gpuctk and exactly its libraries and loader, and /gpuctk --version runs in it (runc on
# the unpacked layer: the image is complete without the host's /lib). The manifests parse and name what
# the installer needs: RuntimeClass handler nvidia, the DaemonSet's privileged pod, host root and args.
# Given PLUGIN (gpuctk-device-plugin; ctest plugin.image), the image is built with it (build-image.sh
# --device-plugin): /gpuctk-device-plugin and its libraries are in the layer, nothing else is added, it
# runs --version in the image's root alone, and gpuctk-device-plugin.yaml runs that path. Given EXPORTER
# (gpuctk-exporter; ctest exporter.image, PLUGIN then "-": none), the same for build-image.sh --exporter and
# gpuctk-exporter.yaml, whose pod must read only: no privilege, every capability dropped, a read-only root.
# Given MPS (gpuctk-mps-control-daemon; ctest plugin.image), the same for build-image.sh
# --mps-control-daemon and the MPS DaemonSet of gpuctk-device-plugin.yaml.
#   install_image.sh GPUCTK GPUCTK_FIXTURE [PLUGIN [EXPORTER [MPS]]]
source "$(dirname "$0")/lib.sh"
gpuctk=$1
plugin=${3:-}
[ "$plugin" != - ] || plugin=
exporter=${4:-}
[ "$exporter" != - ] || exporter=
mps=${5:-}
with_plugin=()
[ -z "$plugin" ] || with_plugin=(--device-plugin "$plugin")
[ -z "$mps" ] || with_plugin+=(--mps-control-daemon "$mps")
[ -z "$exporter" ] || with_plugin+=(--exporter "$exporter")
deploy=$(cd "$(dirname "$0")/../../deploy/kubernetes" && pwd)
e2e_init
e2e_needs "buildah (scripts/deps.sh test)" python3

# podman's and buildah's storage: build-image.sh must not touch it (a fresh machine has none at all).
containers_storage() {
  if [ -e /var/lib/containers ]; then find /var/lib/containers | sort; else echo "no /var/lib/containers"; fi
}
containers_storage >"$LAB/containers.before"
bash "$deploy/build-image.sh" "${with_plugin[@]}" "$gpuctk" "$LAB/image.tar" localhost/gpuctk-installer:test >"$LAB/build.out" 2>&1 ||
  e2e_fail "build-image.sh failed: $(cat "$LAB/build.out")"
containers_storage | cmp -s - "$LAB/containers.before" ||
  e2e_fail "build-image.sh changed /var/lib/containers"
mkdir "$LAB/oci"
tar -xf "$LAB/image.tar" -C "$LAB/oci"
# build-image.sh prints the reference the DaemonSet takes: the name without its tag, by manifest digest.
digest=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$LAB/oci/index.json")
grep -qx "localhost/gpuctk-installer@$digest" "$LAB/build.out" ||
  e2e_fail "build-image.sh did not print localhost/gpuctk-installer@$digest: $(cat "$LAB/build.out")"

# The OCI layout: index -> manifest -> config and layers (python3's json only; no skopeo/umoci needed).
python3 - "$LAB/oci" "$LAB/layers" "$("$gpuctk" --version)" >"$LAB/oci.out" <<'PY' || e2e_fail "OCI layout: $(cat "$LAB/oci.out")"
import json, sys, os
root, layers = sys.argv[1], sys.argv[2]
blob = lambda d: os.path.join(root, "blobs", *d.split(":"))
index = json.load(open(os.path.join(root, "index.json")))
m = index["manifests"][0]
assert m["annotations"]["org.opencontainers.image.ref.name"] == "localhost/gpuctk-installer:test", m
manifest = json.load(open(blob(m["digest"])))
config = json.load(open(blob(manifest["config"]["digest"])))
assert config["config"]["Entrypoint"] == ["/gpuctk"], config["config"]
labels = config["config"]["Labels"]
version = sys.argv[3].split()  # "gpuctk 0.1.0 (commit 0123456789ab)"
assert labels["org.opencontainers.image.version"] == version[1], labels
assert labels["org.opencontainers.image.revision"] == version[3].rstrip(")"), labels
assert config["os"] == "linux", config["os"]
with open(layers, "w") as out:
    for layer in manifest["layers"]:
        out.write(blob(layer["digest"]) + "\n")
print("entrypoint", config["config"]["Entrypoint"])
PY

mkdir -p "$LAB/bundle/rootfs"
while read -r layer; do
  tar -xf "$layer" -C "$LAB/bundle/rootfs"
done <"$LAB/layers"
(cd "$LAB/bundle/rootfs" && find . ! -type d | sort) >"$LAB/files"
binaries=("$gpuctk")
[ -z "$plugin" ] || binaries+=("$plugin")
[ -z "$mps" ] || binaries+=("$mps")
[ -z "$exporter" ] || binaries+=("$exporter")
# gpuctk-device-plugin also loads libcurl.so.4 (per-node configs), which its ldd does not list: it and its
# libraries are in the image too.
libdir=$(dirname "$(ldd "$gpuctk" | sed -nE 's/.*libc\.so\.6 => (\/[^ ]+) .*/\1/p')")
[ -z "$plugin" ] || binaries+=("$libdir/libcurl.so.4")
mapfile -t libs < <(for binary in "${binaries[@]}"; do
  [ "${binary##*/}" != libcurl.so.4 ] || echo "$binary"
  ldd "$binary" | sed -nE 's/.*=> (\/[^ ]+) .*/\1/p; s/^[[:space:]]*(\/[^ ]+) \(0x.*/\1/p'
done | sort -u)
in_image=(/gpuctk)
[ -z "$plugin" ] || in_image+=(/gpuctk-device-plugin)
[ -z "$mps" ] || in_image+=(/gpuctk-mps-control-daemon)
[ -z "$exporter" ] || in_image+=(/gpuctk-exporter)
for want in "${in_image[@]}" "${libs[@]}"; do
  grep -qx ".$want" "$LAB/files" || e2e_fail "image lacks $want; it has: $(tr '\n' ' ' <"$LAB/files")"
done
grep -q '/bin/sh$' "$LAB/files" && e2e_fail "the image has a shell"
# Exactly gpuctk, what ldd names (the release binary: glibc and the loader; libstdc++ is linked in) and the
# glibc stubs build-image.sh adds for the node's libnvidia-ml.so.1.
expected=(-e ./gpuctk -e '.*/lib\(pthread\|dl\|rt\)\.so\.[0-9]')
[ -z "$plugin" ] || expected+=(-e ./gpuctk-device-plugin)
[ -z "$mps" ] || expected+=(-e ./gpuctk-mps-control-daemon)
[ -z "$exporter" ] || expected+=(-e ./gpuctk-exporter)
for lib in "${libs[@]}"; do
  expected+=(-e ".$lib")
done
unexpected=$(grep -v -x "${expected[@]}" "$LAB/files" || true)
[ -z "$unexpected" ] || e2e_fail "unexpected files in the image: $unexpected"

# Each daemon's --version in the image's root alone (read-only): the same line as the binary's outside.
e2e_needs "runc (image checked, not run)"
(cd "$LAB/bundle" && runc spec)
id=gpuctk-image-$$
# in_image NAME BINARY: runs /NAME --version in the image; its output must be BINARY --version's.
in_image() {
  local name=$1 binary=$2 out=$LAB/$1-version.out
  python3 - "$LAB/bundle/config.json" "/$name" <<'PY'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["process"]["args"] = [sys.argv[2], "--version"]
spec["process"]["terminal"] = False
spec["root"] = {"path": "rootfs", "readonly": True}
json.dump(spec, open(path, "w"))
PY
  e2e_cleanup_add "runc delete -f $id-$name"
  runc run --bundle "$LAB/bundle" "$id-$name" >"$out" 2>&1 </dev/null ||
    e2e_fail "/$name --version in the image failed: $(cat "$out")"
  [ "$(cat "$out")" = "$("$binary" --version)" ] || e2e_fail "/$name --version in the image: $(cat "$out")"
}
in_image gpuctk "$gpuctk"
if [ -n "$plugin" ]; then
  in_image gpuctk-device-plugin "$plugin"
  # Its --version names the libcurl it loads (per-node configs): the image must hold it and its libraries.
  grep -Eq ', libcurl [0-9][^ ]*\)$' "$LAB/gpuctk-device-plugin-version.out" ||
    e2e_fail "/gpuctk-device-plugin --version names no libcurl: $(cat "$LAB/gpuctk-device-plugin-version.out")"
fi
[ -z "$mps" ] || in_image gpuctk-mps-control-daemon "$mps"
[ -z "$exporter" ] || in_image gpuctk-exporter "$exporter"

# The manifests.
python3 -c 'import yaml' 2>/dev/null || e2e_skip "python3-yaml is not installed (image checked, manifests not)"
python3 - "$deploy" "$plugin" "$exporter" "$mps" <<'PY' || e2e_fail "manifests"
import re, sys, yaml
deploy = sys.argv[1]
if sys.argv[3]:
    # The exporter's DaemonSet runs the path build-image.sh --exporter puts it at, reads only, and reaches
    # the GPUs through gpuctk's runtime class (every GPU, the utility libraries).
    docs = list(yaml.safe_load_all(open(deploy + "/gpuctk-exporter.yaml")))
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Namespace", "ServiceAccount", "DaemonSet", "Service", "ServiceMonitor"], kinds
    pod = docs[2]["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia", pod.get("runtimeClassName")
    assert "hostPID" not in pod and "hostNetwork" not in pod, pod
    (c,) = pod["containers"]
    assert c["command"] == ["/gpuctk-exporter"] and "-k" in c["args"], (c["command"], c["args"])
    assert re.fullmatch(r"localhost/gpuctk-installer@sha256:0{64}", c["image"]), c["image"]
    assert c["imagePullPolicy"] == "Never", c["imagePullPolicy"]
    sc = c["securityContext"]
    assert "privileged" not in sc and sc["allowPrivilegeEscalation"] is False, sc
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"] == {"drop": ["ALL"]}, sc
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}
    assert env == {"NODE_NAME": {"fieldRef": {"fieldPath": "spec.nodeName"}}, "NVIDIA_VISIBLE_DEVICES": "all",
                   "NVIDIA_DRIVER_CAPABILITIES": "utility"}, env
    assert c["volumeMounts"] == [{"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources",
                                  "readOnly": True}], c["volumeMounts"]
    (volume,) = pod["volumes"]
    assert volume["hostPath"]["path"] == "/var/lib/kubelet/pod-resources", volume
    assert c["ports"] == [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}], c["ports"]
    assert docs[3]["spec"]["ports"][0]["port"] == 9400 and docs[3]["spec"]["ports"][0]["name"] == "metrics"
    (endpoint,) = docs[4]["spec"]["endpoints"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics", endpoint
    selector = docs[2]["spec"]["selector"]["matchLabels"]
    assert docs[3]["spec"]["selector"] == selector and docs[4]["spec"]["selector"]["matchLabels"] == selector
    assert docs[3]["metadata"]["labels"] == selector
if sys.argv[2]:
    # The device plugin's DaemonSet runs the path build-image.sh --device-plugin puts it at.
    docs = list(yaml.safe_load_all(open(deploy + "/gpuctk-device-plugin.yaml")))
    sets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DaemonSet"}
    assert sorted(sets) == ["gpuctk-device-plugin", "gpuctk-mps-control-daemon"], sorted(sets)
    ds = sets["gpuctk-device-plugin"]
    commands = {c["name"]: c.get("command") for c in ds["spec"]["template"]["spec"]["containers"]}
    assert commands["device-plugin"] == ["/gpuctk-device-plugin"], commands
if sys.argv[2]:
    # Per-node configs: the plugin may read nodes and nothing else, and the "default" the fallback picks.
    docs = list(yaml.safe_load_all(open(deploy + "/per-node-configs.yaml")))
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}], role
    (binding,) = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    (account,) = [d for d in docs if d["kind"] == "ServiceAccount"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": "gpuctk"}], binding
    (configs,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert "default" in configs["data"], sorted(configs["data"])
if sys.argv[4]:
    # The MPS DaemonSet runs the path build-image.sh --mps-control-daemon puts it at, only where the labels
    # say MPS is configured, with the MPS root at its host path (what Allocate names) and the config file.
    docs = list(yaml.safe_load_all(open(deploy + "/gpuctk-device-plugin.yaml")))
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "gpuctk-mps-control-daemon"]
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/mps.capable": "true"}, pod.get("nodeSelector")
    assert pod["runtimeClassName"] == "nvidia", pod.get("runtimeClassName")
    (c,) = pod["containers"]
    assert c["command"] == ["/gpuctk-mps-control-daemon"], c["command"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["MPS_ROOT"] == "/run/nvidia/mps" and env["CONFIG_FILE"] == "/config/config.yaml", env
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["mps-root"]["mountPath"] == "/run/nvidia/mps", mounts
    assert mounts["mps-root"]["mountPropagation"] == "Bidirectional", mounts
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["mps-root"]["hostPath"]["path"] == "/run/nvidia/mps", volumes
docs = list(yaml.safe_load_all(open(deploy + "/gpuctk-installer.yaml")))
kinds = [d["kind"] for d in docs]
assert kinds == ["Namespace", "ServiceAccount", "DaemonSet"], kinds
ds = docs[2]["spec"]["template"]["spec"]
assert ds["hostPID"] is False, ds.get("hostPID")
assert "nodeSelector" not in ds, ds["nodeSelector"]
# Nodes with an NVIDIA GPU by labels that exist before gpuctk runs (NFD's PCI labels), or the GPU
# Operator's nvidia.com/gpu.present (which gpuctk labels writes): any one of them.
terms = ds["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
keys = [t["matchExpressions"] for t in terms]
assert keys == [[{"key": k, "operator": "In", "values": ["true"]}] for k in (
    "feature.node.kubernetes.io/pci-0302_10de.present", "feature.node.kubernetes.io/pci-0300_10de.present",
    "feature.node.kubernetes.io/pci-10de.present", "nvidia.com/gpu.present")], keys
assert ds["terminationGracePeriodSeconds"] >= 30
install, labels = ds["containers"]
volumes = {v["name"]: v for v in ds["volumes"]}
for c in (install, labels):
    assert c["securityContext"]["privileged"] is True
    # A privileged pod with the node's /: its image by digest (a placeholder that matches nothing until
    # the operator sets it), never pulled (Never: nothing answering for localhost can substitute one).
    assert re.fullmatch(r"localhost/gpuctk-installer@sha256:0{64}", c["image"]), c["image"]
    assert c["imagePullPolicy"] == "Never", c["imagePullPolicy"]
    assert c["resources"]["limits"]["memory"], c["resources"]
    for mount in c["volumeMounts"]:
        assert mount["name"] in volumes, mount
env = lambda c: {e["name"]: e["value"] for e in c["env"]}
# Every option from GPUCTK_INSTALL_* / GPUCTK_LABELS_* (gpuctk's environment variables).
assert install["args"] == ["install"], install["args"]
assert env(install) == {"GPUCTK_INSTALL_HOST_ROOT": "/host", "GPUCTK_INSTALL_RUNTIME": "containerd",
                        "GPUCTK_INSTALL_WATCH": "60", "GPUCTK_INSTALL_UNINSTALL_ON_EXIT": "true"}, env(install)
(mount,) = install["volumeMounts"]
assert mount == {"name": "host-root", "mountPath": "/host"}, mount
assert volumes["host-root"]["hostPath"] == {"path": "/", "type": "Directory"}, volumes["host-root"]
assert labels["args"] == ["labels"], labels["args"]
assert env(labels) == {"GPUCTK_LABELS_DRIVER_ROOT": "/host", "GPUCTK_LABELS_DEV_ROOT": "/host",
                       "GPUCTK_LABELS_OUTPUT": "/features.d/gpuctk", "GPUCTK_LABELS_WATCH": "60"}, env(labels)
assert labels["volumeMounts"] == [{"name": "host-root", "mountPath": "/host", "readOnly": True},
                                  {"name": "nfd-features", "mountPath": "/features.d"}], labels["volumeMounts"]
assert volumes["nfd-features"]["hostPath"] == {
    "path": "/etc/kubernetes/node-feature-discovery/features.d", "type": "DirectoryOrCreate"}, volumes
(rc,) = list(yaml.safe_load_all(open(deploy + "/runtimeclass.yaml")))
assert rc["kind"] == "RuntimeClass" and rc["handler"] == "nvidia" and rc["metadata"]["name"] == "nvidia", rc
PY
echo "PASS: installer image ($(du -h "$LAB/image.tar" | cut -f1)): $(tr '\n' ' ' <"$LAB/files")"
