#!/usr/bin/python3
"""gpuctk-exporter's benchmark client (bench/exporter.sh runs it). Measures, never asserts.

    exporter_bench.py EXPORTER DRIVER_ROOT [--scrapes N] [--cpu-seconds S]

DRIVER_ROOT: a materialised fixture host whose mock NVML serves 8 A100s in MIG mode with 7 1g.5gb devices
each (exporter.sh writes that nvml-mock.conf over dgx-a100's). The exporter runs with -c 1000 on
127.0.0.1:<any port>, without -k. Prints one line per number:
  size        one scrape's bytes, lines and devices (GPUs and MIG devices)
  floor       GET /health over the same keep-alive connection: python's client, the socket and the
              exporter's HTTP handling, which every scrape below carries besides the exposition
  scrape      GET /metrics, N times on one keep-alive connection (median, p99, max)
  rss         the exporter's resident set (VmRSS) before the scrapes, after them, and its peak (VmHWM)
  cpu         the exporter's CPU (utime + stime, /proc/PID/stat) over S seconds at one scrape per second,
              as % of one core
  collection  gpuctk_exporter_last_collection_duration_seconds, per device and per GPU (the median of
              the values seen during the CPU run)
"""
import argparse
import http.client
import os
import re
import signal
import statistics
import subprocess
import sys
import time

TIMEOUT = 30


def status_kib(pid, key):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise SystemExit(f"exporter_bench.py: /proc/{pid}/status has no {key}")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        # The command name may hold spaces and parentheses: the fields after its last ')' are fixed.
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))


def mib(kib):
    return "%.1f MiB" % (kib / 1024)


def ms(samples_ns, q):
    return sorted(samples_ns)[min(len(samples_ns) - 1, int(len(samples_ns) * q))] / 1e6


def start(exporter, driver_root, log_path):
    """The exporter with its log in a file (a pipe nobody reads would block it); (process, port)."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen([exporter, "-c", "1000", "-a", "127.0.0.1:0", "--driver-root", driver_root],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
        if m:
            return process, int(m.group(1))
        if process.poll() is not None:
            raise SystemExit(f"exporter_bench.py: the exporter exited ({process.returncode})")
        time.sleep(0.05)
    raise SystemExit("exporter_bench.py: the exporter never said where it listens")


def get(connection, path):
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        raise SystemExit(f"exporter_bench.py: GET {path}: HTTP {response.status}")
    return body


def timed(connection, path, n):
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        get(connection, path)
        samples.append(time.perf_counter_ns() - t0)
    return samples


def collection_seconds(body):
    m = re.search(rb"^gpuctk_exporter_last_collection_duration_seconds(?:\{[^}]*\})? (\S+)$", body, re.M)
    return float(m.group(1)) if m else None


def devices_of(body):
    """(GPUs, devices) in one scrape: distinct UUIDs, and distinct (UUID, GPU_I_ID) of DCGM_FI_DEV_FB_USED."""
    seen = set(re.findall(rb'^DCGM_FI_DEV_FB_USED\{[^}]*UUID="([^"]+)"(?:[^}]*GPU_I_ID="(\d+)")?', body, re.M))
    return len({uuid for uuid, _ in seen}), len(seen)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("exporter")
    parser.add_argument("driver_root")
    parser.add_argument("--scrapes", type=int, default=10000)
    parser.add_argument("--cpu-seconds", type=int, default=60)
    args = parser.parse_args()
    process, port = start(args.exporter, args.driver_root, os.path.join(args.driver_root, "..", "exporter.log"))
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        body = get(connection, "/metrics")
        while b"DCGM_FI_DEV_FB_USED{" not in body and time.monotonic() < deadline:
            time.sleep(0.1)
            body = get(connection, "/metrics")
        gpus, devices = devices_of(body)
        lines = body.count(b"\n")
        print(f"size        {len(body)} bytes, {lines} lines, {gpus} GPUs, {devices} devices")
        timed(connection, "/metrics", 200)  # warm-up
        floor = timed(connection, "/health", 2000)
        print("floor       /health median %.3f ms  p99 %.3f ms" % (ms(floor, 0.5), ms(floor, 0.99)))
        rss_before = status_kib(process.pid, "VmRSS")
        samples = timed(connection, "/metrics", args.scrapes)
        print("scrape      %d scrapes: median %.3f ms  p99 %.3f ms  max %.3f ms" % (
            args.scrapes, ms(samples, 0.5), ms(samples, 0.99), max(samples) / 1e6))
        print(f"rss         before {mib(rss_before)}  after {args.scrapes} scrapes "
              f"{mib(status_kib(process.pid, 'VmRSS'))}  peak {mib(status_kib(process.pid, 'VmHWM'))}")
        hz = os.sysconf("SC_CLK_TCK")
        durations = []
        ticks0, t0 = cpu_ticks(process.pid), time.monotonic()
        for i in range(args.cpu_seconds):
            value = collection_seconds(get(connection, "/metrics"))
            if value is not None:
                durations.append(value)
            time.sleep(max(0.0, t0 + i + 1 - time.monotonic()))
        ticks, wall = cpu_ticks(process.pid) - ticks0, time.monotonic() - t0
        print("cpu         %.2f %% of a core over %.0f s (%d ticks), one scrape a second, -c 1000" % (
            100.0 * ticks / hz / wall, wall, ticks))
        if durations:
            median = statistics.median(durations)
            print("collection  median %.3f ms (max %.3f ms): %.1f us per device (%d), %.1f us per GPU (%d)" % (
                median * 1e3, max(durations) * 1e3, median * 1e6 / devices, devices, median * 1e6 / gpus, gpus))
        else:
            print("collection  no gpuctk_exporter_last_collection_duration_seconds in the scrape")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
