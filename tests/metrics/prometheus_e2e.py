#!/usr/bin/python3
"""gpuctk-exporter scraped by Debian's real Prometheus (test code).

    prometheus_e2e.py EXPORTER FIXTURE_TOOL API_PROTO STUBS_DIR

EXPORTER: gpuctk-exporter; FIXTURE_TOOL: gpuctk-fixture; API_PROTO, STUBS_DIR: the kubelet's
podresources/v1 api.proto and where the stand-in generates its python stubs. Prometheus and promtool are Debian's
(/usr/bin, the prometheus package of scripts/deps.sh's test set), run as plain processes in a lab folder
(never the packaged service). The host is dgx-a100 (8 A100s, GPUs 4-7 in MIG mode), materialised with the
fixture builder; its mock NVML reads the readings from `nvml-telemetry` beside `nvml-mock.conf`, and
tests/metrics/podresources_stub.py stands in for the kubelet's pod-resources socket.

Checks, in order, each printed as "ok <what>" (the first failure: "prometheus_e2e.py: error: <what>" and
exit 1; the stand-in without Debian's python3 gRPC: "SKIP: <why>" and exit 77; every process is killed and
the lab removed either way):
  junk-counters   -f of a counters file with junk (an unknown type, a control character): exit 1 and one
                  line on stderr naming the file, the character escaped
  scrape          the exporter (-k, -p the stub's socket, -c 500, -a 127.0.0.1:0) serves /metrics and
                  /health; promtool check metrics parses the scrape and finds nothing but what
                  dcgm-exporter's own names cause (counters without _total, the camelCase modelName)
  prometheus      Prometheus scrapes it every second, through the ServiceMonitor's relabelling of
                  deploy/kubernetes/gpuctk-exporter.yaml (the exporter pod's target labels dropped), and its
                  HTTP API (/api/v1/query) returns the telemetry file's values with dcgm-exporter's labels:
                  a whole GPU with its pod's namespace, pod and container; a GPU two pods share as
                  time-slicing replicas (<uuid>::0, <uuid>::1): one series per pod, the same value; a MIG
                  device with GPU_I_ID, GPU_I_PROFILE and its pod; a GPU no pod holds without pod labels
  change          a value changed in the telemetry file comes back changed through Prometheus
  hostile-pods    pod-resources answers past the bounds: a device ID of 300 bytes in a pod whose name holds
                  control characters (one warning line, escaped, not repeated at the next collections; the
                  other pod's labels served), then 5000 pods (one line: the answer refused; the metrics
                  served without pod labels); the exporter keeps serving
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
STUB = os.path.join(HERE, "podresources_stub.py")
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
TIMEOUT = 60  # seconds for anything to show up (2 shared cores, Prometheus starting: never near it when healthy)
MIB = 1 << 20
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from daemon_test import Failure, check  # noqa: E402


class Skip(Exception):
    pass


def ok(what):
    print(f"ok {what}", flush=True)


def printable(text):
    """True when `text` has no control character but tab and newline (what an escaped log line looks like)."""
    return not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)


class Lab:
    """The test's folder and the processes it started; close() kills them (their process groups) and removes
    the folder."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gpuctk-prometheus-")
        self.processes = []

    def start(self, name, argv, **kwargs):
        log = open(os.path.join(self.dir, f"{name}.log"), "wb")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, **kwargs)
        process.log_path = log.name
        log.close()
        self.processes.append(process)
        return process

    def stop(self, process):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.remove(process)

    def close(self):
        for process in list(self.processes):
            try:
                self.stop(process)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def log_of(process):
    with open(process.log_path, "rb") as f:
        return f.read().decode(errors="replace")


def wait_for(what, probe, process=None):
    """Calls probe() until it returns something true, for at most TIMEOUT seconds; fails naming `what` (and
    the process's log when it exited)."""
    deadline = time.monotonic() + TIMEOUT
    last = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise Failure(f"{what}: the process exited ({process.returncode}): {log_of(process)[-2000:]}")
        try:
            result = probe()
            if result:
                return result
        except (OSError, urllib.error.URLError, ValueError, KeyError) as error:
            last = error
        time.sleep(0.2)
    raise Failure(f"{what}: nothing in {TIMEOUT} s (last error: {last})")


def free_port():
    """A TCP port nothing listens on now (Prometheus takes no port 0); a race is a failed start, retried."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode()


# ---- the host ----------------------------------------------------------------------------------------


class Host:
    """dgx-a100 materialised, its GPUs and MIG devices as the mock NVML's data file has them."""

    def __init__(self, lab, fixture_tool):
        out = subprocess.run([fixture_tool, "materialize", "dgx-a100", os.path.join(lab.dir, "host")],
                             capture_output=True, text=True, check=False)
        check(out.returncode == 0, f"gpuctk-fixture materialize dgx-a100: {out.stderr.strip()}")
        facts = dict(line.split("=", 1) for line in out.stdout.split() if "=" in line)
        self.driver_root = facts["driver_root"]
        confs = [os.path.join(d, "nvml-mock.conf") for d, _, files in os.walk(self.driver_root)
                 if "nvml-mock.conf" in files]
        check(len(confs) == 1, f"one nvml-mock.conf in the driver root, found {confs}")
        self.conf = confs[0]
        self.telemetry = os.path.join(os.path.dirname(self.conf), "nvml-telemetry")
        self.driver_version = None
        self.gpus = []  # {"index", "uuid", "name", "bus_id", "mig_mode", "migs": [{"uuid", "gi", "profile"}]}
        for line in open(self.conf):
            fields = line.rstrip("\n").split("\t")
            record = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
            if fields[0] == "driver":
                self.driver_version = record["version"]
            elif fields[0] == "gpu":
                self.gpus.append({"index": int(record["index"]), "uuid": record["uuid"], "name": record["name"],
                                  "bus_id": record["bus_id"], "minor": int(record["minor"]),
                                  "mig_mode": record.get("mig_mode") == "1", "migs": []})
            elif fields[0] == "mig":
                self.gpus[int(record["parent"])]["migs"].append(
                    {"uuid": record["uuid"], "gi": int(record["gi"]), "profile": record["profile"]})
        check(any(g["migs"] for g in self.gpus), f"dgx-a100 has no MIG device in {self.conf}")

    def write_telemetry(self, readings):
        """readings: {uuid: {key: value}}, written atomically (the mock may read it at any moment)."""
        lines = ["sample\tuuid=%s\t%s\n" % (uuid, "\t".join(f"{k}={v}" for k, v in values.items()))
                 for uuid, values in readings.items()]
        tmp = self.telemetry + ".tmp"
        with open(tmp, "w") as f:
            f.writelines(lines)
        os.rename(tmp, self.telemetry)


# ---- pod-resources ------------------------------------------------------------------------------------


def pod(namespace, name, container, resource, ids):
    return {"name": name, "namespace": namespace,
            "containers": [{"name": container, "devices": [{"resource_name": resource, "device_ids": ids}]}]}


def start_pod_resources(lab, api, name, pods):
    """The stand-in serving `pods` (the kubelet's v1 List answer) on a socket of its own; its path. `api`:
    (API_PROTO, STUBS_DIR)."""
    folder = os.path.join(lab.dir, name)
    os.mkdir(folder)
    pods_file = os.path.join(folder, "pods.json")
    with open(pods_file, "w") as f:
        json.dump({"pod_resources": pods}, f)
    sock = os.path.join(folder, "kubelet.sock")
    stub = lab.start(name, [sys.executable, STUB, *api, sock, "json", pods_file])

    def ready():
        if stub.poll() == 77:
            raise Skip(log_of(stub).strip())
        check(stub.poll() is None, f"{name}: the stand-in exited ({stub.returncode}): {log_of(stub)[-2000:]}")
        return "ready" in log_of(stub).split()

    wait_for(f"{name}: the pod-resources stand-in's 'ready'", ready)
    return sock


# ---- the exporter -------------------------------------------------------------------------------------


def start_exporter(lab, name, exporter, host, sock, extra=()):
    """gpuctk-exporter on an ephemeral port; returns (process, "127.0.0.1:<port>")."""
    argv = [exporter, "-k", "-p", sock, "-c", "500", "-a", "127.0.0.1:0", "--driver-root", host.driver_root,
            *extra]
    process = lab.start(name, argv, env={**os.environ, "NODE_NAME": "node-e2e"})

    def listening():
        m = re.search(r"gpuctk-exporter: listening on (127\.0\.0\.1:\d+)", log_of(process))
        return m and m.group(1)

    address = wait_for(f"{name}: 'gpuctk-exporter: listening on 127.0.0.1:<port>'", listening, process)
    return process, address


def check_junk_counters(lab, exporter, host):
    junk = os.path.join(lab.dir, "junk.csv")
    with open(junk, "wb") as f:
        f.write(b"# a counters file\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                b"DCGM_FI_DEV_FB_USED, histogram\x1b[2J, memory\n")
    out = subprocess.run([exporter, "-f", junk, "-a", "127.0.0.1:0", "--driver-root", host.driver_root],
                         capture_output=True, timeout=TIMEOUT, check=False)
    stderr = out.stderr.decode(errors="replace")
    lines = [line for line in stderr.splitlines() if line]
    check(out.returncode == 1, f"junk counters: exit {out.returncode}, want 1: {stderr!r}")
    check(len(lines) == 1, f"junk counters: {len(lines)} lines on stderr, want 1: {stderr!r}")
    check(junk in lines[0] and ":3:" in lines[0], f"junk counters: the line names no {junk}:3: {lines[0]!r}")
    check(printable(lines[0]), f"junk counters: a raw control character in {lines[0]!r}")
    check(out.stdout == b"", f"junk counters: stdout {out.stdout!r}")
    ok(f"junk-counters: exit 1, {lines[0]}")


def scrape(address):
    status, body = http_get(f"http://{address}/metrics")
    check(status == 200, f"/metrics: HTTP {status}")
    return body


def check_scrape(lab, address):
    status, _ = wait_for("/health", lambda: http_get(f"http://{address}/health"))
    check(status == 200, f"/health: HTTP {status}")
    body = wait_for("a scrape with DCGM_FI_DEV_GPU_TEMP",
                    lambda: (lambda b: "DCGM_FI_DEV_GPU_TEMP{" in b and b)(scrape(address)))
    path = os.path.join(lab.dir, "scrape.txt")
    with open(path, "w") as f:
        f.write(body)
    with open(path) as f:
        out = subprocess.run([PROMTOOL, "check", "metrics"], stdin=f, capture_output=True, text=True,
                             timeout=TIMEOUT, check=False)
    # promtool: 0 clean, 3 lint problems only, 1 a scrape it cannot parse.
    check(out.returncode in (0, 3), f"promtool check metrics: exit {out.returncode}: {out.stdout}{out.stderr}")
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))
    expected = set()
    for name, kind in types.items():
        if name.startswith("DCGM_"):
            expected.add(f"{name} label names should be written in 'snake_case' not 'camelCase'")
            if kind == "counter":
                expected.add(f'{name} counter metrics should have "_total" suffix')
    problems = {line.strip() for line in (out.stdout + out.stderr).splitlines() if line.strip()}
    unexpected = problems - expected
    check(not unexpected, f"promtool check metrics: problems other than dcgm-exporter's names: {sorted(unexpected)}")
    ok(f"scrape: {len(body.splitlines())} lines, {len(types)} metrics; promtool: {len(problems)} naming notes "
       "of dcgm-exporter's names, nothing else")
    return body


# ---- Prometheus ---------------------------------------------------------------------------------------


def start_prometheus(lab, target):
    """Prometheus scraping `target` every second, as the ServiceMonitor would (the target carries the
    exporter pod's own namespace, pod and container, which the relabelling drops). Returns its base URL."""
    folder = os.path.join(lab.dir, "prometheus")
    os.mkdir(folder)
    config = os.path.join(folder, "prometheus.yml")
    with open(config, "w") as f:
        json.dump({  # JSON is YAML
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{
                "job_name": "gpuctk-exporter",
                "scrape_timeout": "1s",
                "static_configs": [{"targets": [target], "labels": {
                    "namespace": "gpuctk", "pod": "gpuctk-exporter-x7k2p", "container": "exporter",
                    "__meta_kubernetes_pod_node_name": "node-e2e"}}],
                "relabel_configs": service_monitor_relabelings(),
            }],
        }, f)
    for attempt in range(3):
        port = free_port()
        process = lab.start(f"prometheus-{attempt}", [
            PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={folder}/data",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"])
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for("Prometheus ready", lambda: http_get(f"{base}/-/ready")[0] == 200, process)
            return base
        except Failure:
            if "address already in use" not in log_of(process):
                raise
            lab.stop(process)
    raise Failure("Prometheus: no free port in 3 attempts")


def service_monitor_relabelings():
    """The ServiceMonitor's relabelings, as Prometheus's relabel_configs."""
    import yaml  # python3-yaml: scripts/deps.sh test

    with open(os.path.join(SOURCE, "deploy/kubernetes/gpuctk-exporter.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    names = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    return [{names.get(k, k): v for k, v in r.items()} for r in endpoint["relabelings"]]


def query(base, promql):
    status, body = http_get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    answer = json.loads(body)
    check(status == 200 and answer["status"] == "success", f"query {promql}: {body[:500]}")
    return [(r["metric"], float(r["value"][1])) for r in answer["data"]["result"]]


def wait_for_series(base, promql, want):
    """Waits until `promql` returns exactly the series `want` ([(labels, value)], any order)."""
    key = lambda series: sorted((json.dumps(m, sort_keys=True), v) for m, v in series)
    last = []

    def probe():
        nonlocal last
        last = query(base, promql)
        return key(last) == key(want)

    try:
        wait_for(f"query {promql}", probe)
    except Failure:
        raise Failure(f"query {promql}: got {last}, want {want}")


def gpu_labels(host, gpu, metric):
    return {"__name__": metric, "gpu": str(gpu["index"]), "UUID": gpu["uuid"],
            "pci_bus_id": gpu["bus_id"], "device": f"nvidia{gpu['minor']}", "modelName": gpu["name"],
            "Hostname": "node-e2e", "DCGM_FI_DRIVER_VERSION": host.driver_version,
            "instance": "", "job": "gpuctk-exporter", "node": "node-e2e"}


def held(labels, namespace, name, container):
    return {**labels, "namespace": namespace, "pod": name, "container": container}


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    exporter, fixture_tool, *api = sys.argv[1:]
    lab = Lab()
    try:
        run(lab, exporter, fixture_tool, api)
    except Failure as failure:
        print(f"prometheus_e2e.py: error: {failure}", file=sys.stderr)
        return 1
    except Skip as why:
        print(why, file=sys.stderr)
        return 77
    finally:
        lab.close()
    return 0


def run(lab, exporter, fixture_tool, api):
    for tool in (PROMETHEUS, PROMTOOL):
        check(os.access(tool, os.X_OK), f"{tool} is missing (Debian's prometheus package: scripts/deps.sh test)")
    host = Host(lab, fixture_tool)
    whole, shared, unheld = host.gpus[0], host.gpus[1], host.gpus[2]
    mig_gpu = next(g for g in host.gpus if g["migs"])
    mig = mig_gpu["migs"][0]
    # The memory calls answer only when all their keys are there (fixtures/mock_nvml/mock_nvml.h); a MIG
    # device answers nothing else.
    memory = lambda used, free: {"fb_used": used * MIB, "fb_free": free * MIB, "fb_reserved": 0}
    readings = {whole["uuid"]: {"gpu_temp": 41, **memory(1000, 39000)},
                shared["uuid"]: {"gpu_temp": 52, **memory(2000, 38000)},
                unheld["uuid"]: {"gpu_temp": 33, **memory(0, 40000)},
                mig["uuid"]: memory(3000, 1864)}
    host.write_telemetry(readings)

    check_junk_counters(lab, exporter, host)

    sock = start_pod_resources(lab, api, "pod-resources", [
        pod("ml", "train-0", "main", "nvidia.com/gpu", [whole["uuid"]]),
        pod("ml", "share-a", "worker", "nvidia.com/gpu.shared", [shared["uuid"] + "::0"]),
        pod("web", "share-b", "worker", "nvidia.com/gpu.shared", [shared["uuid"] + "::1"]),
        pod("ml", "infer-0", "main", f"nvidia.com/mig-{mig['profile']}", [mig["uuid"]]),
    ])
    process, address = start_exporter(lab, "exporter", exporter, host, sock)
    check_scrape(lab, address)

    base = start_prometheus(lab, address)
    labels = lambda gpu, metric: {**gpu_labels(host, gpu, metric), "instance": address}
    temp = "DCGM_FI_DEV_GPU_TEMP"
    wait_for_series(base, f'{temp}{{UUID="{whole["uuid"]}"}}',
                    [(held(labels(whole, temp), "ml", "train-0", "main"), 41)])
    wait_for_series(base, f'{temp}{{UUID="{shared["uuid"]}"}}',
                    [(held(labels(shared, temp), "ml", "share-a", "worker"), 52),
                     (held(labels(shared, temp), "web", "share-b", "worker"), 52)])
    wait_for_series(base, f'{temp}{{UUID="{unheld["uuid"]}"}}', [(labels(unheld, temp), 33)])
    used = "DCGM_FI_DEV_FB_USED"
    mig_labels = {**labels(mig_gpu, used), "GPU_I_ID": str(mig["gi"]), "GPU_I_PROFILE": mig["profile"]}
    wait_for_series(base, f'{used}{{UUID="{mig_gpu["uuid"]}",GPU_I_ID="{mig["gi"]}"}}',
                    [(held(mig_labels, "ml", "infer-0", "main"), 3000)])
    wait_for_series(base, f'{used}{{UUID="{whole["uuid"]}"}}',
                    [(held(labels(whole, used), "ml", "train-0", "main"), 1000)])
    ok("prometheus: a whole GPU, two replicas' pods, a MIG device and a GPU no pod holds, with "
       "dcgm-exporter's labels")

    readings[whole["uuid"]]["gpu_temp"] = 77
    host.write_telemetry(readings)
    wait_for_series(base, f'{temp}{{UUID="{whole["uuid"]}"}}',
                    [(held(labels(whole, temp), "ml", "train-0", "main"), 77)])
    ok("change: 41 C became 77 C in Prometheus")
    lab.stop(process)

    check_hostile_pods(lab, api, exporter, host, whole)


def check_hostile_pods(lab, api, exporter, host, whole):
    """Odd names first, then, through the same stand-in (it reads its file at every List), a huge answer."""
    odd = "evil\x1b[2J\npod"
    kept = pod("ml", "train-0", "main", "nvidia.com/gpu", [whole["uuid"]])
    sock = start_pod_resources(lab, api, "pod-resources-hostile", [
        kept, pod("ml", odd, "main", "nvidia.com/gpu", ["GPU-" + "f" * 296])])
    process, address = start_exporter(lab, "exporter-hostile", exporter, host, sock)
    wait_for("the kept pod's label on a scrape", lambda: 'pod="train-0"' in scrape(address), process)
    time.sleep(2)  # a few collections more: a warning must not repeat while the answer stays the same
    odd_lines = warnings_of(process)
    check(len(odd_lines) == 1 and "300 bytes" in odd_lines[0] and "evil\\x1b[2J\\npod" in odd_lines[0],
          f"odd names: want one warning of the 300-byte device ID naming its pod escaped: {odd_lines}")

    # More pods than the client takes (NVIDIA resources, so that no filter before the bound drops them;
    # GPUs the host does not have).
    huge = [kept] + [pod("filler", f"p{i}", "c", "nvidia.com/gpu", [f"GPU-filler-{i}"]) for i in range(5000)]
    pods_file = os.path.join(os.path.dirname(sock), "pods.json")
    with open(pods_file + ".tmp", "w") as f:
        json.dump({"pod_resources": huge}, f)
    os.rename(pods_file + ".tmp", pods_file)
    wait_for("the pod labels gone after the huge answer", lambda: 'pod="train-0"' not in scrape(address), process)
    check('UUID="%s"' % whole["uuid"] in scrape(address), "the huge answer: the GPU's metrics are gone too")
    time.sleep(2)
    huge_lines = warnings_of(process)[len(odd_lines):]
    check(len(huge_lines) == 1 and "4096" in huge_lines[0], f"huge answer: want one warning line: {huge_lines}")
    status, _ = http_get(f"http://{address}/health")
    check(status == 200 and process.poll() is None, f"/health: HTTP {status}")
    ok(f"hostile-pods: one line each, escaped, still serving: {odd_lines[0]} / {huge_lines[0]}")


def warnings_of(process):
    """The exporter's pod-resources lines so far; every line of its log must be free of control characters."""
    log = log_of(process)
    check(all(printable(line) for line in log.splitlines()), f"a raw control character in the log: {log!r}")
    return [line for line in log.splitlines() if "pod-resources" in line]


if __name__ == "__main__":
    sys.exit(main())
