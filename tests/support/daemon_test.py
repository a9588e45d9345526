"""What the python end-to-end tests of gpuctk's daemons share (test code: tests/plugin/kubelet.py,
tests/plugin/mps_control_daemon.py, tests/metrics/exporter_daemon.py, tests/metrics/prometheus_e2e.py,
tests/metrics/podresources_stub.py), imported through the script's own path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
    from daemon_test import Failure, check, ...  # noqa: E402

The conventions they share: a check that fails raises Failure, which `main` turns into one line
"<script>: error: <what>" and exit 1; a test that cannot run here prints "SKIP: <why>" and exits 77 (ctest's
SKIP_RETURN_CODE), never a pass.
"""
import os
import subprocess
import sys
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 30  # seconds for anything a daemon does (2 shared cores: never near it when healthy)


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def skip(why):
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(77)


def import_grpc(packages="python3-grpcio, python3-grpc-tools"):
    """grpc and tests/engines/cri.py (its load_stubs, shared), or a skip naming the module python3 lacks and
    the Debian `packages` that bring it (scripts/deps.sh test)."""
    try:
        import grpc
        import grpc_tools.protoc  # noqa: F401 (cri.load_stubs runs it)
    except ImportError as e:
        skip(f"{sys.executable} cannot import {e.name} ({packages}: scripts/deps.sh test)")
    sys.path.insert(0, os.path.join(SOURCE, "tests", "engines"))
    import cri
    return grpc, cri


def import_yaml(packages="python3-yaml"):
    """yaml, or a skip as import_grpc's."""
    try:
        import yaml
    except ImportError as e:
        skip(f"{sys.executable} cannot import {e.name} ({packages}: scripts/deps.sh test)")
    return yaml


def host_gpus(host="dgx-a100"):
    """The GPUs of fixtures/hosts/<host>/host.yaml, as its manifest lists them."""
    with open(os.path.join(SOURCE, "fixtures", "hosts", host, "host.yaml"), encoding="utf-8") as f:
        return import_yaml().safe_load(f)["gpus"]


def materialise(tool, host, root):
    """`gpuctk-fixture materialize HOST ROOT`, which must give a host with the mock NVML: (driver root, dev
    root)."""
    out = subprocess.run([tool, "materialize", host, root], capture_output=True, text=True, check=False)
    check(out.returncode == 0, f"gpuctk-fixture materialize {host}: {out.stderr.strip()}")
    values = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    check(values.get("nvml") == "mock", f"{host}: the fixture has no mock NVML ({out.stdout.strip()})")
    return values["driver_root"], values["dev_root"]


def nvml_conf(driver_root):
    """The one nvml-mock.conf of a materialised driver root (the mock's data files lie beside it)."""
    found = [os.path.join(top, "nvml-mock.conf") for top, _, files in os.walk(driver_root)
             if "nvml-mock.conf" in files]
    check(len(found) == 1, f"nvml-mock.conf under {driver_root}: found {found}")
    return found[0]


class Daemon:
    """A daemon started with its stderr (and, with both=True, its stdout) in the file `log_path`, which the
    test reads back by its path (never through the daemon's own file offset). As a context manager: on an
    exception its log goes to stderr, and a daemon still running is killed."""

    def __init__(self, command, log_path, env=None, both=False, name="the daemon"):
        self.name, self.log_path = name, log_path
        self.log_file = open(log_path, "w", encoding="utf-8")
        self.process = subprocess.Popen(command, env=env, stdout=self.log_file if both else None,
                                        stderr=self.log_file)

    def log(self):
        with open(self.log_path, encoding="utf-8") as f:
            return f.read()

    def lines(self):
        return self.log().splitlines()

    def wait(self, what):
        """Its exit status within TIMEOUT seconds; `what` names the wait in the failure otherwise."""
        try:
            return self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Failure(f"{what}: still running {TIMEOUT} s later; {self.name}'s log:\n{self.log()}") from None

    def await_line(self, line, what):
        """`line` is logged within TIMEOUT seconds while the daemon runs."""
        deadline = time.monotonic() + TIMEOUT
        while line not in self.lines():
            check(self.process.poll() is None, f"{what}: {self.name} exited {self.process.returncode}")
            check(time.monotonic() < deadline, f"{what}: no line {line!r} within {TIMEOUT} s")
            time.sleep(0.05)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self):
        """Kills the daemon if it still runs; closes the log (still readable by log())."""
        self.kill()
        self.log_file.close()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, trace):
        if kind is not None:
            sys.stderr.write(f"{self.name}'s log:\n{self.log()}")
        self.close()


def main(run, *errors):
    """sys.exit(run(sys.argv)), a Failure (or one of `errors`) turned into one line
    "<script>: error: <what>" and exit 1."""
    try:
        sys.exit(run(sys.argv))
    except (Failure, *errors) as e:
        print(f"{os.path.basename(sys.argv[0])}: error: {e}", file=sys.stderr)
        sys.exit(1)
