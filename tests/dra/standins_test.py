#!/usr/bin/python3
"""The self-test of the DRA plugin's stand-ins (test code): tests/kube/apiserver.py's resource.k8s.io/v1
kinds and tests/dra/kubelet_dra.py, so that a test of gpuctk-dra-plugin that passes against them passes
for what they check, not for what they let through.

    standins_test.py TYPES.GO REGISTRATION_PROTO DRA_PROTO STUBS_DIR

Checks, each printed as "ok <what>" (the first failure: "standins_test.py: error: <what>", exit 1; no
python3-grpc: "SKIP: <why>", exit 77):
  types-missing-constant  a types.go without DeviceTaintsMaxLength: apiserver.py exits 1, one line naming it
  no-resource-types   without --resource-types resource.k8s.io is 404, nodes are served
  slice-stored        a valid ResourceSlice (generateName) is stored and listed by the field selectors
                      spec.nodeName, spec.driver, spec.pool.name (with == too), not by another node's; an
                      unknown selector label, unknown and mistyped fields are 400
  slice-invalid       each rule of the table: the bad slice is 422 Invalid naming the field (message and
                      causes), the same slice fixed is 201
  claim-invalid       the same for ResourceClaims, their status through the status subresource
  claim-status        a claim is created unallocated; PUT of the claim keeps the status, a changed spec is
                      422 (immutable); PUT/PATCH of .../status change only the status; a changed
                      allocation is 422; a stale resourceVersion 409
  wipe-slices         kubelet_dra.py wipe-slices deletes node n1's slices (deletecollection), not n2's
  allocate            create-claim, then allocate of a published device: results, nodeSelector of the
                      slice's node; a device not published, and one tainted NoSchedule, are refused
  register-v1beta1    a plugin serving Registration and DRA v1beta1 only: register chooses v1beta1 and
                      notifies success
  prepare             prepare/unprepare of two claims reach the plugin in one request each, in order, and
                      its answer is printed; v1 on that plugin fails (UNIMPLEMENTED)
  register-v1         a plugin listing and serving both: v1 is chosen and prepare --version v1 works
  register-refused    a wrong type, an empty endpoint, no known version: exit 1 with one line, and the
                      plugin told NotifyRegistrationStatus(false, the reason)
"""
import copy
import json
import os
import queue
import subprocess
import sys
import tempfile
import time
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
sys.path.insert(0, HERE)
from daemon_test import SOURCE, TIMEOUT, Failure, check, import_grpc, main as run_main  # noqa: E402

grpc, _ = import_grpc()
from dra_api import RESOURCE, Api, claim_path  # noqa: E402
import kubelet_dra  # noqa: E402

SLICES = RESOURCE + "/resourceslices"
CLAIMS = RESOURCE + "/namespaces/ns/resourceclaims"
APISERVER = os.path.join(SOURCE, "tests", "kube", "apiserver.py")


class ApiServer:
    """apiserver.py on loopback in `folder`, stopped by close()."""

    def __init__(self, folder, *args):
        self.dir = folder
        self.process = subprocess.Popen([sys.executable, APISERVER, "--dir", folder, *args],
                                        stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(os.path.join(folder, "ready")):
            check(self.process.poll() is None, f"apiserver.py exited {self.process.returncode}")
            check(time.monotonic() < deadline, f"apiserver.py not ready within {TIMEOUT} s")
            time.sleep(0.05)
        self.api = Api(folder)

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=TIMEOUT)


def slice_object(name="s", node="n1", devices=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
                     "devices": devices if devices is not None else [
                         {"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-0"},
                                                          "driverVersion": {"version": "535.309.1"}},
                          "capacity": {"memory": {"value": "80Gi"}}}]}}


def devices(count, taint=False):
    out = [{"name": f"gpu-{i}"} for i in range(count)]
    if taint:
        out[0]["taints"] = [{"key": "example.com/broken", "effect": "NoSchedule"}]
    return out


def taints(count):
    return [{"key": f"example.com/t{i}", "effect": "None"} for i in range(count)]


def spec_set(path, value):
    """A change of the object: `value` put at the dotted `path` (an int: a list index); None removes."""
    def change(obj):
        parts = path.split(".")
        target = obj
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        last = int(parts[-1]) if parts[-1].isdigit() else parts[-1]
        if value is None:
            del target[last]
        else:
            target[last] = copy.deepcopy(value)
    return change


def both(*changes):
    def change(obj):
        for c in changes:
            c(obj)
    return change


D0 = "spec.devices.0"
# (field in the error, cause reason, the bad change, the fix): the fixed slice must be accepted.
SLICE_CASES = [
    ("spec.driver", "FieldValueInvalid", spec_set("spec.driver", "GPU.nvidia.com"),
     spec_set("spec.driver", "gpu.nvidia.com")),
    ("spec.driver", "FieldValueTooLong", spec_set("spec.driver", "a" * 61 + ".io"),
     spec_set("spec.driver", "a" * 60 + ".io")),
    ("spec.pool.name", "FieldValueRequired", spec_set("spec.pool.name", ""), spec_set("spec.pool.name", "p")),
    ("spec.pool.name", "FieldValueInvalid", spec_set("spec.pool.name", "n1//x"), spec_set("spec.pool.name", "n1/x")),
    ("spec.pool.name", "FieldValueTooLong", spec_set("spec.pool.name", "/".join(["a" * 63] * 3 + ["a" * 62])),
     spec_set("spec.pool.name", "/".join(["a" * 63] * 3 + ["a" * 61]))),
    ("spec.pool.generation", "FieldValueInvalid", spec_set("spec.pool.generation", -1),
     spec_set("spec.pool.generation", 0)),
    ("spec.pool.resourceSliceCount", "FieldValueInvalid", spec_set("spec.pool.resourceSliceCount", 0),
     spec_set("spec.pool.resourceSliceCount", 2)),
    ("spec", "FieldValueRequired", spec_set("spec.nodeName", None), both(spec_set("spec.nodeName", None),
                                                                          spec_set("spec.allNodes", True))),
    ("spec", "FieldValueInvalid", spec_set("spec.allNodes", True), spec_set("spec.allNodes", False)),
    ("spec.nodeSelector.nodeSelectorTerms", "FieldValueInvalid",
     both(spec_set("spec.nodeName", None), spec_set("spec.nodeSelector", {"nodeSelectorTerms": [
         {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}] * 2})),
     both(spec_set("spec.nodeName", None), spec_set("spec.nodeSelector", {"nodeSelectorTerms": [
         {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}))),
    ("spec.devices", "FieldValueTooMany", spec_set("spec.devices", devices(129)), spec_set("spec.devices", devices(128))),
    ("spec.devices", "FieldValueTooMany", spec_set("spec.devices", devices(65, True)),
     spec_set("spec.devices", devices(64, True))),
    ("spec.devices[0].name", "FieldValueInvalid", spec_set(D0 + ".name", "GPU-0"), spec_set(D0 + ".name", "gpu-0")),
    ("spec.devices[1].name", "FieldValueDuplicate", spec_set("spec.devices", [{"name": "g"}, {"name": "g"}]),
     spec_set("spec.devices", [{"name": "g"}, {"name": "h"}])),
    ("spec.devices[0]", "FieldValueTooMany",
     spec_set(D0 + ".attributes", {f"a{i}": {"int": i} for i in range(32)}),
     spec_set(D0 + ".attributes", {f"a{i}": {"int": i} for i in range(31)})),
    ("spec.devices[0].attributes[1bad]", "FieldValueInvalid", spec_set(D0 + ".attributes", {"1bad": {"int": 1}}),
     spec_set(D0 + ".attributes", {"good_1": {"int": 1}})),
    ("spec.devices[0].attributes[Bad.example.com/x]", "FieldValueInvalid",
     spec_set(D0 + ".attributes", {"Bad.example.com/x": {"int": 1}}),
     spec_set(D0 + ".attributes", {"gpu.nvidia.com/x": {"int": 1}})),
    ("spec.devices[0].attributes[" + "x" * 33 + "]", "FieldValueTooLong",
     spec_set(D0 + ".attributes", {"x" * 33: {"int": 1}}), spec_set(D0 + ".attributes", {"x" * 32: {"int": 1}})),
    ("spec.devices[0].attributes[uuid]", "FieldValueInvalid", spec_set(D0 + ".attributes.uuid", {"string": "a", "int": 1}),
     spec_set(D0 + ".attributes.uuid", {"int": 1})),
    ("spec.devices[0].attributes[uuid]", "FieldValueRequired", spec_set(D0 + ".attributes.uuid", {}),
     spec_set(D0 + ".attributes.uuid", {"bool": False})),
    ("spec.devices[0].attributes[uuid].strings", "FieldValueForbidden",
     spec_set(D0 + ".attributes.uuid", {"strings": ["a"]}), spec_set(D0 + ".attributes.uuid", {"string": "a"})),
    ("spec.devices[0].attributes[uuid].string", "FieldValueTooLong",
     spec_set(D0 + ".attributes.uuid.string", "u" * 65), spec_set(D0 + ".attributes.uuid.string", "u" * 64)),
    ("spec.devices[0].attributes[driverVersion].version", "FieldValueInvalid",
     spec_set(D0 + ".attributes.driverVersion.version", "535.309"),
     spec_set(D0 + ".attributes.driverVersion.version", "1.2.3-rc.1+build.5")),
    ("spec.devices[0].capacity[memory].value", "FieldValueInvalid", spec_set(D0 + ".capacity.memory.value", "80 Gi"),
     spec_set(D0 + ".capacity.memory.value", "1.5e3")),
    ("spec.devices[0].taints[0].effect", "FieldValueNotSupported",
     spec_set(D0 + ".taints", [{"key": "k", "effect": "PreferNoSchedule"}]),
     spec_set(D0 + ".taints", [{"key": "k", "effect": "NoExecute"}])),
    ("spec.devices[0].taints[0].key", "FieldValueInvalid", spec_set(D0 + ".taints", [{"key": "a key", "effect": "None"}]),
     spec_set(D0 + ".taints", [{"key": "example.com/a-key", "effect": "None"}])),
    ("spec.devices[0].taints", "FieldValueTooMany", spec_set(D0 + ".taints", taints(17)),
     spec_set(D0 + ".taints", taints(16))),
    ("spec.devices[0].nodeName", "FieldValueInvalid", spec_set(D0 + ".nodeName", "n1"),
     both(spec_set("spec.nodeName", None), spec_set("spec.perDeviceNodeSelection", True),
          spec_set(D0 + ".nodeName", "n1"))),
]


def claim_object(name="c", requests=("gpu",)):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": r, "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                                              for r in requests]}}}


def results(count, **result):
    base = {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1"}
    return {"allocation": {"devices": {"results": [{**base, "device": f"gpu-{i}", **result} for i in range(count)]}}}


R0 = "status.allocation.devices.results[0]"
# (field, reason, the bad change, the fix, through the status subresource).
CLAIM_CASES = [
    ("spec.devices.requests[0].name", "FieldValueInvalid", spec_set("spec.devices.requests.0.name", "GPU"),
     spec_set("spec.devices.requests.0.name", "gpu"), False),
    ("spec.devices.requests[1].name", "FieldValueDuplicate",
     spec_set("spec.devices.requests", claim_object(requests=("a", "a"))["spec"]["devices"]["requests"]),
     spec_set("spec.devices.requests", claim_object(requests=("a", "b"))["spec"]["devices"]["requests"]), False),
    ("spec.devices.requests[0]", "FieldValueRequired", spec_set("spec.devices.requests.0.exactly", None),
     spec_set("spec.devices.requests.0.exactly.count", 2), False),
    ("spec.devices.requests[0].exactly.count", "FieldValueInvalid",
     spec_set("spec.devices.requests.0.exactly.count", -1), spec_set("spec.devices.requests.0.exactly.count", 1), False),
    ("status.allocation.devices.results", "FieldValueTooMany", spec_set("status", results(33)),
     spec_set("status", results(32)), True),
    (R0 + ".device", "FieldValueRequired", spec_set("status", results(1, device="")), spec_set("status", results(1)), True),
    (R0 + ".request", "FieldValueInvalid", spec_set("status", results(1, request="other")),
     spec_set("status", results(1)), True),
    (R0 + ".driver", "FieldValueInvalid", spec_set("status", results(1, driver="gpu_nvidia")),
     spec_set("status", results(1, driver="gpu.nvidia.com")), True),
]


def expect_invalid(code, answer, kind, name, field, reason, what):
    check(code == 422, f"{what}: {code}, not 422: {answer.get('message')}")
    prefix = f'{kind}.resource.k8s.io "{name}" is invalid: '
    check(answer["reason"] == "Invalid" and answer["message"].startswith(prefix) and
          f"{field}: " in answer["message"], f"{what}: message {answer['message']!r}")
    causes = [(c["field"], c["reason"]) for c in answer["details"]["causes"]]
    check((field, reason) in causes, f"{what}: causes {causes}, not ({field}, {reason})")


def check_missing_constant(root, types):
    with open(types, encoding="utf-8") as f:
        text = f.read()
    check("const DeviceTaintsMaxLength = 16" in text, f"{types}: no DeviceTaintsMaxLength = 16 to take out")
    changed = os.path.join(root, "types.go")
    with open(changed, "w", encoding="utf-8") as f:
        f.write(text.replace("const DeviceTaintsMaxLength = 16", ""))
    out = subprocess.run([sys.executable, APISERVER, "--dir", os.path.join(root, "never"), "--resource-types", changed],
                         capture_output=True, text=True, timeout=TIMEOUT, check=False)
    want = (f"apiserver.py: error: --resource-types {changed}: no DeviceTaintsMaxLength (has the resource.k8s.io/v1 "
            "API changed?)\n")
    check(out.returncode == 1 and out.stderr == want, f"types-missing-constant: {out.returncode} {out.stderr!r}")
    print("ok types-missing-constant")


def check_no_resource_types(root):
    server = ApiServer(os.path.join(root, "plain"))
    try:
        code, answer = server.api.call("GET", SLICES)
        check(code == 404 and answer["reason"] == "NotFound", f"no-resource-types: {code} {answer}")
        code, _ = server.api.call("GET", "/api/v1/nodes")
        check(code == 200, f"no-resource-types: nodes {code}")
    finally:
        server.close()
    print("ok no-resource-types")


def check_slice_stored(api):
    body = slice_object()
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "n1-gpu.nvidia.com-"
    stored = api.expect(201, "POST", SLICES, body)
    name = stored["metadata"]["name"]
    check(name.startswith("n1-gpu.nvidia.com-") and len(name) == len("n1-gpu.nvidia.com-") + 5,
          f"slice-stored: generated name {name!r}")
    check(stored["spec"] == body["spec"] and "status" not in stored, f"slice-stored: stored {stored}")
    for selector in ("spec.nodeName=n1", "spec.driver==gpu.nvidia.com,spec.pool.name=n1", f"metadata.name={name}"):
        items = api.expect(200, "GET", SLICES, query={"fieldSelector": selector})["items"]
        check([i["metadata"]["name"] for i in items] == [name], f"slice-stored: {selector}: {items}")
    for selector in ("spec.nodeName=n2", "spec.driver=other.example.com"):
        items = api.expect(200, "GET", SLICES, query={"fieldSelector": selector})["items"]
        check(items == [], f"slice-stored: {selector} listed {items}")
    for bad, want in ((("spec.vendor=x",), "field label not supported: spec.vendor"),):
        code, answer = api.call("GET", SLICES, query={"fieldSelector": bad[0]})
        check(code == 400 and answer["message"] == want, f"slice-stored: {bad[0]}: {code} {answer['message']}")
    unknown = slice_object("u")
    unknown["spec"]["devices"][0]["vendor"] = "x"
    code, answer = api.call("POST", SLICES, unknown)
    want = 'strict decoding error: unknown field "spec.devices[0].vendor"'
    check(code == 400 and answer["message"] == want, f"slice-stored: unknown field: {code} {answer['message']}")
    mistyped = slice_object("m")
    mistyped["spec"]["pool"]["generation"] = "1"
    code, answer = api.call("POST", SLICES, mistyped)
    want = "json: cannot unmarshal string into Go struct field spec.pool.generation of type int64"
    check(code == 400 and answer["message"] == want, f"slice-stored: mistyped field: {code} {answer['message']}")
    api.expect(200, "DELETE", f"{SLICES}/{name}")
    print("ok slice-stored")


def check_slice_cases(api):
    for i, (field, reason, bad, fix) in enumerate(SLICE_CASES):
        what = f"slice-invalid {i} ({field} {reason})"
        body = slice_object(f"bad-{i}")
        bad(body)
        code, answer = api.call("POST", SLICES, body)
        expect_invalid(code, answer, "ResourceSlice", f"bad-{i}", field, reason, what)
        body = slice_object(f"fixed-{i}")
        fix(body)
        code, answer = api.call("POST", SLICES, body)
        check(code == 201, f"{what}: fixed: {code} {answer.get('message')}")
        api.expect(200, "DELETE", f"{SLICES}/fixed-{i}")
    print(f"ok slice-invalid ({len(SLICE_CASES)} rules)")


def check_claim_cases(api):
    for i, (field, reason, bad, fix, through_status) in enumerate(CLAIM_CASES):
        what = f"claim-invalid {i} ({field} {reason})"
        for name, change in ((f"bad-{i}", bad), (f"fixed-{i}", fix)):
            body = claim_object(name)
            if through_status:
                body = api.expect(201, "POST", CLAIMS, body)
                change(body)
                code, answer = api.call("PUT", claim_path("ns", name) + "/status", body)
            else:
                change(body)
                code, answer = api.call("POST", CLAIMS, body)
            if name.startswith("bad"):
                expect_invalid(code, answer, "ResourceClaim", name, field, reason, what)
            else:
                check(code in (200, 201), f"{what}: fixed: {code} {answer.get('message')}")
    print(f"ok claim-invalid ({len(CLAIM_CASES)} rules)")


def check_claim_status(api):
    path = claim_path("ns", "st")
    body = claim_object("st")
    body["status"] = results(1)
    stored = api.expect(201, "POST", CLAIMS, body)
    check(stored["status"] == {}, f"claim-status: created with status {stored['status']}")
    stored["status"] = results(1)
    kept = api.expect(200, "PUT", path, stored)
    check(kept["status"] == {}, f"claim-status: PUT of the claim wrote the status {kept['status']}")
    changed = copy.deepcopy(kept)
    changed["spec"]["devices"]["requests"][0]["name"] = "other"
    code, answer = api.call("PUT", path, changed)
    expect_invalid(code, answer, "ResourceClaim", "st", "spec", "FieldValueInvalid", "claim-status: spec changed")
    kept["status"] = results(1)
    kept["spec"]["devices"]["requests"][0]["exactly"]["count"] = 5
    kept["metadata"]["labels"] = {"a": "b"}
    written = api.expect(200, "PUT", path + "/status", kept)
    check(written["status"] == results(1), f"claim-status: status PUT wrote {written['status']}")
    check("count" not in written["spec"]["devices"]["requests"][0]["exactly"] and
          "labels" not in written["metadata"], f"claim-status: status PUT changed more: {written}")
    reserved = [{"resource": "pods", "name": "p", "uid": "u1"}]
    patched = api.expect(200, "PATCH", path + "/status", {"status": {"reservedFor": reserved}},
                         content_type="application/merge-patch+json")
    check(patched["status"]["reservedFor"] == reserved and patched["status"]["allocation"] == results(1)["allocation"],
          f"claim-status: PATCH of the status: {patched['status']}")
    patched["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-7"
    code, answer = api.call("PUT", path + "/status", patched)
    expect_invalid(code, answer, "ResourceClaim", "st", "status.allocation", "FieldValueInvalid",
                   "claim-status: allocation changed")
    stale = copy.deepcopy(kept)
    code, answer = api.call("PUT", path + "/status", stale)
    check(code == 409 and answer["reason"] == "Conflict", f"claim-status: a stale version: {code}")
    print("ok claim-status")


def run_kubelet(stubs, *args):
    return subprocess.run([sys.executable, os.path.join(HERE, "kubelet_dra.py"), "--registration-proto", stubs[0],
                           "--dra-proto", stubs[1], "--stubs", stubs[2], *args],
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


def answer_of(out, what):
    check(out.returncode == 0, f"{what}: exit {out.returncode}: {out.stderr.strip()}")
    lines = out.stdout.splitlines()
    check(len(lines) == 1, f"{what}: printed {out.stdout!r}, not one line")
    return json.loads(lines[0])


def check_wipe(api, folder, stubs):
    for name, node in (("a", "n1"), ("b", "n1"), ("c", "n2")):
        api.expect(201, "POST", SLICES, slice_object(name, node))
    answer = answer_of(run_kubelet(stubs, "wipe-slices", "--apiserver", folder, "--node", "n1"), "wipe-slices")
    check(sorted(answer["deleted"]) == ["a", "b"], f"wipe-slices: deleted {answer}")
    left = [i["metadata"]["name"] for i in api.expect(200, "GET", SLICES)["items"]]
    check(left == ["c"], f"wipe-slices: left {left}")
    api.expect(200, "DELETE", f"{SLICES}/c")
    print("ok wipe-slices")


def check_allocate(api, folder, stubs):
    published = devices(2, True)  # gpu-0 tainted NoSchedule
    api.expect(201, "POST", SLICES, slice_object("n1-slice", "n1", published))
    out = run_kubelet(stubs, "create-claim", "--apiserver", folder, "--namespace", "ns", "--name", "alloc",
                      "--request", "gpu")
    uid = answer_of(out, "allocate: create-claim")["uid"]
    claim = api.expect(200, "GET", claim_path("ns", "alloc"))
    check(claim["metadata"]["uid"] == uid and claim["spec"]["devices"]["requests"] == [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}}],
        f"allocate: created {claim}")
    for device, why in (("n1/gpu-9", 'pool "n1" (generation 0) has no device "gpu-9"'),
                        ("n2/gpu-1", 'no ResourceSlice of driver gpu.nvidia.com publishes pool "n2"'),
                        ("n1/gpu-0", "device n1/gpu-0 is tainted example.com/broken=:NoSchedule")):
        out = run_kubelet(stubs, "allocate", "--apiserver", folder, "--claim", "ns/alloc", "--device", device)
        check(out.returncode == 1 and why in out.stderr and len(out.stderr.splitlines()) == 1,
              f"allocate {device}: {out.returncode} {out.stderr!r}")
    out = run_kubelet(stubs, "allocate", "--apiserver", folder, "--claim", "ns/alloc", "--device", "n1/gpu-1,gpu")
    allocation = answer_of(out, "allocate")["status"]["allocation"]
    check(allocation["devices"]["results"] == [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1",
                                                "device": "gpu-1"}] and
          allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
              {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]} and
          allocation["allocationTimestamp"].endswith("Z"), f"allocate: {allocation}")
    api.expect(200, "DELETE", f"{SLICES}/n1-slice")
    print("ok allocate")


class FakePlugin:
    """A DRA plugin: Registration on registry/<name>.sock answering `info` (endpoint filled in unless given)
    and DRAPlugin of `versions` on dir/dra.sock, recording what it is told."""

    def __init__(self, stubs, folder, versions, **info):
        os.makedirs(os.path.join(folder, "registry"))
        self.registry, self.endpoint = os.path.join(folder, "registry"), os.path.join(folder, "dra.sock")
        self.notified, self.calls = queue.Queue(), queue.Queue()
        reg_pb, reg_grpc = stubs["registration"]
        fields = {"type": "DRAPlugin", "name": "gpu.nvidia.com", "endpoint": self.endpoint,
                  "supported_versions": [f"{v}.DRAPlugin" for v in versions], **info}
        plugin = self

        class Registration(reg_grpc.RegistrationServicer):
            def GetInfo(self, request, context):
                return reg_pb.PluginInfo(**fields)

            def NotifyRegistrationStatus(self, request, context):
                plugin.notified.put((request.plugin_registered, request.error))
                return reg_pb.RegistrationStatusResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        reg_grpc.add_RegistrationServicer_to_server(Registration(), self.server)
        for version in versions:
            reg = self.dra_servicer(version, *stubs[version])
            stubs[version][1].add_DRAPluginServicer_to_server(reg, self.server)
        check(self.server.add_insecure_port("unix:" + self.endpoint) != 0, "cannot listen on dra.sock")
        check(self.server.add_insecure_port("unix:" + os.path.join(self.registry, "gpu.nvidia.com-reg.sock")) != 0,
              "cannot listen in the registry")
        self.server.start()

    def dra_servicer(self, version, pb, pb_grpc):
        plugin = self

        class Dra(pb_grpc.DRAPluginServicer):
            def NodePrepareResources(self, request, context):
                plugin.calls.put((version, "prepare", [(c.namespace, c.name, c.uid) for c in request.claims]))
                return pb.NodePrepareResourcesResponse(claims={c.uid: pb.NodePrepareResourceResponse(devices=[
                    pb.Device(request_names=["gpu"], pool_name="n1", device_name=f"gpu-{i}",
                              cdi_device_ids=[f"k8s.gpu.nvidia.com/claim={c.uid}-gpu-{i}"])])
                    for i, c in enumerate(request.claims)})

            def NodeUnprepareResources(self, request, context):
                plugin.calls.put((version, "unprepare", [(c.namespace, c.name, c.uid) for c in request.claims]))
                return pb.NodeUnprepareResourcesResponse(claims={
                    c.uid: pb.NodeUnprepareResourceResponse(error="" if i == 0 else "not prepared")
                    for i, c in enumerate(request.claims)})
        return Dra()

    def next(self, source, what):
        try:
            return source.get(timeout=TIMEOUT)
        except queue.Empty:
            raise Failure(f"{what}: nothing within {TIMEOUT} s") from None

    def stop(self):
        self.server.stop(None).wait()


def check_register(stubs, paths, root):
    plugin = FakePlugin(stubs, os.path.join(root, "beta"), ["v1beta1"])
    try:
        answer = answer_of(run_kubelet(paths, "register", "--registry", plugin.registry), "register-v1beta1")
        check(answer == {"name": "gpu.nvidia.com", "endpoint": plugin.endpoint, "versions": ["v1beta1.DRAPlugin"],
                         "chosen": "v1beta1"}, f"register-v1beta1: {answer}")
        check(plugin.next(plugin.notified, "register-v1beta1") == (True, ""), "register-v1beta1: notified")
        print("ok register-v1beta1")
        claims = ["ns/a/uid-a", "ns/b/uid-b"]
        args = ["--endpoint", plugin.endpoint, "--version", "v1beta1", *sum((["--claim", c] for c in claims), [])]
        answer = answer_of(run_kubelet(paths, "prepare", *args), "prepare")
        want = {f"uid-{n}": {"devices": [{"request_names": ["gpu"], "pool_name": "n1", "device_name": f"gpu-{i}",
                                          "cdi_device_ids": [f"k8s.gpu.nvidia.com/claim=uid-{n}-gpu-{i}"]}],
                             "error": ""} for i, n in enumerate("ab")}
        check(answer == want, f"prepare: {answer}")
        sent = [("ns", "a", "uid-a"), ("ns", "b", "uid-b")]
        check(plugin.next(plugin.calls, "prepare") == ("v1beta1", "prepare", sent), "prepare: the request")
        answer = answer_of(run_kubelet(paths, "unprepare", *args), "unprepare")
        check(answer == {"uid-a": {"error": ""}, "uid-b": {"error": "not prepared"}}, f"unprepare: {answer}")
        check(plugin.next(plugin.calls, "unprepare") == ("v1beta1", "unprepare", sent), "unprepare: the request")
        out = run_kubelet(paths, "prepare", "--endpoint", plugin.endpoint, "--version", "v1", "--claim", claims[0])
        check(out.returncode == 1 and "v1 NodePrepareResources: UNIMPLEMENTED" in out.stderr,
              f"prepare: v1 on a v1beta1 plugin: {out.returncode} {out.stderr!r}")
        check(plugin.calls.empty(), "prepare: v1 reached the v1beta1 plugin")
        print("ok prepare")
    finally:
        plugin.stop()
    plugin = FakePlugin(stubs, os.path.join(root, "both"), ["v1", "v1beta1"])
    try:
        answer = answer_of(run_kubelet(paths, "register", "--registry", plugin.registry), "register-v1")
        check(answer["chosen"] == "v1", f"register-v1: {answer}")
        check(plugin.next(plugin.notified, "register-v1") == (True, ""), "register-v1: notified")
        answer = answer_of(run_kubelet(paths, "prepare", "--endpoint", plugin.endpoint, "--claim", "ns/c/uid-c"),
                           "register-v1: prepare")
        check(list(answer) == ["uid-c"] and plugin.next(plugin.calls, "register-v1")[0] == "v1",
              f"register-v1: prepare {answer}")
        print("ok register-v1")
    finally:
        plugin.stop()
    refusals = [("type", {"type": "CSIPlugin"}, 'plugin type "CSIPlugin" is not "DRAPlugin"'),
                ("endpoint", {"endpoint": ""}, "the plugin's endpoint is empty"),
                ("relative", {"endpoint": "dra.sock"}, 'endpoint "dra.sock" is not the absolute path of a socket'),
                ("versions", {"supported_versions": ["v2.DRAPlugin"]}, "none of the supported versions")]
    for name, info, why in refusals:
        plugin = FakePlugin(stubs, os.path.join(root, name), ["v1"], **info)
        try:
            out = run_kubelet(paths, "register", "--registry", plugin.registry)
            check(out.returncode == 1 and out.stderr.startswith("kubelet_dra.py: error: registration of ") and
                  why in out.stderr and len(out.stderr.splitlines()) == 1 and out.stdout == "",
                  f"register-refused {name}: {out.returncode} {out.stderr!r}")
            registered, error = plugin.next(plugin.notified, f"register-refused {name}")
            check(not registered and why in error, f"register-refused {name}: notified ({registered}, {error!r})")
        finally:
            plugin.stop()
    print("ok register-refused")


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    types, registration_proto, dra_proto, stubs_dir = argv[1:]
    for path in (types, registration_proto, dra_proto):
        check(os.path.isfile(path), f"{path}: no such file (scripts/deps.sh plugin fetches it)")
    stubs = kubelet_dra.load_protos(registration_proto, dra_proto, stubs_dir)
    paths = (registration_proto, dra_proto, stubs_dir)
    with tempfile.TemporaryDirectory(prefix="gpuctk-dra-standins-") as root:
        check_missing_constant(root, types)
        check_no_resource_types(root)
        folder = os.path.join(root, "api")
        server = ApiServer(folder, "--resource-types", types)
        try:
            check_slice_stored(server.api)
            check_slice_cases(server.api)
            check_claim_cases(server.api)
            check_claim_status(server.api)
            check_wipe(server.api, folder, paths)
            check_allocate(server.api, folder, paths)
        finally:
            server.close()
        check_register(stubs, paths, root)
    return 0


if __name__ == "__main__":
    run_main(main, kubelet_dra.KubeletError)
