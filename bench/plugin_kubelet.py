#!/usr/bin/python3
"""The device plugin's benchmark client (bench/plugin.sh runs it): the kubelet stand-in of
tests/plugin/kubelet.py (its Registration server, imported, not copied) driving gpuctk-device-plugin on the
DGX-A100-like fixture host (8 GPUs, the mock NVML) and timing it. Measures, never asserts.

    plugin_kubelet.py PLUGIN FIXTURE_TOOL API_PROTO STUBS_DIR [--calls N] [--starts N] [--smaps]
                      [--client PLUGIN_CLIENT]

Prints one line per number:
  start          start to registered: from the daemon's fork to its Register call arriving at kubelet.sock
                 (--starts runs; median, max)
  floor          GetDevicePluginOptions, an RPC whose handler does nothing: python gRPC's client, the
                 socket and gRPC's server dispatch, i.e. what every latency below carries besides Allocate
  allocate-1/8   Allocate of 1 and of 8 GPUs (median, max of --calls calls each), for the default
                 deviceListStrategy (envvar) and for envvar + volume-mounts + cdi-annotations
  rss            the daemon's resident set (VmRSS) after registering, after 1 000 and 10 000 Allocate calls
                 (half of 1 GPU, half of 8), and its peak (VmHWM) at the end
  C++ client     (--client: bench/plugin_client, the same calls from C++ with the generated stubs) the
                 floor and Allocate again for each strategy, without python's client cost
  smaps          (--smaps) the resident kiB at the end per mapping kind (/proc/PID/smaps): each shared
                 library's text and data, the heap, anonymous mappings (glibc arenas, thread stacks)
"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "tests", "plugin"))
import kubelet  # noqa: E402 (the stand-in: Kubelet, materialise, check, Failure; skips without grpc)

grpc = kubelet.grpc


def stats_ms(samples_ns):
    return "median %.3f ms  max %.3f ms" % (statistics.median(samples_ns) / 1e6, max(samples_ns) / 1e6)


def status_kib(pid, key):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise kubelet.Failure(f"/proc/{pid}/status has no {key}")


def mib(kib):
    return "%.1f MiB" % (kib / 1024)


def smaps_breakdown(pid):
    """Resident kiB per mapping kind: a file's name (text r-x, data rw-/r--), [heap], [stack], anon."""
    totals = {}
    name = None
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
                perms = fields[1]
                path = fields[5] if len(fields) >= 6 else "anon"
                kind = "text" if "x" in perms else "data"
                name = f"{os.path.basename(path)} ({kind})" if path.startswith("/") else path
            elif fields[0] == "Rss:":
                totals[name] = totals.get(name, 0) + int(fields[1])
    return sorted(((kib, name) for name, kib in totals.items() if kib > 0), reverse=True)


class Daemon:
    """gpuctk-device-plugin started against the fixture, registered with a fresh stand-in kubelet."""

    def __init__(self, pb, pb_grpc, command, plugins, extra=()):
        self.kubelet_sock = os.path.join(plugins, "kubelet.sock")
        self.kubelet = kubelet.Kubelet(pb, pb_grpc, self.kubelet_sock)
        start = time.perf_counter_ns()
        self.process = subprocess.Popen(list(command) + list(extra), stderr=subprocess.DEVNULL)
        request = self.kubelet.registration()
        self.start_ns = time.perf_counter_ns() - start
        self.socket = os.path.join(plugins, request.endpoint)
        self.channel = grpc.insecure_channel("unix:" + self.socket)
        self.stub = pb_grpc.DevicePluginStub(self.channel)

    def stop(self):
        self.channel.close()
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(timeout=kubelet.TIMEOUT)
        self.kubelet.stop()
        kubelet.check(status == 0, f"the daemon exited {status} on SIGTERM")


def timed(call, request, count):
    samples = []
    for _ in range(count):
        start = time.perf_counter_ns()
        call(request, timeout=kubelet.TIMEOUT)
        samples.append(time.perf_counter_ns() - start)
    return samples


def main(argv):
    args = argv[1:]
    options = {"--calls": 2000, "--starts": 10}
    smaps = "--smaps" in args
    args = [a for a in args if a != "--smaps"]
    client = None
    if "--client" in args:
        at = args.index("--client")
        client = args[at + 1]
        del args[at:at + 2]
    for flag in list(options):
        if flag in args:
            at = args.index(flag)
            options[flag] = int(args[at + 1])
            del args[at:at + 2]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    plugin, fixture_tool, proto, stubs = args
    pb, pb_grpc = kubelet.cri.load_stubs(proto, stubs)
    calls = options["--calls"]

    with tempfile.TemporaryDirectory(prefix="gpuctk-plugin-bench-") as lab:
        driver_root, dev_root = kubelet.materialise(fixture_tool, "dgx-a100", os.path.join(lab, "host"))
        plugins = os.path.join(lab, "device-plugins")
        os.mkdir(plugins)
        command = [plugin, "--kubelet-socket", os.path.join(plugins, "kubelet.sock"), "--driver-root",
                   driver_root, "--container-driver-root", driver_root, "--dev-root", dev_root,
                   "--container-dev-root", dev_root]
        every = os.path.join(lab, "every-strategy.yaml")
        with open(every, "w", encoding="utf-8") as f:
            f.write("version: v1\nflags:\n  plugin:\n"
                    "    deviceListStrategy: [envvar, volume-mounts, cdi-annotations]\n")

        starts = []
        for _ in range(options["--starts"]):
            daemon = Daemon(pb, pb_grpc, command, plugins)
            starts.append(daemon.start_ns)
            daemon.stop()
        print(f"start to registered ({len(starts)} starts): {stats_ms(starts)}")

        for name, extra in (("envvar", ()), ("envvar,volume-mounts,cdi-annotations", ("--config-file", every))):
            daemon = Daemon(pb, pb_grpc, command, plugins, extra)
            try:
                ids = [d.ID for d in next(iter(daemon.stub.ListAndWatch(pb.Empty(), timeout=kubelet.TIMEOUT))).devices]
                kubelet.check(len(ids) == 8, f"the fixture advertises {len(ids)} GPUs, not 8")
                one = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids[:1])])
                eight = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])
                timed(daemon.stub.Allocate, one, 200)  # warm-up: connection, allocator, caches
                if name == "envvar":
                    floor = timed(daemon.stub.GetDevicePluginOptions, pb.Empty(), calls)
                    print(f"floor (GetDevicePluginOptions, {calls} calls): {stats_ms(floor)}")
                for size, request in ((1, one), (8, eight)):
                    samples = timed(daemon.stub.Allocate, request, calls)
                    print(f"allocate {size} GPU{'s' if size > 1 else ''} ({name}, {calls} calls): "
                          f"{stats_ms(samples)}")
                if client:
                    out = subprocess.run([client, daemon.socket, str(calls)], capture_output=True, text=True,
                                         timeout=300, check=False)
                    kubelet.check(out.returncode == 0, f"{client}: exit {out.returncode}: {out.stderr.strip()}")
                    for line in out.stdout.splitlines():
                        print(f"{line} ({name})")
            finally:
                daemon.stop()

        # Memory: a fresh daemon, 10 000 Allocate calls, half of 1 GPU, half of 8.
        daemon = Daemon(pb, pb_grpc, command, plugins)
        try:
            pid = daemon.process.pid
            ids = [d.ID for d in next(iter(daemon.stub.ListAndWatch(pb.Empty(), timeout=kubelet.TIMEOUT))).devices]
            requests = [pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids[:1])]),
                        pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])]
            registered = status_kib(pid, "VmRSS")
            done = 0
            marks = {}
            for mark in (1000, 10000):
                while done < mark:
                    daemon.stub.Allocate(requests[done % 2], timeout=kubelet.TIMEOUT)
                    done += 1
                marks[mark] = status_kib(pid, "VmRSS")
            peak = status_kib(pid, "VmHWM")
            threads = status_kib(pid, "Threads")
            print(f"rss: registered {mib(registered)}  after 1000 Allocate {mib(marks[1000])}  after 10000 "
                  f"{mib(marks[10000])}  growth {marks[10000] - marks[1000]} kiB  peak (VmHWM) {mib(peak)}  "
                  f"threads {threads}")
            if smaps:
                for kib, what in smaps_breakdown(pid):
                    print(f"smaps {kib:7d} kiB  {what}")
        finally:
            daemon.stop()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (kubelet.Failure, kubelet.cri.CriError) as e:
        print(f"plugin_kubelet.py: error: {e}", file=sys.stderr)
        sys.exit(1)
