#!/usr/bin/python3
"""A kubelet stand-in for gpuctk-device-plugin (test code): a Registration server on a fake kubelet.sock and
a client that calls the plugin as the kubelet does (GetDevicePluginOptions, ListAndWatch, Allocate,
GetPreferredAllocation), driving the daemon against a fixture host (dgx-a100: 8 GPUs, the mock NVML).

    kubelet.py PLUGIN FIXTURE_TOOL API_PROTO STUBS_DIR
    kubelet.py allocate PLUGIN API_PROTO STUBS_DIR OUT_DIR --case NAME CONFIG RESOURCE IDS [--case ...]
               -- DAEMON_ARGS...

PLUGIN: gpuctk-device-plugin; FIXTURE_TOOL: gpuctk-fixture; API_PROTO: the kubelet's deviceplugin
v1beta1 api.proto (Debian's, as scripts/deps.sh fetched it); STUBS_DIR: where the python stubs are
generated (tests/engines/cri.py's load_stubs: keyed by the proto's hash).

Checks, in order, each printed as "ok <what>" (the first failure: "kubelet.py: error: <what>" and exit 1;
a missing tool: "SKIP: <why>" and exit 77):
  invalid-config     an invalid deviceListStrategy in the config file: exit 1, one line naming the key,
                     no socket made, nothing registered
  register           the daemon registers nvidia.com/gpu (v1beta1, its socket's name, preferred
                     allocation available); GetDevicePluginOptions says the same
  list               ListAndWatch's first list: the host's 8 GPUs by UUID, Healthy, NUMA node of each
  allocate           Allocate of one GPU: NVIDIA_VISIBLE_DEVICES=<uuid> and nothing else; an unknown
                     device is refused (INVALID_ARGUMENT, naming it)
  preferred          GetPreferredAllocation of one device among three, one required: that one
  health             an Xid of the skip list (13) changes nothing; Xid 79 on GPU 0 streams a new list with
                     GPU 0 Unhealthy, the others Healthy
  kubelet-restart    the kubelet restarts (its socket and the plugin's removed, kubelet.sock created
                     again): the daemon discovers again, serves and registers again, and its list has GPU 0
                     Healthy again (a new device set starts with fresh health, as NVIDIA's does)
  sigterm            SIGTERM: exit 0, the plugin's socket removed
  proc               a second daemon on the same host without NVML (--device-discovery-strategy proc):
                     it registers, lists the 8 GPUs Healthy and streams nothing more (no health watch),
                     logs that nothing is watched, and SIGTERM ends it with exit 0, its socket removed

The allocate mode only allocates, for the end-to-end tests (tests/e2e/engines_plugin_containerd.sh) that
hand the answers to a container runtime as the kubelet does (tests/engines/cri.py --allocate-response).
Per case, one after another: the daemon is started with DAEMON_ARGS, --kubelet-socket of a Registration
server in a directory of its own and --config-file CONFIG; once RESOURCE has registered, its first
ListAndWatch list must hold each of IDS (comma-separated device IDs, replica IDs <uuid>::<n> included)
Healthy, as the kubelet allocates only such devices; Allocate of IDS for one container; then SIGTERM (exit
0, the sockets removed: checked for every case after the last Allocate). The ContainerAllocateResponse is
written as OUT_DIR/NAME.json, in the API's field names: {"envs": {K: V}, "mounts": [{"container_path",
"host_path", "read_only"}], "devices": [{"container_path", "host_path", "permissions"}], "annotations":
{K: V}, "cdi_devices": [NAME]}; and printed as two lines: "listed NAME: RESOURCE <the IDs of its first list, comma-separated>", then
"allocated NAME: RESOURCE IDS in T ms: <the answer's JSON>" (T: Allocate's round trip).
"""
import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 30  # seconds for anything the daemon does (2 shared cores: never near it when healthy)


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def skip(why):
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(77)


try:
    import grpc
    import grpc_tools.protoc  # noqa: F401 (load_stubs runs it)
    import yaml
except ImportError as e:
    skip(f"{sys.executable} cannot import {e.name} (python3-grpcio, python3-grpc-tools, python3-yaml: "
         "scripts/deps.sh test)")
sys.path.insert(0, os.path.join(SOURCE, "tests", "engines"))
import cri  # noqa: E402 (its load_stubs, shared)


class Kubelet:
    """The Registration server on DIR/kubelet.sock; each Register lands in `registrations`."""

    def __init__(self, pb, pb_grpc, socket):
        self.pb, self.socket = pb, socket
        self.registrations = queue.Queue()
        kubelet = self

        class Registration(pb_grpc.RegistrationServicer):
            def Register(self, request, context):
                kubelet.registrations.put(request)
                return pb.Empty()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_RegistrationServicer_to_server(Registration(), self.server)
        check(self.server.add_insecure_port("unix:" + socket) != 0, f"cannot listen on {socket}")
        self.server.start()

    def registration(self):
        try:
            return self.registrations.get(timeout=TIMEOUT)
        except queue.Empty:
            raise Failure(f"no Register on {self.socket} within {TIMEOUT} s") from None

    def stop(self):
        self.server.stop(None).wait()
        if os.path.exists(self.socket):
            os.unlink(self.socket)


class Watch:
    """A ListAndWatch stream read by a thread, as the kubelet keeps one per plugin."""

    def __init__(self, stub, pb):
        self.lists = queue.Queue()
        self.call = stub.ListAndWatch(pb.Empty())
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        try:
            for response in self.call:
                self.lists.put([(d.ID, d.health, [n.ID for n in d.topology.nodes]) for d in response.devices])
        except grpc.RpcError:
            pass
        self.lists.put(None)

    def next(self, what):
        try:
            item = self.lists.get(timeout=TIMEOUT)
        except queue.Empty:
            raise Failure(f"{what}: no list within {TIMEOUT} s") from None
        check(item is not None, f"{what}: the stream ended")
        return item

    def quiet(self, seconds):
        """Nothing arrives within `seconds`."""
        try:
            item = self.lists.get(timeout=seconds)
        except queue.Empty:
            return
        raise Failure(f"an unexpected list or end of stream: {item}")

    def cancel(self):
        self.call.cancel()


def materialise(tool, host, root):
    out = subprocess.run([tool, "materialize", host, root], capture_output=True, text=True, check=False)
    check(out.returncode == 0, f"gpuctk-fixture materialize {host}: {out.stderr.strip()}")
    values = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    check(values.get("nvml") == "mock", f"{host}: the fixture has no mock NVML ({out.stdout.strip()})")
    return values["driver_root"], values["dev_root"]


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    plugin, fixture_tool, proto, stubs = argv[1:]
    pb, pb_grpc = cri.load_stubs(proto, stubs)
    with open(os.path.join(SOURCE, "fixtures", "hosts", "dgx-a100", "host.yaml"), encoding="utf-8") as f:
        gpus = yaml.safe_load(f)["gpus"]
    uuids = [g["uuid"] for g in gpus]

    with tempfile.TemporaryDirectory(prefix="gpuctk-kubelet-") as lab:
        driver_root, dev_root = materialise(fixture_tool, "dgx-a100", os.path.join(lab, "host"))
        plugins = os.path.join(lab, "device-plugins")
        os.mkdir(plugins)
        kubelet_sock = os.path.join(plugins, "kubelet.sock")
        plugin_sock = os.path.join(plugins, "nvidia-gpu.sock")
        events = os.path.join(lab, "nvml-events")
        os.mkfifo(events)
        env = dict(os.environ, GPUCTK_MOCK_NVML_EVENTS=events)
        command = [plugin, "--kubelet-socket", kubelet_sock, "--driver-root", driver_root,
                   "--container-driver-root", driver_root, "--dev-root", dev_root,
                   "--container-dev-root", dev_root]

        kubelet = Kubelet(pb, pb_grpc, kubelet_sock)
        # invalid-config
        config = os.path.join(lab, "config.yaml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("version: v1\nflags:\n  plugin:\n    deviceListStrategy: [envvar, bogus]\n")
        out = subprocess.run(command + ["--config-file", config], env=env, capture_output=True, text=True,
                             timeout=TIMEOUT, check=False)
        check(out.returncode == 1, f"invalid config: exit {out.returncode}, not 1")
        want = ('gpuctk-device-plugin: error: flags.plugin.deviceListStrategy: invalid strategy "bogus" '
                "(want envvar, volume-mounts, cdi-annotations or cdi-cri)\n")
        check(out.stderr == want, f"invalid config: stderr {out.stderr!r}, not {want!r}")
        check(kubelet.registrations.empty(), "invalid config: it registered")
        check(os.listdir(plugins) == ["kubelet.sock"], f"invalid config: left {sorted(os.listdir(plugins))}")
        print("ok invalid-config")

        log = open(os.path.join(lab, "plugin.log"), "w+", encoding="utf-8")
        daemon = subprocess.Popen(command, env=env, stderr=log)
        try:
            # register
            request = kubelet.registration()
            check((request.version, request.endpoint, request.resource_name) ==
                  ("v1beta1", "nvidia-gpu.sock", "nvidia.com/gpu"), f"register: {request}")
            check(request.options.get_preferred_allocation_available and
                  not request.options.pre_start_required, f"register: options {request.options}")
            channel = grpc.insecure_channel("unix:" + plugin_sock)
            stub = pb_grpc.DevicePluginStub(channel)
            options = stub.GetDevicePluginOptions(pb.Empty(), timeout=TIMEOUT)
            check(options.get_preferred_allocation_available and not options.pre_start_required,
                  f"GetDevicePluginOptions: {options}")
            print("ok register")

            # list
            watch = Watch(stub, pb)
            healthy = [(u, "Healthy", [g["numa_node"]]) for u, g in zip(uuids, gpus)]
            first = watch.next("list")
            check(first == healthy, f"list: {first}, not {healthy}")
            print("ok list")

            # allocate
            request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=[uuids[2]])])
            answer = stub.Allocate(request, timeout=TIMEOUT).container_responses
            check(len(answer) == 1 and dict(answer[0].envs) == {"NVIDIA_VISIBLE_DEVICES": uuids[2]} and
                  not answer[0].mounts and not answer[0].devices and not answer[0].annotations and
                  not answer[0].cdi_devices, f"allocate: {answer}")
            bad = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=["GPU-nope"])])
            try:
                stub.Allocate(bad, timeout=TIMEOUT)
                raise Failure("allocate: GPU-nope was allocated")
            except grpc.RpcError as e:
                want = 'invalid allocation request for "nvidia.com/gpu": unknown device: "GPU-nope"'
                check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and e.details() == want,
                      f"allocate: {e.code()} {e.details()!r}, not {want!r}")
            print("ok allocate")

            # preferred
            request = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
                available_deviceIDs=uuids[:3], must_include_deviceIDs=[uuids[1]], allocation_size=1)])
            answer = stub.GetPreferredAllocation(request, timeout=TIMEOUT).container_responses
            check([list(a.deviceIDs) for a in answer] == [[uuids[1]]], f"preferred: {answer}")
            print("ok preferred")

            # health
            with open(events, "w", encoding="utf-8") as fifo:
                fifo.write(f"xid\tuuid={uuids[0]}\txid=13\n")  # the data file's syntax: tabs
                fifo.flush()
                watch.quiet(1)
                fifo.write(f"xid\tuuid={uuids[0]}\txid=79\n")
            sick = [(uuids[0], "Unhealthy", healthy[0][2])] + healthy[1:]
            second = watch.next("health")
            check(second == sick, f"health: {second}, not {sick}")
            print("ok health")

            # kubelet-restart: the kubelet removes every socket of the directory, then makes its own.
            kubelet.stop()
            os.unlink(plugin_sock)
            kubelet = Kubelet(pb, pb_grpc, kubelet_sock)
            request = kubelet.registration()
            end = watch.lists.get(timeout=TIMEOUT)
            check(end is None, f"kubelet-restart: the old stream went on: {end}")
            channel.close()
            check(request.resource_name == "nvidia.com/gpu" and request.endpoint == "nvidia-gpu.sock",
                  f"kubelet-restart: {request}")
            channel = grpc.insecure_channel("unix:" + plugin_sock)
            stub = pb_grpc.DevicePluginStub(channel)
            watch = Watch(stub, pb)
            again = watch.next("kubelet-restart")
            check(again == healthy, f"kubelet-restart: {again}, not {healthy}")
            print("ok kubelet-restart")

            # sigterm
            daemon.send_signal(signal.SIGTERM)
            status = daemon.wait(timeout=TIMEOUT)
            check(status == 0, f"sigterm: exit {status}")
            check(not os.path.exists(plugin_sock), "sigterm: nvidia-gpu.sock is left")
            log.seek(0)
            lines = log.read().splitlines()
            check(lines[-2:] == ["gpuctk-device-plugin: stopping on SIGTERM", "gpuctk-device-plugin: stopped"],
                  f"sigterm: log ends {lines[-2:]}")
            print("ok sigterm")
            channel.close()
        except BaseException:
            log.seek(0)
            sys.stderr.write("the daemon's log:\n" + log.read())
            raise
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
        proc_mode(pb, pb_grpc, kubelet, command, env, lab, healthy)
        kubelet.stop()
    return 0


def proc_mode(pb, pb_grpc, kubelet, command, env, lab, healthy):
    """proc: the same host without NVML (the GPUs from /proc): every GPU advertised healthy and nothing
    more streamed, a note says nothing is watched, SIGTERM still ends it cleanly."""
    plugin_sock = os.path.join(os.path.dirname(kubelet.socket), "nvidia-gpu.sock")
    log = open(os.path.join(lab, "plugin-proc.log"), "w+", encoding="utf-8")
    daemon = subprocess.Popen(command + ["--device-discovery-strategy", "proc"], env=env, stderr=log)
    try:
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu", f"proc: register {request}")
        channel = grpc.insecure_channel("unix:" + plugin_sock)
        watch = Watch(pb_grpc.DevicePluginStub(channel), pb)
        first = watch.next("proc: list")
        check(first == healthy, f"proc: list {first}, not {healthy}")
        watch.quiet(1)  # no health watch: nothing more is streamed
        log.seek(0)
        note = ("gpuctk-device-plugin: no NVML (GPUs from " + os.path.join(command[command.index("--dev-root") + 1],
                "proc/driver/nvidia/gpus") + "): every device is reported healthy and not watched, and "
                "GetPreferredAllocation knows no links")
        lines = log.read().splitlines()
        check(note in lines, f"proc: no note {note!r} in {lines}")
        daemon.send_signal(signal.SIGTERM)
        check(daemon.wait(timeout=TIMEOUT) == 0, "proc: SIGTERM did not end it with status 0")
        check(not os.path.exists(plugin_sock), "proc: nvidia-gpu.sock is left")
        watch.cancel()
        channel.close()
        print("ok proc")
    except BaseException:
        log.seek(0)
        sys.stderr.write("the proc-mode daemon's log:\n" + log.read())
        raise
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


def answer_json(response):
    """A ContainerAllocateResponse as plain data, in the API's field names (the kubelet's
    RunContainerOptions carry exactly these fields on to the runtime)."""
    return {
        "envs": dict(sorted(response.envs.items())),
        "mounts": [{"container_path": m.container_path, "host_path": m.host_path, "read_only": m.read_only}
                   for m in response.mounts],
        "devices": [{"container_path": d.container_path, "host_path": d.host_path,
                     "permissions": d.permissions} for d in response.devices],
        "annotations": dict(sorted(response.annotations.items())),
        "cdi_devices": [d.name for d in response.cdi_devices],
    }


class DaemonLife:
    """One daemon life for one allocate case (see the docstring's allocate mode): started at once, asked by
    allocate(), which ends with SIGTERM; finish() then checks its exit. Exits are awaited after the last
    case's Allocate, not each in turn: a daemon takes up to its health watch's NVML wait (500 ms) to stop."""

    def __init__(self, pb, pb_grpc, plugin, daemon_args, lab, case):
        self.pb, self.pb_grpc = pb, pb_grpc
        self.name, config, self.resource, ids = case
        self.ids = ids.split(",")
        self.plugins = os.path.join(lab, self.name)
        os.mkdir(self.plugins)
        kubelet_sock = os.path.join(self.plugins, "kubelet.sock")
        self.kubelet = Kubelet(pb, pb_grpc, kubelet_sock)
        self.log = open(os.path.join(lab, self.name + ".log"), "w+", encoding="utf-8")
        self.daemon = subprocess.Popen(
            [plugin, *daemon_args, "--kubelet-socket", kubelet_sock, "--config-file", config],
            stdout=self.log, stderr=self.log)

    def allocate(self):
        """Returns (the answer as plain data, Allocate's round trip in ms, the IDs of the resource's first
        list in its order); SIGTERM is sent."""
        pb, name, resource = self.pb, self.name, self.resource
        registered = []
        while resource not in registered:
            request = self.kubelet.registration()
            registered.append(request.resource_name)
        check(request.version == "v1beta1", f"{name}: registered {request}")
        with grpc.insecure_channel("unix:" + os.path.join(self.plugins, request.endpoint)) as channel:
            stub = self.pb_grpc.DevicePluginStub(channel)
            watch = Watch(stub, pb)
            listed = dict((i, health) for i, health, _ in watch.next(f"{name}: list of {resource}"))
            watch.cancel()
            for i in self.ids:
                check(listed.get(i) == "Healthy", f"{name}: {resource} lists no healthy {i}: {listed}")
            start = time.monotonic()
            try:
                responses = stub.Allocate(pb.AllocateRequest(container_requests=[
                    pb.ContainerAllocateRequest(devices_ids=self.ids)]), timeout=TIMEOUT).container_responses
            except grpc.RpcError as e:
                raise Failure(f"{name}: Allocate {resource} {self.ids}: {e.code().name}: {e.details()}") from None
            ms = (time.monotonic() - start) * 1000
        check(len(responses) == 1, f"{name}: {len(responses)} container responses, not 1")
        self.daemon.send_signal(signal.SIGTERM)
        return answer_json(responses[0]), ms, list(listed)

    def finish(self):
        """The daemon exited 0 on SIGTERM and removed its sockets."""
        status = self.daemon.wait(timeout=TIMEOUT)
        check(status == 0, f"{self.name}: the daemon exited {status} on SIGTERM")
        left = sorted(set(os.listdir(self.plugins)) - {"kubelet.sock"})
        check(not left, f"{self.name}: sockets left after SIGTERM: {left}")

    def dump_log(self):
        self.log.seek(0)
        sys.stderr.write(f"the daemon's log ({self.name}):\n" + self.log.read())

    def close(self):
        if self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        self.kubelet.stop()
        self.log.close()


def allocate_main(argv):
    parser = argparse.ArgumentParser(prog="kubelet.py allocate")
    parser.add_argument("plugin")
    parser.add_argument("proto")
    parser.add_argument("stubs")
    parser.add_argument("out")
    parser.add_argument("--case", nargs=4, action="append", required=True,
                        metavar=("NAME", "CONFIG", "RESOURCE", "IDS"))
    daemon_args = []
    if "--" in argv:
        daemon_args = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    args = parser.parse_args(argv)
    pb, pb_grpc = cri.load_stubs(args.proto, args.stubs)
    os.makedirs(args.out, exist_ok=True)
    lives = []
    with tempfile.TemporaryDirectory(prefix="gpuctk-kubelet-") as lab:
        try:
            for case in args.case:
                life = DaemonLife(pb, pb_grpc, args.plugin, daemon_args, lab, case)
                lives.append(life)
                try:
                    answer, ms, listed = life.allocate()
                except BaseException:
                    life.dump_log()
                    raise
                print(f"listed {case[0]}: {case[2]} {','.join(listed)}", flush=True)
                text = json.dumps(answer, sort_keys=True)
                with open(os.path.join(args.out, case[0] + ".json"), "w", encoding="utf-8") as f:
                    f.write(text + "\n")
                print(f"allocated {case[0]}: {case[2]} {case[3]} in {ms:.1f} ms: {text}", flush=True)
            for life in lives:
                try:
                    life.finish()
                except BaseException:
                    life.dump_log()
                    raise
        finally:
            for life in lives:
                life.close()
    return 0


if __name__ == "__main__":
    try:
        if len(sys.argv) > 1 and sys.argv[1] == "allocate":
            sys.exit(allocate_main(sys.argv[2:]))
        sys.exit(main(sys.argv))
    except (Failure, cri.CriError) as e:
        print(f"kubelet.py: error: {e}", file=sys.stderr)
        sys.exit(1)
