#!/usr/bin/python3
"""gpuctk-dra-plugin measured as the kubelet sees it (bench/dra.sh runs it): on the DGX-A100-like fixture
host (8 GPUs, 4 of them in MIG mode: 20 devices, the mock NVML), against tests/kube/apiserver.py (the
stand-in API server, python) with tests/dra's kubelet side in-process (Debian's gRPC for python).

    dra_kubelet.py DAEMON FIXTURE_TOOL TYPES_GO REGISTRATION_PROTO DRA_PROTO STUBS GPUCTK [--claims N]
                   [--starts N] [--rounds N] [--smaps]

Prints:
  slices      start of the process to its ResourceSlice holding every device, seen by polling the API
              every 5 ms (median and max of --starts daemon starts)
  api floor   one GET of a ResourceClaim from python, which every prepare below also pays inside the
              daemon (the stand-in is python over TLS: a real API server answers faster)
  prepare     NodePrepareResources of one claim of one GPU (fetch, check, claim spec and checkpoint
              written): median, p90, max over --claims claims, as the client times the RPC; and the
              daemon's own part of each, the claim's GET left out (from the times its log gives)
  prepared    the same claims asked again (answered from the checkpoint: no fetch, spec present)
  unprepare   NodeUnprepareResources of each (spec and checkpoint entry removed)
  rss         the daemon's VmRSS after the start, after N prepare+unprepare rounds, and its VmHWM; with
              --smaps, the resident kiB per mapping then
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SOURCE, "tests", "support"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "dra"))
from daemon_test import Daemon, materialise  # noqa: E402
from standins_test import ApiServer  # noqa: E402
import kubelet_dra  # noqa: E402
from dra_api import RESOURCE  # noqa: E402

NODE = "node-a"


def ms(seconds):
    return f"{seconds * 1000:.2f} ms"


def summary(samples):
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"median {ms(statistics.median(ordered))}  p90 {ms(p90)}  max {ms(ordered[-1])}  (n={len(ordered)})"


def status_kib(pid, key):
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def daemon_share(log, count):
    """The daemon's own time of its first `count` prepare calls: "(X us for the call, Y us of them getting
    claims)" of its log, X - Y, in seconds."""
    import re
    found = re.findall(r"\((\d+) us for the call, (\d+) us of them getting claims\)", log)
    return [(int(total) - int(api)) / 1e6 for total, api in found[:count]]


def print_smaps(pid):
    """The resident kiB per mapped file (anonymous mappings by their name, [heap], [stack] or "anon")."""
    rss, name = {}, "anon"
    with open(f"/proc/{pid}/smaps", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:
                name = os.path.basename(fields[5]) if len(fields) > 5 else "anon"
            elif fields[0] == "Rss:":
                rss[name] = rss.get(name, 0) + int(fields[1])
    for name, kib in sorted(rss.items(), key=lambda item: -item[1])[:15]:
        print(f"  {kib:6d} kiB  {name}")


def main():
    parser = argparse.ArgumentParser()
    for name in ("daemon", "fixture", "types", "registration", "dra", "stubs", "gpuctk"):
        parser.add_argument(name)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1000, help="prepare+unprepare rounds before the last RSS")
    parser.add_argument("--smaps", action="store_true", help="the resident set per mapping at the end")
    args = parser.parse_args()
    import grpc
    protos = kubelet_dra.load_protos(args.registration, args.dra, args.stubs)
    pb, pb_grpc = protos["v1"]
    with tempfile.TemporaryDirectory(prefix="gpuctk-dra-bench-") as root:
        server = ApiServer(os.path.join(root, "api"), "--resource-types", args.types, "--node", NODE)
        api = server.api
        driver_root, dev_root = materialise(args.fixture, "dgx-a100", os.path.join(root, "host"))
        plugins = os.path.join(root, "plugins")
        command = [args.daemon, "--node-name", NODE, "--kubeconfig", os.path.join(server.dir, "kubeconfig"),
                   "--cdi-root", os.path.join(root, "cdi"), "--kubelet-registrar-directory-path",
                   os.path.join(root, "registry"), "--kubelet-plugins-directory-path", plugins,
                   "--nvidia-driver-root", driver_root, "--dev-root", dev_root, "--gpuctk-path", args.gpuctk]
        os.mkdir(os.path.join(root, "registry"))
        try:
            starts = []
            for n in range(args.starts):
                api.call("DELETE", RESOURCE + "/resourceslices", query={"fieldSelector": f"spec.nodeName={NODE}"})
                began = time.monotonic()
                with Daemon(command, os.path.join(root, f"start{n}.log")) as daemon:
                    while True:
                        _, body = api.call("GET", RESOURCE + "/resourceslices",
                                           query={"fieldSelector": f"spec.nodeName={NODE}"})
                        if sum(len(s["spec"].get("devices", [])) for s in body.get("items", [])) == 20:
                            break
                        if time.monotonic() - began > 30:
                            raise SystemExit(f"no 20 devices 30 s after the start: {daemon.log()}")
                        time.sleep(0.005)
                    starts.append(time.monotonic() - began)
                    daemon.process.terminate()
                    daemon.process.wait()
            print(f"slices      start to 20 devices published: median {ms(statistics.median(starts))}  "
                  f"max {ms(max(starts))}  (n={len(starts)})")

            claims = []
            for n in range(args.claims):
                name = f"c{n}"
                claim = {"metadata": {"name": name}, "spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
                _, made = api.call("POST", RESOURCE + "/namespaces/ns/resourceclaims", body=claim)
                status = {"status": {"allocation": {"devices": {"results": [
                    {"request": "gpu", "driver": "gpu.nvidia.com", "pool": NODE, "device": f"gpu-{n % 4}"}]}}}}
                api.call("PATCH", RESOURCE + f"/namespaces/ns/resourceclaims/{name}/status", body=status,
                         content_type="application/merge-patch+json")
                claims.append(pb.Claim(namespace="ns", name=name, uid=made["metadata"]["uid"]))
            floor = []
            for c in claims[:50]:
                began = time.monotonic()
                api.call("GET", RESOURCE + f"/namespaces/ns/resourceclaims/{c.name}")
                floor.append(time.monotonic() - began)
            print(f"api floor   GET of a claim from python: {summary(floor)}")

            with Daemon(command, os.path.join(root, "daemon.log")) as daemon:
                endpoint = os.path.join(plugins, "gpu.nvidia.com", "dra.sock")
                while not os.path.exists(endpoint):
                    time.sleep(0.01)
                stub = pb_grpc.DRAPluginStub(grpc.insecure_channel("unix:" + endpoint))
                after_start = status_kib(daemon.process.pid, "VmRSS")

                def timed(call, request):
                    began = time.monotonic()
                    answer = call(request, timeout=30)
                    took = time.monotonic() - began
                    for uid, result in answer.claims.items():
                        if result.error:
                            raise SystemExit(f"claim {uid}: {result.error}")
                    return took

                prepare = [timed(stub.NodePrepareResources, pb.NodePrepareResourcesRequest(claims=[c]))
                           for c in claims]
                prepared = [timed(stub.NodePrepareResources, pb.NodePrepareResourcesRequest(claims=[c]))
                            for c in claims]
                unprepare = [timed(stub.NodeUnprepareResources, pb.NodeUnprepareResourcesRequest(claims=[c]))
                             for c in claims]
                print(f"prepare     one claim of one GPU: {summary(prepare)}")
                own = daemon_share(daemon.log(), len(claims))
                print(f"  daemon    its own part, the claim's GET left out (its log): {summary(own)}")
                print(f"prepared    asked again: {summary(prepared)}")
                print(f"unprepare   {summary(unprepare)}")
                rounds = args.rounds
                for n in range(rounds):
                    c = claims[n % len(claims)]
                    timed(stub.NodePrepareResources, pb.NodePrepareResourcesRequest(claims=[c]))
                    timed(stub.NodeUnprepareResources, pb.NodeUnprepareResourcesRequest(claims=[c]))
                pid = daemon.process.pid
                print(f"rss         after the start {after_start / 1024:.1f} MiB, after {rounds} prepare+unprepare "
                      f"{status_kib(pid, 'VmRSS') / 1024:.1f} MiB, peak {status_kib(pid, 'VmHWM') / 1024:.1f} MiB")
                if args.smaps:
                    print_smaps(pid)
                daemon.process.terminate()
                daemon.process.wait()
        finally:
            server.close()


if __name__ == "__main__":
    main()
