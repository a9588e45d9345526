#!/usr/bin/python3
"""The kubelet's side of a DRA kubelet plugin, and the scheduler's allocation (test code): what
gpuctk-dra-plugin meets in a cluster, for its tests, driven by tests/kube/apiserver.py for the API.

    kubelet_dra.py [--registration-proto P] [--dra-proto P] [--stubs DIR] COMMAND ...

--registration-proto: the kubelet's pluginregistration/v1 api.proto (default
$GPUCTK_TEST_CACHE/kubelet-pluginregistration-v1.proto, the cache /var/cache/gpuctk-tests by default);
--dra-proto: the DRA API's v1beta1 api.proto (default $GPUCTK_TEST_CACHE/kubelet-dra-v1beta1.proto; both
Debian's, as scripts/deps.sh fetched them into the test cache); --stubs (default $TMPDIR/gpuctk-dra-stubs):
where the python stubs are generated, once per proto pair (keyed by their hash), with grpc_tools' protoc, gogo.proto's
options left out of the copies compiled (as tests/engines/cri.py does). Kubernetes 1.34's DRA API v1
(k8s.io/kubelet/pkg/apis/dra/v1, in no Debian package yet) has the same messages and service: it is
generated from the v1beta1 file with the package renamed to k8s.io.kubelet.pkg.apis.dra.v1.

Commands (each prints its answer as one JSON line on stdout; any failure is one line
"kubelet_dra.py: error: <what>" on stderr and exit 1):
  register --registry DIR [--timeout S]
      The kubelet's plugin watcher on DIR (its /var/lib/kubelet/plugins_registry): waits up to S seconds
      (default 30) for a socket there, calls Registration.GetInfo and checks the answer as the kubelet's DRA
      handler does: type "DRAPlugin"; name a DNS subdomain (<= 63, a driver name); endpoint the absolute path
      of an existing socket; supported_versions non-empty and holding "v1.DRAPlugin" or
      "v1beta1.DRAPlugin". Then NotifyRegistrationStatus(plugin_registered=true), or (false, the error) and
      exit 1. Prints {"name", "endpoint", "versions", "chosen"}: chosen is "v1" when the plugin lists
      v1.DRAPlugin, else "v1beta1" (the kubelet prefers v1).
  prepare --endpoint SOCK [--version v1|v1beta1] [--timeout S] --claim NS/NAME/UID ...
  unprepare (the same options)
      NodePrepareResources / NodeUnprepareResources of all the claims in one request, as the kubelet does
      for a pod's claims, with its deadline (S, default 45 seconds). Prints {uid: {"devices":
      [{"request_names", "pool_name", "device_name", "cdi_device_ids"}], "error"}} (unprepare: {uid:
      {"error"}}); a gRPC failure is an error.
  wipe-slices --apiserver DIR --node NODE [--driver NAME]
      What the kubelet does at its start (and, with --driver, when a plugin goes): deletes the node's
      ResourceSlices by deletecollection with fieldSelector spec.nodeName=NODE[,spec.driver=NAME].
      Prints {"deleted": [names]}. DIR: apiserver.py's --dir (port, ca.crt, serviceaccount/token).
  create-claim --apiserver DIR --namespace NS --name N --request NAME[:CLASS] ...
      Creates a ResourceClaim whose spec.devices.requests are {name, exactly: {deviceClassName: CLASS
      (default gpu.nvidia.com), allocationMode: ExactCount, count: 1}}. Prints {"uid"}.
  allocate --apiserver DIR --claim NS/NAME --device POOL/DEVICE[,REQUEST] ...
      The scheduler's part: each device must be in a ResourceSlice of driver gpu.nvidia.com and pool POOL at
      the pool's highest generation, and carry no NoSchedule or NoExecute taint that the request does not
      tolerate (the scheduler allocates no such device); REQUEST defaults to the claim's only request.
      Writes status.allocation through the status subresource: devices.results [{request, driver, pool,
      device}], nodeSelector (matchFields metadata.name In [the slice's nodeName], or the slice's own
      nodeSelector; none for allNodes), allocationTimestamp. Prints the claim as stored.
"""
import argparse
import hashlib
import importlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dra_api import DRIVER, RESOURCE, Api, ApiError, claim_path  # noqa: E402

DRA_V1BETA1 = "k8s.io.kubelet.pkg.apis.dra.v1beta1"
DRA_V1 = "k8s.io.kubelet.pkg.apis.dra.v1"
SERVICES = {"v1": "v1.DRAPlugin", "v1beta1": "v1beta1.DRAPlugin"}  # the kubelet's preference first
DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"


class KubeletError(Exception):
    pass


def without_gogo(text, proto):
    """The proto without gogoproto's import and options (Go code generation only)."""
    text = re.sub(r'(?m)^import "github\.com/gogo/protobuf/gogoproto/gogo\.proto";\n', "", text)
    text = re.sub(r"(?m)^option \(gogoproto\.[a-z_]+\)\s*=\s*[a-z]+;\n", "", text)
    text = re.sub(r'\s*\[\(gogoproto\.[a-z_]+\)\s*=\s*"[A-Za-z]*"\]', "", text)
    if "gogoproto" in text:
        raise KubeletError(f"{proto}: gogoproto options left that this script does not strip")
    return text


def load_protos(registration_proto, dra_proto, stubs):
    """{"registration": (pb2, pb2_grpc), "v1beta1": ..., "v1": ...}, generated into stubs/<hash>/ under
    distinct file names (protobuf's descriptor pool keys files by name)."""
    texts = {}
    for key, path in (("registration", registration_proto), ("v1beta1", dra_proto)):
        try:
            with open(path, encoding="utf-8") as f:
                texts[key] = without_gogo(f.read(), path)
        except OSError as e:
            raise KubeletError(f"{path}: {e.strerror}") from None
    if f"package {DRA_V1BETA1};" not in texts["v1beta1"]:
        raise KubeletError(f"{dra_proto}: no \"package {DRA_V1BETA1};\" (not the DRA v1beta1 API?)")
    texts["v1"] = texts["v1beta1"].replace(f"package {DRA_V1BETA1};", f"package {DRA_V1};")
    digest = hashlib.sha256("\0".join(texts[k] for k in sorted(texts)).encode()).hexdigest()[:16]
    out = os.path.join(stubs, digest)
    names = {"registration": "pluginregistration_v1", "v1beta1": "dra_v1beta1", "v1": "dra_v1"}
    if not all(os.path.exists(os.path.join(out, f"{n}_pb2_grpc.py")) for n in names.values()):
        os.makedirs(out, exist_ok=True)
        for key, name in names.items():
            with open(os.path.join(out, f"{name}.proto"), "w", encoding="utf-8") as f:
                f.write(texts[key])
        result = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", out, "--python_out", out,
                                 "--grpc_python_out", out, *(os.path.join(out, f"{n}.proto") for n in names.values())],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise KubeletError(f"protoc: {result.stderr.strip().splitlines()[-1:]}")
    if out not in sys.path:
        sys.path.insert(0, out)
    return {key: (importlib.import_module(f"{name}_pb2"), importlib.import_module(f"{name}_pb2_grpc"))
            for key, name in names.items()}


def grpc_module():
    try:
        import grpc  # Debian's python3-grpcio
    except ImportError as e:
        raise KubeletError(f"{sys.executable} cannot import {e.name} (python3-grpcio)") from None
    return grpc


def rpc(what, call):
    grpc = grpc_module()
    try:
        return call()
    except grpc.RpcError as e:
        raise KubeletError(f"{what}: {e.code().name}: {e.details()}") from None


def is_socket(path):
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def wait_socket(folder, timeout):
    """The first socket (by name) that appears in `folder` within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = sorted(n for n in os.listdir(folder) if not n.startswith(".") and is_socket(os.path.join(folder, n)))
        if found:
            return os.path.join(folder, found[0])
        if time.monotonic() > deadline:
            raise KubeletError(f"no plugin socket in {folder} within {timeout} s")
        time.sleep(0.05)


def info_problem(info):
    """Why the kubelet refuses this PluginInfo, or None."""
    if info.type != "DRAPlugin":
        return f'plugin type "{info.type}" is not "DRAPlugin"'
    if not re.fullmatch(DNS_SUBDOMAIN, info.name) or len(info.name) > 63:
        return f'plugin name "{info.name}" is not a DNS subdomain of at most 63 characters'
    if not info.endpoint:
        return "the plugin's endpoint is empty"
    if not os.path.isabs(info.endpoint) or not is_socket(info.endpoint):
        return f'endpoint "{info.endpoint}" is not the absolute path of a socket'
    if not info.supported_versions:
        return "supported_versions is empty"
    if not any(v in SERVICES.values() for v in info.supported_versions):
        return (f"none of the supported versions {list(info.supported_versions)} is one of this kubelet's "
                f"({', '.join(SERVICES.values())})")
    return None


def register(stubs, args):
    grpc = grpc_module()
    pb, pb_grpc = stubs["registration"]
    socket = wait_socket(args.registry, args.timeout)
    with grpc.insecure_channel("unix:" + socket) as channel:
        stub = pb_grpc.RegistrationStub(channel)
        info = rpc(f"GetInfo on {socket}", lambda: stub.GetInfo(pb.InfoRequest(), timeout=args.timeout))
        problem = info_problem(info)
        rpc(f"NotifyRegistrationStatus on {socket}", lambda: stub.NotifyRegistrationStatus(
            pb.RegistrationStatus(plugin_registered=problem is None, error=problem or ""), timeout=args.timeout))
    if problem:
        raise KubeletError(f"registration of {socket} refused: {problem}")
    chosen = next(v for v, service in SERVICES.items() if service in info.supported_versions)
    return {"name": info.name, "endpoint": info.endpoint, "versions": list(info.supported_versions),
            "chosen": chosen}


def split_claim(text):
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise KubeletError(f'--claim "{text}": want NAMESPACE/NAME/UID')
    return parts


def prepare(stubs, args, unprepare):
    grpc = grpc_module()
    pb, pb_grpc = stubs[args.version]
    claims = [pb.Claim(namespace=ns, name=name, uid=uid) for ns, name, uid in map(split_claim, args.claim)]
    with grpc.insecure_channel("unix:" + args.endpoint) as channel:
        stub = pb_grpc.DRAPluginStub(channel)
        if unprepare:
            answer = rpc(f"{args.version} NodeUnprepareResources", lambda: stub.NodeUnprepareResources(
                pb.NodeUnprepareResourcesRequest(claims=claims), timeout=args.timeout))
            return {uid: {"error": r.error} for uid, r in sorted(answer.claims.items())}
        answer = rpc(f"{args.version} NodePrepareResources", lambda: stub.NodePrepareResources(
            pb.NodePrepareResourcesRequest(claims=claims), timeout=args.timeout))
    return {uid: {"devices": [{"request_names": list(d.request_names), "pool_name": d.pool_name,
                               "device_name": d.device_name, "cdi_device_ids": list(d.cdi_device_ids)}
                              for d in r.devices], "error": r.error}
            for uid, r in sorted(answer.claims.items())}


def wipe_slices(args):
    selector = f"spec.nodeName={args.node}" + (f",spec.driver={args.driver}" if args.driver else "")
    answer = Api(args.apiserver).expect(200, "DELETE", RESOURCE + "/resourceslices",
                                        query={"fieldSelector": selector})
    return {"deleted": [item["metadata"]["name"] for item in answer["items"]]}


def create_claim(args):
    requests = []
    for text in args.request:
        name, _, device_class = text.partition(":")
        requests.append({"name": name, "exactly": {"deviceClassName": device_class or DRIVER,
                                                   "allocationMode": "ExactCount", "count": 1}})
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": args.name, "namespace": args.namespace},
             "spec": {"devices": {"requests": requests}}}
    answer = Api(args.apiserver).expect(201, "POST", f"{RESOURCE}/namespaces/{args.namespace}/resourceclaims", claim)
    return {"uid": answer["metadata"]["uid"]}


def tolerated(taint, tolerations):
    """Whether a toleration of the request matches the taint (operator Equal by default)."""
    for t in tolerations:
        key_ok = (not t.get("key") and t.get("operator") == "Exists") or t.get("key") == taint.get("key")
        value_ok = t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", "")
        if key_ok and value_ok and t.get("effect") in (None, "", taint.get("effect")):
            return True
    return False


def find_device(api, pool, device):
    """(the device, its slice's spec) in the pool's newest generation, or KubeletError."""
    slices = api.expect(200, "GET", RESOURCE + "/resourceslices",
                        query={"fieldSelector": f"spec.driver={DRIVER},spec.pool.name={pool}"})["items"]
    if not slices:
        raise KubeletError(f'no ResourceSlice of driver {DRIVER} publishes pool "{pool}"')
    newest = max(s["spec"]["pool"]["generation"] for s in slices)
    for spec in (s["spec"] for s in slices if s["spec"]["pool"]["generation"] == newest):
        for candidate in spec.get("devices") or []:
            if candidate["name"] == device:
                return candidate, spec
    raise KubeletError(f'pool "{pool}" (generation {newest}) has no device "{device}"')


def node_selector(spec):
    if spec.get("nodeName"):
        return {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [spec["nodeName"]]}]}]}
    return spec.get("nodeSelector")


def allocate(args):
    api = Api(args.apiserver)
    namespace, _, name = args.claim.partition("/")
    claim = api.expect(200, "GET", claim_path(namespace, name))
    requests = {r["name"]: r for r in claim["spec"]["devices"]["requests"]}
    results, selector = [], None
    for text in args.device:
        where, _, request = text.partition(",")
        pool, _, device_name = where.rpartition("/")
        if not request:
            if len(requests) != 1:
                raise KubeletError(f"--device {text}: the claim has {len(requests)} requests: name one")
            request = next(iter(requests))
        if request not in requests:
            raise KubeletError(f'--device {text}: the claim has no request "{request}"')
        device, spec = find_device(api, pool, device_name)
        tolerations = (requests[request].get("exactly") or {}).get("tolerations") or []
        for taint in device.get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(taint, tolerations):
                raise KubeletError(f'device {pool}/{device_name} is tainted {taint.get("key")}='
                                   f'{taint.get("value", "")}:{taint["effect"]}, not tolerated by request "{request}"')
        results.append({"request": request, "driver": DRIVER, "pool": pool, "device": device_name})
        selector = selector or node_selector(spec)
    claim["status"] = {**claim.get("status", {}), "allocation": {
        "devices": {"results": results},
        **({"nodeSelector": selector} if selector else {}),
        "allocationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
    return api.expect(200, "PUT", claim_path(namespace, name) + "/status", claim)


def parser():
    top = argparse.ArgumentParser(prog="kubelet_dra.py")
    cache = os.environ.get("GPUCTK_TEST_CACHE", "/var/cache/gpuctk-tests")
    top.add_argument("--registration-proto", default=os.path.join(cache, "kubelet-pluginregistration-v1.proto"))
    top.add_argument("--dra-proto", default=os.path.join(cache, "kubelet-dra-v1beta1.proto"))
    top.add_argument("--stubs", default=os.path.join(tempfile.gettempdir(), "gpuctk-dra-stubs"))
    commands = top.add_subparsers(dest="command", required=True)
    p = commands.add_parser("register")
    p.add_argument("--registry", required=True)
    p.add_argument("--timeout", type=float, default=30)
    for name in ("prepare", "unprepare"):
        p = commands.add_parser(name)
        p.add_argument("--endpoint", required=True)
        p.add_argument("--version", choices=sorted(SERVICES), default="v1")
        p.add_argument("--timeout", type=float, default=45)
        p.add_argument("--claim", action="append", required=True)
    p = commands.add_parser("wipe-slices")
    p.add_argument("--apiserver", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--driver")
    p = commands.add_parser("create-claim")
    p.add_argument("--apiserver", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--request", action="append", required=True)
    p = commands.add_parser("allocate")
    p.add_argument("--apiserver", required=True)
    p.add_argument("--claim", required=True)
    p.add_argument("--device", action="append", required=True)
    return top


def main(argv):
    args = parser().parse_args(argv[1:])
    if args.command in ("register", "prepare", "unprepare"):
        stubs = load_protos(args.registration_proto, args.dra_proto, args.stubs)
        if args.command == "register":
            answer = register(stubs, args)
        else:
            answer = prepare(stubs, args, args.command == "unprepare")
    else:
        answer = {"wipe-slices": wipe_slices, "create-claim": create_claim, "allocate": allocate}[args.command](args)
    print(json.dumps(answer, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (KubeletError, ApiError) as e:
        print(f"kubelet_dra.py: error: {e}", file=sys.stderr)
        sys.exit(1)
