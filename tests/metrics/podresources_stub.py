#!/usr/bin/python3
"""A stand-in for the kubelet's pod-resources API v1 (test code): serves List on a unix socket, as the
kubelet does on /var/lib/kubelet/pod-resources/kubelet.sock, for gpuctk-exporter's client
(src/metrics/pod_resources) and its tests.

    podresources_stub.py API_PROTO STUBS_DIR SOCKET MODE [JSON_FILE]

API_PROTO: the kubelet's podresources/v1 api.proto (Debian's, as scripts/deps.sh fetched it); STUBS_DIR:
where the python stubs are generated (tests/engines/cri.py's load_stubs, keyed by the proto's hash).
Prints "ready" on stdout once it listens; runs until SIGTERM or SIGINT. MODE, what List answers:
  json FILE  FILE's ListPodResourcesResponse in the API's JSON field names, re-read on every call (a test
             changes the answer by rewriting it): {"pod_resources": [{"name", "namespace", "containers":
             [{"name", "devices": [{"resource_name", "device_ids": [...]}]}]}]}; a FILE that cannot be
             read or parsed answers INTERNAL naming it
  huge       100 000 pods, each with one container holding one GPU (about 6 MiB)
  big        one pod whose container lists 20 MiB of device IDs
  odd        odd names, the same on every call: ODD below
  silent     never answers: each call waits until the client's deadline has passed
Strict: the API's other methods (Get, GetAllocatableResources) answer UNIMPLEMENTED, as does any other
service (gRPC's own answer); List's request must be empty (INVALID_ARGUMENT otherwise).
Exit status: 1 with "podresources_stub.py: error: <why>" on stderr for bad arguments or a socket it cannot
listen on; 77 with "SKIP: <why>" where Debian's python3-grpcio or python3-grpc-tools is missing.
"""
import json
import os
import signal
import sys
import threading
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))

HUGE_PODS = 100_000
BIG_BYTES = 20 << 20

# The odd names (mode odd): one pod, two containers. A client must give them back byte for byte.
ODD = {
    "pod_resources": [{
        "name": 'quote"pod\'s',
        "namespace": "line\nbreak",
        "containers": [
            {"name": "c" * 300,
             "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-odd\"\\\x01\u00e9"]}]},
            {"name": "tab\there",
             "devices": [{"resource_name": "nvidia.com/" + "r" * 300, "device_ids": ["MIG-" + "9" * 300]}]},
        ],
    }]
}


def fail(why):
    print(f"podresources_stub.py: error: {why}", file=sys.stderr)
    sys.exit(1)


sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from daemon_test import import_grpc  # noqa: E402

grpc, cri = import_grpc()
from google.protobuf import json_format  # noqa: E402 (python3-protobuf: grpc_tools needs it too)


def huge_answer(pb):
    answer = pb.ListPodResourcesResponse()
    for i in range(HUGE_PODS):
        pod = answer.pod_resources.add(name=f"pod-{i}", namespace="default")
        container = pod.containers.add(name="main")
        container.devices.add(resource_name="nvidia.com/gpu", device_ids=[f"GPU-{i:08d}"])
    return answer


def big_answer(pb):
    answer = pb.ListPodResourcesResponse()
    container = answer.pod_resources.add(name="big", namespace="default").containers.add(name="main")
    devices = container.devices.add(resource_name="nvidia.com/gpu")
    devices.device_ids.extend("GPU-" + "0" * 1020 for _ in range(BIG_BYTES // 1024))
    return answer


class Answers:
    """What List answers in each mode; the fixed ones are built once, at start."""

    def __init__(self, pb, mode, json_file):
        self.pb, self.mode, self.json_file = pb, mode, json_file
        fixed = {"huge": lambda: huge_answer(pb), "big": lambda: big_answer(pb),
                 "odd": lambda: json_format.ParseDict(ODD, pb.ListPodResourcesResponse())}
        self.fixed = fixed[mode]() if mode in fixed else None

    def list(self, context):
        if self.mode == "silent":
            done = threading.Event()
            context.add_callback(done.set)  # the call ended: the client's deadline passed or it left
            done.wait()
            return self.pb.ListPodResourcesResponse()
        if self.fixed is not None:
            return self.fixed
        try:
            with open(self.json_file, encoding="utf-8") as f:
                return json_format.ParseDict(json.load(f), self.pb.ListPodResourcesResponse())
        except (OSError, ValueError, json_format.ParseError) as e:
            context.abort(grpc.StatusCode.INTERNAL, f"podresources_stub.py: {self.json_file}: {e}")


def serve(pb, pb_grpc, socket, answers):
    class Lister(pb_grpc.PodResourcesListerServicer):
        def List(self, request, context):
            if request.ByteSize() != 0:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "podresources_stub.py: List takes no fields")
            return answers.list(context)

        def Get(self, request, context):
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "podresources_stub.py: only List is served")

        def GetAllocatableResources(self, request, context):
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "podresources_stub.py: only List is served")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_PodResourcesListerServicer_to_server(Lister(), server)
    if server.add_insecure_port("unix:" + socket) == 0:
        fail(f"cannot listen on {socket}")
    server.start()
    return server


def main():
    args = sys.argv[1:]
    modes = ("json", "huge", "big", "odd", "silent")
    if len(args) < 4 or args[3] not in modes or (args[3] == "json") != (len(args) == 5) or len(args) > 5:
        fail("usage: podresources_stub.py API_PROTO STUBS_DIR SOCKET json FILE|huge|big|odd|silent")
    proto, stubs, socket, mode = args[:4]
    try:
        pb, pb_grpc = cri.load_stubs(proto, stubs)
    except (OSError, cri.CriError) as e:
        fail(str(e))
    answers = Answers(pb, mode, args[4] if mode == "json" else None)
    # SIGTERM and SIGINT are blocked (in gRPC's threads too) and waited for: a Python handler that set an
    # Event could run while the main thread held that Event's lock, and never return.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    server = serve(pb, pb_grpc, socket, answers)
    print("ready", flush=True)
    signal.sigwait(stop_signals)
    server.stop(None).wait()
    if os.path.exists(socket):
        os.unlink(socket)


if __name__ == "__main__":
    main()
