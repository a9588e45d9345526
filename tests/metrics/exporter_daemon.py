#!/usr/bin/python3
"""gpuctk-exporter end to end (test code): the daemon on the fixture host dgx-a100 (8 GPUs, the mock NVML),
scraped over HTTP as Prometheus scrapes it.

    exporter_daemon.py EXPORTER FIXTURE_TOOL

EXPORTER: gpuctk-exporter; FIXTURE_TOOL: gpuctk-fixture. The mock NVML's readings come from its telemetry
file (`nvml-telemetry` beside `nvml-mock.conf`, fixtures/mock_nvml/mock_nvml.h), its events from a FIFO
($GPUCTK_MOCK_NVML_EVENTS).

Checks, in order, each printed as "ok <what>" (the first failure: "exporter_daemon.py: error: <what>" and
exit 1; a missing tool: "SKIP: <why>" and exit 77):
  bad-counters  a counters file that cannot be one: exit 1, one line on stderr
  listen        -a 127.0.0.1:0: one line "listening on 127.0.0.1:<port>" with the port it got
  values        every GPU's DCGM_FI_DEV_GPU_TEMP and DCGM_FI_DEV_POWER_USAGE (W) in /metrics are the
                file's (°C, mW), each with Hostname $NODE_NAME
  rewrite       new values in the file show up in a later collection
  http          HEAD /metrics 200 without a body, / links /metrics, /nope 404, POST 405, /health "ok"
  nvml-lost     `fail calls=NVML_ERROR_GPU_IS_LOST`: /health 503 naming it, nvml_up 0, no GPU metric;
                the record removed: /health 200 and the GPUs' values again, without a restart
  xid           an Xid 79 of GPU 3 on the events FIFO: DCGM_FI_DEV_XID_ERRORS of GPU 3 is 79
  sigterm       SIGTERM: exit 0
  no-kubelet    -k with no pod-resources socket: one warning line however many collections, the GPUs'
                values served without pod labels, /health 200
  tls-auth      with --web-config-file (TLS, basic auth, a header): the right password 200 over TLS, a
                wrong one and none 401 with WWW-Authenticate, plain HTTP gets no HTTP answer, the
                header on every answer; SIGTERM exit 0
  client-cert   with RequireAndVerifyClientCert: a client certificate of the CA 200, none refused
"""
import http.client
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from daemon_test import (TIMEOUT, Daemon, Failure, check, host_gpus, import_yaml,  # noqa: E402
                         main as run_main, materialise, nvml_conf, skip)

INTERVAL_MS = 200
yaml = import_yaml()


SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """The samples of an exposition: [(name, {label: value}, value)]."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        check(m is not None, f"not an exposition line: {line!r}")
        samples.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), m.group(3)))
    return samples


def by_uuid(samples, name):
    return {labels.get("UUID"): value for n, labels, value in samples if n == name and "GPU_I_ID" not in labels}


def own(samples, name):
    values = [value for n, _, value in samples if n == name]
    check(len(values) == 1, f"{name}: {values}")
    return values[0]


class Client:
    """One keep-alive connection, as Prometheus keeps one per target."""

    def __init__(self, port, context=None):
        self.port, self.context = port, context
        self.conn = None

    def request(self, method, path, headers=None):
        for attempt in range(2):
            if self.conn is None:
                if self.context is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
                else:
                    self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=TIMEOUT,
                                                            context=self.context)
            try:
                self.conn.request(method, path, headers=headers or {})
                response = self.conn.getresponse()
                body = response.read()
                return response.status, dict(response.getheaders()), body.decode()
            except (ConnectionError, http.client.RemoteDisconnected):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def metrics(self):
        status, headers, body = self.request("GET", "/metrics")
        check(status == 200, f"/metrics: {status}")
        check(headers.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8",
              f"/metrics: Content-Type {headers.get('Content-Type')!r}")
        return parse(body)


def until(what, probe):
    """probe() until it returns something true, at most TIMEOUT seconds; the last value otherwise fails."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not within {TIMEOUT} s (last: {got!r})")
        time.sleep(INTERVAL_MS / 1000 / 2)


class Exporter(Daemon):
    def __init__(self, command, env, log_path):
        super().__init__(command, log_path, env)
        self.port = None

    def listening(self):
        def probe():
            m = re.search(r"^gpuctk-exporter: listening on 127\.0\.0\.1:(\d+)$", self.log(), re.M)
            check(self.process.poll() is None, f"the daemon exited {self.process.returncode}: {self.log()}")
            return m and int(m.group(1))
        self.port = until("listening", probe)
        check(self.port != 0, "listening on port 0")
        return self.port

    def terminate(self):
        self.process.send_signal(signal.SIGTERM)
        return self.wait("SIGTERM")


def write_telemetry(path, lines):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    os.rename(path + ".tmp", path)  # the mock never reads half a file


def telemetry(uuids, base):
    return [f"sample\tuuid={u}\tgpu_temp={base + i}\tpower_mw={1000 * (base + 100 + i) + 500}"
            for i, u in enumerate(uuids)]


def write_fifo(path, line):
    """Writes one line once the mock has the FIFO open (it opens it with the event set)."""
    def probe():
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return None
    fd = until("the events FIFO's reader", probe)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def check_bad_counters(exporter, lab, env):
    counters = os.path.join(lab, "bad.csv")
    with open(counters, "w", encoding="utf-8") as f:
        f.write("DCGM_FI_DEV_GPU_TEMP gauge\n")
    out = subprocess.run([exporter, "-f", counters, "-a", "127.0.0.1:0"], env=env, capture_output=True,
                         text=True, timeout=TIMEOUT, check=False)
    check(out.returncode == 1, f"bad counters: exit {out.returncode}, not 1")
    lines = out.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith(f"gpuctk-exporter: error: {counters}:1: "),
          f"bad counters: stderr {out.stderr!r}")
    print("ok bad-counters")


def until_metrics(client, what, predicate):
    """Scrapes until predicate(samples) holds, at most TIMEOUT seconds; returns those samples."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        samples = client.metrics()
        if predicate(samples):
            return samples
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not within {TIMEOUT} s (last: {samples})")
        time.sleep(INTERVAL_MS / 1000 / 2)


def check_values(client, uuids, base):
    want = {u: str(base + i) for i, u in enumerate(uuids)}
    samples = until_metrics(client, f"DCGM_FI_DEV_GPU_TEMP {want}",
                            lambda s: by_uuid(s, "DCGM_FI_DEV_GPU_TEMP") == want)
    power = {u: float(v) for u, v in by_uuid(samples, "DCGM_FI_DEV_POWER_USAGE").items()}
    want_power = {u: base + 100 + i + 0.5 for i, u in enumerate(uuids)}  # W, from the file's mW
    check(power == want_power, f"DCGM_FI_DEV_POWER_USAGE: {power}, not {want_power}")


def check_http(client):
    status, headers, body = client.request("HEAD", "/metrics")
    check(status == 200 and body == "", f"HEAD /metrics: {status} {body[:80]!r}")
    status, headers, body = client.request("GET", "/")
    check(status == 200 and 'href="./metrics"' in body and headers["Content-Type"].startswith("text/html"),
          f"/: {status} {headers} {body!r}")
    status, _, _ = client.request("GET", "/nope")
    check(status == 404, f"/nope: {status}")
    status, headers, _ = client.request("POST", "/metrics", headers={"Content-Length": "0"})
    check(status == 405 and headers.get("Allow") == "GET, HEAD", f"POST /metrics: {status} {headers}")
    status, _, body = client.request("GET", "/health")
    check((status, body) == (200, "ok\n"), f"/health: {status} {body!r}")
    print("ok http")


def check_nvml_lost(client, path, uuids):
    write_telemetry(path, telemetry(uuids, 50) + ["fail\tcalls=NVML_ERROR_GPU_IS_LOST"])

    def lost():
        status, _, body = client.request("GET", "/health")
        return status == 503 and body
    body = until("/health 503", lost)
    check(body.endswith("\n") and body.count("\n") == 1 and "GPU is lost" in body, f"/health: {body!r}")
    samples = client.metrics()
    check(own(samples, "gpuctk_exporter_nvml_up") == "0", "nvml_up is not 0")
    check(not any(n.startswith("DCGM_") for n, _, _ in samples), "GPU metrics while NVML is lost")
    write_telemetry(path, telemetry(uuids, 60))
    until("/health 200 again", lambda: client.request("GET", "/health")[0] == 200)
    check_values(client, uuids, 60)
    check(own(client.metrics(), "gpuctk_exporter_nvml_up") == "1", "nvml_up is not 1 again")
    print("ok nvml-lost")


def check_xid(client, events, uuids):
    write_fifo(events, f"xid\tuuid={uuids[3]}\txid=79\n")
    samples = until_metrics(client, "DCGM_FI_DEV_XID_ERRORS of GPU 3",
                            lambda s: uuids[3] in by_uuid(s, "DCGM_FI_DEV_XID_ERRORS"))
    xids = by_uuid(samples, "DCGM_FI_DEV_XID_ERRORS")
    check(xids == {uuids[3]: "79"}, f"DCGM_FI_DEV_XID_ERRORS: {xids}, not 79 for GPU 3 alone")
    print("ok xid")


def check_no_kubelet(command, env, lab, uuids):
    socket_path = os.path.join(lab, "no-kubelet.sock")
    daemon = Exporter(command + ["-k", "-p", socket_path], env, os.path.join(lab, "no-kubelet.log"))
    try:
        client = Client(daemon.listening())
        until_metrics(client, "collections with -k", lambda s: int(own(s, "gpuctk_exporter_collections_total")) >= 3)
        samples = client.metrics()
        check(len(by_uuid(samples, "DCGM_FI_DEV_GPU_TEMP")) == len(uuids), "-k without a kubelet: GPU values missing")
        check(not any("pod" in labels for n, labels, _ in samples), "-k without a kubelet: pod labels")
        check(client.request("GET", "/health")[0] == 200, "-k without a kubelet: /health not 200")
        check(daemon.terminate() == 0, f"-k: SIGTERM: exit {daemon.process.returncode}")
        warnings = [line for line in daemon.log().splitlines() if "pod-resources" in line]
        check(len(warnings) == 1 and socket_path in warnings[0], f"-k without a kubelet: warnings {warnings}")
    finally:
        daemon.kill()
    print("ok no-kubelet")


def openssl(*args):
    out = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    check(out.returncode == 0, f"openssl {' '.join(args)}: {out.stderr.strip()}")


def make_certificates(lab):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    ca_key, ca = os.path.join(lab, "ca.key"), os.path.join(lab, "ca.pem")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
            "-subj", "/CN=gpuctk test CA")
    for name, extension in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        key, csr, cert = (os.path.join(lab, f"{name}.{e}") for e in ("key", "csr", "pem"))
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
        ext = os.path.join(lab, f"{name}.ext")
        with open(ext, "w", encoding="utf-8") as f:
            f.write(extension + "\n")
        openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                "-days", "2", "-extfile", ext)
    return ca


def bcrypt(password):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt
            return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 5))
        except ImportError:
            pass
    if shutil.which("htpasswd") is None:
        skip("neither python3's crypt module nor htpasswd (apache2-utils) makes a bcrypt hash")
    out = subprocess.run(["htpasswd", "-nbB", "-C", "5", "u", password], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().split(":", 1)[1]


def basic(user, password):
    import base64
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def check_tls_auth(command, env, lab):
    ca = make_certificates(lab)
    config = os.path.join(lab, "web.yml")
    with open(config, "w", encoding="utf-8") as f:
        yaml.safe_dump({"tls_server_config": {"cert_file": os.path.join(lab, "server.pem"),
                                              "key_file": os.path.join(lab, "server.key")},
                        "basic_auth_users": {"prometheus": bcrypt("s3cret")},
                        "http_server_config": {"headers": {"X-Content-Type-Options": "nosniff"}}}, f)
    daemon = Exporter(command + ["--web-config-file", config], env, os.path.join(lab, "tls.log"))
    try:
        port = daemon.listening()
        context = ssl.create_default_context(cafile=ca)
        client = Client(port, context)
        status, headers, body = client.request("GET", "/metrics", basic("prometheus", "s3cret"))
        check(status == 200 and "gpuctk_exporter_nvml_up" in body, f"right password: {status}")
        check(headers.get("X-Content-Type-Options") == "nosniff", f"right password: headers {headers}")
        for what, auth in (("wrong password", basic("prometheus", "nope")), ("no password", {})):
            status, headers, _ = client.request("GET", "/metrics", auth)
            check(status == 401 and headers.get("WWW-Authenticate") == 'Basic realm="gpuctk-exporter"' and
                  headers.get("X-Content-Type-Options") == "nosniff", f"{what}: {status} {headers}")
        plain = Client(port)
        try:
            status, _, _ = plain.request("GET", "/metrics", basic("prometheus", "s3cret"))
            raise Failure(f"plain HTTP on the TLS port: {status}")
        except (http.client.HTTPException, ConnectionError, socket.timeout):
            pass
        check(daemon.terminate() == 0, f"SIGTERM with TLS: exit {daemon.process.returncode}")
    finally:
        daemon.kill()
    print("ok tls-auth")

    with open(config, "w", encoding="utf-8") as f:
        yaml.safe_dump({"tls_server_config": {"cert_file": os.path.join(lab, "server.pem"),
                                              "key_file": os.path.join(lab, "server.key"),
                                              "client_ca_file": ca,
                                              "client_auth_type": "RequireAndVerifyClientCert"}}, f)
    daemon = Exporter(command + ["--web-config-file", config], env, os.path.join(lab, "mtls.log"))
    try:
        port = daemon.listening()
        context = ssl.create_default_context(cafile=ca)
        context.load_cert_chain(os.path.join(lab, "client.pem"), os.path.join(lab, "client.key"))
        status, _, _ = Client(port, context).request("GET", "/health")
        check(status in (200, 503), f"with a client certificate: {status}")
        try:
            status, _, _ = Client(port, ssl.create_default_context(cafile=ca)).request("GET", "/health")
            raise Failure(f"without a client certificate: {status}")
        except (http.client.HTTPException, ConnectionError, ssl.SSLError, socket.timeout):
            pass
        check(daemon.terminate() == 0, f"SIGTERM with client certificates: exit {daemon.process.returncode}")
    finally:
        daemon.kill()
    print("ok client-cert")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    exporter, fixture_tool = argv[1:]
    uuids = [g["uuid"] for g in host_gpus()]
    with tempfile.TemporaryDirectory(prefix="gpuctk-exporter-") as lab:
        driver_root, _ = materialise(fixture_tool, "dgx-a100", os.path.join(lab, "host"))
        path = os.path.join(os.path.dirname(nvml_conf(driver_root)), "nvml-telemetry")
        write_telemetry(path, telemetry(uuids, 40))
        events = os.path.join(lab, "nvml-events")
        os.mkfifo(events)
        env = dict(os.environ, GPUCTK_MOCK_NVML_EVENTS=events, NODE_NAME="node-1")
        command = [exporter, "-a", "127.0.0.1:0", "-c", str(INTERVAL_MS), "--driver-root", driver_root]
        check_bad_counters(exporter, lab, env)

        daemon = Exporter(command, env, os.path.join(lab, "exporter.log"))
        try:
            client = Client(daemon.listening())
            print("ok listen")
            check_values(client, uuids, 40)
            hostnames = {labels.get("Hostname") for n, labels, _ in client.metrics() if n.startswith("DCGM_")}
            check(hostnames == {"node-1"}, f"Hostname labels: {hostnames}")
            print("ok values")
            write_telemetry(path, telemetry(uuids, 70))
            check_values(client, uuids, 70)
            print("ok rewrite")
            check_http(client)
            check_nvml_lost(client, path, uuids)
            check_xid(client, events, uuids)
            check(daemon.terminate() == 0, f"SIGTERM: exit {daemon.process.returncode}")
            print("ok sigterm")
        finally:
            daemon.kill()
        check_no_kubelet(command, env, lab, uuids)
        check_tls_auth(command, env, lab)
    return 0


if __name__ == "__main__":
    run_main(main)
