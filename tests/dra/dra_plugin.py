#!/usr/bin/env python3
"""gpuctk-dra-plugin as a node sees it (test code): the daemon on a fixture host with the mock NVML, the
strict stand-in API server (tests/kube/apiserver.py with the resource.k8s.io/v1 kinds of Debian's
types.go) and the kubelet's side (kubelet_dra.py: the plugin watcher, NodePrepareResources and
NodeUnprepareResources as the kubelet calls them, the kubelet's wipe of its node's slices, and the
scheduler's allocation).

    dra_plugin.py DAEMON FIXTURE_TOOL TYPES_GO REGISTRATION_PROTO DRA_PROTO STUBS_DIR GPUCTK

Checks, each printed "ok <name>":
  usage          no --node-name: exit 2 and one line; --help exits 0
  manifests      deploy/kubernetes/gpuctk-dra-plugin.yaml's DeviceClasses and examples/dra-claims.yaml's
                 claims (the template's as a claim) are accepted by the stand-in's resource.k8s.io/v1
                 validation; every variable the DaemonSet sets is one the daemon reads (its --help)
  register       the plugin watcher's GetInfo (DRAPlugin, gpu.nvidia.com, the DRA socket, v1 and v1beta1);
                 the kubelet chooses v1
  slices         the 8-GPU host's devices (4 GPUs whole, 16 MIG devices) in one ResourceSlice of the node's pool, owned by the Node, with
                 NVIDIA's attribute names; the time from the start to the slices is printed (bench/ measures it)
  prepare        a claim allocated gpu-2 is prepared: its CDI id, a claim spec in the CDI root with the GPU's
                 node and the driver's files; prepared again, the same answer; in the same call a claim
                 allocated on another node's pool gets an error for itself alone
  restart        SIGTERM removes the sockets and keeps the spec; a new daemon registers again and answers
                 the prepared claim from its checkpoint; unprepare removes the spec; an unknown claim
                 unprepares without error
  wipe           the kubelet's wipe of the node's slices at its start: published again
  xid            Xid 13 (NVIDIA's skip list) taints gpu-3 with effect None; Xid 79 on GPU 3 then taints it
                 gpu.nvidia.com/xid=79:NoSchedule at a higher pool generation, and the scheduler refuses it;
                 SIGHUP (the operator reset the GPU) clears it
  mig            the MIG devices of the GPUs in MIG mode published with their profile and parent, a claim
                 of one prepared with the MIG device's capability nodes
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
sys.path.insert(0, HERE)
from daemon_test import TIMEOUT, Daemon, check, host_gpus, import_yaml, main as run_main  # noqa: E402
from daemon_test import materialise  # noqa: E402
from standins_test import ApiServer, answer_of, run_kubelet  # noqa: E402

from dra_api import RESOURCE  # noqa: E402

NODE = "node-a"
SLICES = RESOURCE + "/resourceslices"


class Lab:
    """One fixture host, its kubelet folders, CDI root and the daemon's command line."""

    def __init__(self, root, name, host, args):
        self.dir = os.path.join(root, name)
        os.mkdir(self.dir)
        self.driver_root, self.dev_root = materialise(args.fixture, host, os.path.join(self.dir, "host"))
        self.registry = os.path.join(self.dir, "plugins_registry")
        self.plugins = os.path.join(self.dir, "plugins")
        self.cdi = os.path.join(self.dir, "cdi")
        for folder in (self.registry, self.plugins):
            os.mkdir(folder)
        self.events = os.path.join(self.dir, "nvml-events")
        os.mkfifo(self.events)
        self.env = dict(os.environ, GPUCTK_MOCK_NVML_EVENTS=self.events)
        self.command = [args.daemon, "--node-name", NODE, "--kubeconfig", os.path.join(args.api.dir, "kubeconfig"),
                        "--cdi-root", self.cdi, "--kubelet-registrar-directory-path", self.registry,
                        "--kubelet-plugins-directory-path", self.plugins, "--nvidia-driver-root",
                        self.driver_root, "--dev-root", self.dev_root, "--gpuctk-path", args.gpuctk]
        self.started = 0.0

    def start(self, name):
        self.started = time.monotonic()
        return Daemon(self.command, os.path.join(self.dir, f"{name}.log"), self.env, name=f"the daemon ({name})")

    def sockets(self):
        return sorted(os.listdir(self.registry)) + sorted(
            os.path.join(d, f) for d in os.listdir(self.plugins) for f in os.listdir(os.path.join(self.plugins, d))
            if f.endswith(".sock"))

    def xid(self, uuid, xid):
        with open(self.events, "w", encoding="utf-8") as fifo:
            fifo.write(f"xid\tuuid={uuid}\txid={xid}\n")


class Args:
    def __init__(self, argv):
        (self.daemon, self.fixture, self.types, registration, dra, stubs, self.gpuctk) = argv[1:]
        self.stubs = (registration, dra, stubs)
        self.api = None
        self.devices = 0


def kubelet(args, *command):
    return answer_of(run_kubelet(args.stubs, *command), command[0])


def slices(args):
    return args.api.api.expect(200, "GET", SLICES, query={"fieldSelector": f"spec.nodeName={NODE}"})["items"]


def wait_slices(args, what, ready):
    """The node's slices once `ready(slices)` holds, within TIMEOUT seconds."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = slices(args)
        if ready(found):
            return found
        check(time.monotonic() < deadline, f"{what}: slices {json.dumps(found)[:2000]}")
        time.sleep(0.05)


def devices_of(found):
    return {d["name"]: d for s in found for d in s["spec"].get("devices", [])}


def claim(args, name, device):
    uid = kubelet(args, "create-claim", "--apiserver", args.api.dir, "--namespace", "ns", "--name", name,
                  "--request", "gpu")["uid"]
    kubelet(args, "allocate", "--apiserver", args.api.dir, "--claim", f"ns/{name}", "--device", f"{NODE}/{device}")
    return f"ns/{name}/{uid}", uid


def prepare(args, lab, *claims, command="prepare"):
    endpoint = os.path.join(lab.plugins, "gpu.nvidia.com", "dra.sock")
    options = [x for c in claims for x in ("--claim", c)]
    return kubelet(args, command, "--endpoint", endpoint, "--version", "v1", *options)


def check_usage(lab):
    out = subprocess.run(lab.command[:1] + ["--cdi-root", lab.cdi], capture_output=True, text=True, timeout=TIMEOUT,
                         env={"PATH": os.environ.get("PATH", "")}, check=False)
    check(out.returncode == 2 and out.stderr.count("\n") == 1 and "--node-name" in out.stderr,
          f"usage: exit {out.returncode}, stderr {out.stderr!r}")
    out = subprocess.run(lab.command[:1] + ["--help"], capture_output=True, text=True, timeout=TIMEOUT, check=False)
    check(out.returncode == 0 and "--kubelet-plugins-directory-path" in out.stdout, f"--help: {out.returncode}")
    print("ok usage")


def check_manifests(args, lab):
    yaml = import_yaml()
    deploy = os.path.join(os.path.dirname(os.path.dirname(HERE)), "deploy", "kubernetes")
    docs = [d for name in ("gpuctk-dra-plugin.yaml", os.path.join("examples", "dra-claims.yaml"))
            for d in yaml.safe_load_all(open(os.path.join(deploy, name), encoding="utf-8")) if d]
    api = args.api.api
    classes = [d for d in docs if d["kind"] == "DeviceClass"]
    check(sorted(d["metadata"]["name"] for d in classes) == ["gpu.nvidia.com", "mig.nvidia.com"],
          f"manifests: DeviceClasses {[d['metadata']['name'] for d in classes]}")
    for d in classes:
        api.expect(201, "POST", RESOURCE + "/deviceclasses", body=d)
    claims = [d for d in docs if d["kind"] == "ResourceClaim"]
    claims += [{"apiVersion": d["apiVersion"], "kind": "ResourceClaim",
                "metadata": {"name": "from-" + d["metadata"]["name"]}, "spec": d["spec"]["spec"]}
               for d in docs if d["kind"] == "ResourceClaimTemplate"]
    check(len(claims) == 2, f"manifests: {len(claims)} claims")
    for d in claims:
        api.expect(201, "POST", RESOURCE + "/namespaces/manifests/resourceclaims",
                   body=dict(d, metadata={"name": d["metadata"]["name"]}))
    daemonset = next(d for d in docs if d["kind"] == "DaemonSet")
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    out = subprocess.run(lab.command[:1] + ["--help"], capture_output=True, text=True, timeout=TIMEOUT, check=False)
    read = set(re.findall(r"\(Env:([A-Z_]+)\)", out.stdout))
    unknown = [e["name"] for e in container.get("env", []) if e["name"] not in read]
    check(container["command"] == ["/gpuctk-dra-plugin"] and not unknown,
          f"manifests: the DaemonSet sets variables the daemon does not read: {unknown}")
    print("ok manifests")


def check_register(args, lab):
    info = kubelet(args, "register", "--registry", lab.registry)
    want = {"name": "gpu.nvidia.com", "endpoint": os.path.join(lab.plugins, "gpu.nvidia.com", "dra.sock"),
            "versions": ["v1.DRAPlugin", "v1beta1.DRAPlugin"], "chosen": "v1"}
    check(info == want, f"register: {info}, not {want}")
    print("ok register")


def expected_devices(gpus):
    """How many devices the host publishes: each GPU whole, or its MIG devices when it is in MIG mode."""
    return sum(len(g["mig"].get("devices", [])) if g.get("mig", {}).get("mode") == "enabled" else 1 for g in gpus)


def check_slices(args, lab, gpus):
    want = expected_devices(gpus)
    found = wait_slices(args, "slices", lambda s: len(devices_of(s)) == want)
    took = time.monotonic() - lab.started
    node = args.api.api.expect(200, "GET", f"/api/v1/nodes/{NODE}")
    check(len(found) == 1, f"slices: {len(found)} slices")
    spec, meta = found[0]["spec"], found[0]["metadata"]
    check(spec["driver"] == "gpu.nvidia.com" and spec["nodeName"] == NODE and spec["pool"]["name"] == NODE and
          spec["pool"]["resourceSliceCount"] == 1, f"slices: spec {json.dumps(spec)[:400]}")
    owners = meta.get("ownerReferences", [])
    check([(o["kind"], o["name"], o["uid"]) for o in owners] == [("Node", NODE, node["metadata"]["uid"])],
          f"slices: owners {owners}")
    devices = devices_of(found)
    whole = [f"gpu-{g['minor']}" for g in gpus if g.get("mig", {}).get("mode") != "enabled"]
    check(sorted(n for n in devices if "-mig-" not in n) == whole, f"slices: devices {sorted(devices)}")
    attributes = devices["gpu-2"]["attributes"]
    check(attributes["type"] == {"string": "gpu"} and attributes["uuid"] == {"string": gpus[2]["uuid"]} and
          "version" in attributes["driverVersion"] and "string" in attributes["productName"],
          f"slices: gpu-2's attributes {attributes}")
    print(f"ok slices ({took * 1000:.0f} ms from the start to {want} devices of {len(gpus)} GPUs published)")
    return spec["pool"]["generation"]


def check_prepare(args, lab, gpus):
    ref, uid = claim(args, "one-gpu", "gpu-2")
    other = kubelet(args, "create-claim", "--apiserver", args.api.dir, "--namespace", "ns", "--name", "elsewhere",
                    "--request", "gpu")["uid"]
    # The other claim's allocation names another node's pool: the scheduler of this test never does, so its
    # status is written directly.
    status = {"status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-b", "device": "gpu-0"}]}}}}
    args.api.api.expect(200, "PATCH", RESOURCE + "/namespaces/ns/resourceclaims/elsewhere/status", body=status,
                        content_type="application/merge-patch+json")
    answer = prepare(args, lab, ref, f"ns/elsewhere/{other}")
    cdi_id = f"k8s.gpu.nvidia.com/claim={uid}-gpu-2"
    want = {"devices": [{"request_names": ["gpu"], "pool_name": NODE, "device_name": "gpu-2",
                         "cdi_device_ids": [cdi_id]}], "error": ""}
    check(answer.get(uid) == want, f"prepare: {answer.get(uid)}, not {want}")
    check(answer.get(other, {}).get("error") and not answer[other].get("devices"),
          f"prepare: the other node's claim answered {answer.get(other)}")
    spec_path = os.path.join(lab.cdi, f"k8s.gpu.nvidia.com-claim_{uid}.yaml")
    spec = import_yaml().safe_load(open(spec_path, encoding="utf-8"))
    check(spec["kind"] == "k8s.gpu.nvidia.com/claim" and [d["name"] for d in spec["devices"]] == [f"{uid}-gpu-2"],
          f"prepare: spec {spec_path}: kind {spec['kind']}, devices {[d['name'] for d in spec['devices']]}")
    nodes = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
    gpu_nodes = [n for n in nodes if re.fullmatch(r"/dev/nvidia[0-9]+", n)]
    check(gpu_nodes == ["/dev/nvidia2"], f"prepare: the device's nodes {nodes}")
    mounts = [m["containerPath"] for m in spec["containerEdits"].get("mounts", [])]
    check(any(p.endswith("/libcuda.so." + spec_driver_version(spec)) for p in mounts),
          f"prepare: no libcuda among the spec's mounts {mounts}")
    again = prepare(args, lab, ref)
    check(again == {uid: want}, f"prepare again: {again}")
    print("ok prepare")
    return ref, uid, want, spec_path


def spec_driver_version(spec):
    for m in spec["containerEdits"].get("mounts", []):
        name = os.path.basename(m["containerPath"])
        if name.startswith("libnvidia-ml.so.") and name.count(".") > 2:
            return name[len("libnvidia-ml.so."):]
    return "?"


def check_restart(args, lab, daemon, prepared):
    ref, uid, want, spec_path = prepared
    daemon.process.send_signal(signal.SIGTERM)
    check(daemon.wait("restart: SIGTERM") == 0, "restart: exit status on SIGTERM")
    check(lab.sockets() == [], f"restart: sockets left {lab.sockets()}")
    check(os.path.exists(spec_path), "restart: the claim spec went with the daemon")
    daemon.close()
    daemon = lab.start("second")
    kubelet(args, "register", "--registry", lab.registry)
    answer = prepare(args, lab, ref)
    check(answer == {uid: want}, f"restart: prepared {answer}")
    unprepared = prepare(args, lab, ref, "ns/gone/0b7a8c4e-1111-4222-8333-944455556666", command="unprepare")
    check(unprepared == {uid: {"error": ""}, "0b7a8c4e-1111-4222-8333-944455556666": {"error": ""}},
          f"restart: unprepared {unprepared}")
    check(not os.path.exists(spec_path), "restart: unprepare left the claim spec")
    print("ok restart")
    return daemon


def check_wipe(args):
    wiped = kubelet(args, "wipe-slices", "--apiserver", args.api.dir, "--node", NODE)
    check(wiped["deleted"], f"wipe: nothing deleted {wiped}")
    wait_slices(args, "wipe", lambda s: len(devices_of(s)) == args.devices)
    print("ok wipe")


def taints_of(found, name):
    return [(t["key"], t.get("value"), t["effect"]) for t in devices_of(found)[name].get("taints", [])]


def check_xid(args, lab, daemon, gpus):
    generation = slices(args)[0]["spec"]["pool"]["generation"]
    # An Xid of NVIDIA's skip list taints with effect None (NVIDIA's driver does so): the scheduler still
    # allocates the device.
    lab.xid(gpus[3]["uuid"], 13)
    wait_slices(args, "xid 13", lambda s: taints_of(s, "gpu-3") == [("gpu.nvidia.com/xid", "13", "None")])
    lab.xid(gpus[3]["uuid"], 79)
    found = wait_slices(args, "xid", lambda s: taints_of(s, "gpu-3") == [("gpu.nvidia.com/xid", "79", "NoSchedule")])
    check(all(not taints_of(found, name) for name in devices_of(found) if name != "gpu-3"),
          "xid: other devices tainted")
    check(found[0]["spec"]["pool"]["generation"] > generation, "xid: the pool generation did not rise")
    uid = kubelet(args, "create-claim", "--apiserver", args.api.dir, "--namespace", "ns", "--name", "on-gpu-3",
                  "--request", "gpu")["uid"]
    out = run_kubelet(args.stubs, "allocate", "--apiserver", args.api.dir, "--claim", "ns/on-gpu-3", "--device",
                      f"{NODE}/gpu-3")
    check(out.returncode == 1 and "taint" in out.stderr, f"xid: the tainted gpu-3 was allocated ({uid}): {out.stderr}")
    daemon.process.send_signal(signal.SIGHUP)
    wait_slices(args, "xid: SIGHUP", lambda s: len(devices_of(s)) == args.devices and not taints_of(s, "gpu-3"))
    print("ok xid")


def check_mig(args, lab, gpus):
    gpu = next(g for g in gpus if g.get("mig", {}).get("mode") == "enabled")
    mig = gpu["mig"]["devices"][0]
    devices = devices_of(slices(args))
    name, device = next(((n, d) for n, d in devices.items() if d["attributes"]["uuid"] == {"string": mig["uuid"]}),
                        (None, None))
    check(name and name.startswith(f"gpu-{gpu['minor']}-mig-"), f"mig: no device for {mig['uuid']}: {sorted(devices)}")
    check(device["attributes"]["type"] == {"string": "mig"} and
          device["attributes"]["parentUUID"] == {"string": gpu["uuid"]} and
          device["attributes"]["profile"] == {"string": mig["profile"]}, f"mig: {name}: {device}")
    ref, uid = claim(args, "one-mig", name)
    answer = prepare(args, lab, ref)
    check(answer[uid]["error"] == "" and answer[uid]["devices"][0]["cdi_device_ids"] ==
          [f"k8s.gpu.nvidia.com/claim={uid}-{name}"], f"mig: prepared {answer}")
    spec = import_yaml().safe_load(open(os.path.join(lab.cdi, f"k8s.gpu.nvidia.com-claim_{uid}.yaml"),
                                        encoding="utf-8"))
    nodes = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
    check(len([n for n in nodes if n.startswith("/dev/nvidia-caps/")]) == 2 and f"/dev/nvidia{gpu['minor']}" in nodes,
          f"mig: the MIG device's nodes {nodes}")
    print("ok mig")


def run(argv):
    if len(argv) != 8:
        print(__doc__, file=sys.stderr)
        return 2
    args = Args(argv)
    with tempfile.TemporaryDirectory(prefix="gpuctk-dra-") as root:
        args.api = ApiServer(os.path.join(root, "api"), "--resource-types", args.types, "--node", NODE)
        try:
            lab = Lab(root, "dgx", "dgx-a100", args)
            gpus = host_gpus("dgx-a100")
            args.devices = expected_devices(gpus)
            check_usage(lab)
            check_manifests(args, lab)
            daemon = lab.start("first")
            try:
                check_register(args, lab)
                check_slices(args, lab, gpus)
                prepared = check_prepare(args, lab, gpus)
                daemon = check_restart(args, lab, daemon, prepared)
                check_wipe(args)
                check_xid(args, lab, daemon, gpus)
                check_mig(args, lab, gpus)
                daemon.process.send_signal(signal.SIGTERM)
                check(daemon.wait("SIGTERM") == 0, "exit status on SIGTERM")
            except BaseException:
                sys.stderr.write(f"the daemon's log:\n{daemon.log()}")
                raise
            finally:
                daemon.close()
        finally:
            args.api.close()
    return 0


if __name__ == "__main__":
    run_main(run)
