#!/usr/bin/python3
"""A kubelet stand-in for gpuctk-device-plugin (test code): a Registration server on a fake kubelet.sock and
a client that calls the plugin as the kubelet does (GetDevicePluginOptions, ListAndWatch, Allocate,
GetPreferredAllocation), driving the daemon against a fixture host (dgx-a100: 8 GPUs, the mock NVML).

    kubelet.py PLUGIN FIXTURE_TOOL API_PROTO STUBS_DIR GPUCTK
    kubelet.py allocate PLUGIN API_PROTO STUBS_DIR OUT_DIR --case NAME CONFIG RESOURCE IDS [--case ...]
               -- DAEMON_ARGS...

PLUGIN: gpuctk-device-plugin; FIXTURE_TOOL: gpuctk-fixture; API_PROTO: the kubelet's deviceplugin
v1beta1 api.proto (Debian's, as scripts/deps.sh fetched it); STUBS_DIR: where the python stubs are
generated (tests/engines/cri.py's load_stubs: keyed by the proto's hash); GPUCTK: gpuctk (its labels, the
labels sidecar's, read the same config file).

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
  sighup-reload      (a daemon with --config-file, a link to a file in another folder, so that only the
                     signal tells) replicas=2 of time-slicing written, SIGHUP: nvidia.com/gpu registers
                     again with 16 devices <uuid>::0/1, the change logged; `gpuctk labels --config-file`
                     on the same file says nvidia.com/gpu.replicas=2
  file-reload        the file renamed over by one with replicas=3, no signal: registered again, 24 devices
  invalid-reload     the file rewritten in place with an invalid deviceListStrategy: one error line naming
                     the key, nothing registers, the stream goes on and a new one lists the 24 devices
  listandwatch-cancel the client cancels its stream: the daemon logs its end at once (no health change)
  register-retry     a kubelet whose Register fails twice: registered at the third, after backoffs of 1 s
                     and 2 s, each logged
  wait-for-kubelet   a daemon started before kubelet.sock exists says it waits, and registers once it does
  mig-restart        (--mig-strategy mixed, a host of its own) GPU 0 put in MIG mode with two 3g.20gb
                     devices in the mock's data file and their capability nodes made, then a kubelet restart:
                     nvidia.com/gpu lists GPUs 1-3, nvidia.com/mig-3g.20gb has the two new devices
  nvml-fail          (the nvml-init-fails host: NVML's init fails, the driver is loaded) failOnInitError
                     true: exit 1, one line saying why, nothing registered; false with --retry-interval 1:
                     serves nothing, logs why once, and registers the GPU once the data file is fixed
  mps-ready          sharing.mps with --mps-root: nvidia.com/gpu does not register until
                     <root>/nvidia.com/gpu/.ready and the socket pipe/control exist, the wait logged; then it
                     registers with 16 replicas
  node-config-*      per-node configs (--config-file-srcdir, a ConfigMap-style folder: default, ts2) with
                     the node label read from tests/kube/apiserver.py (node n1, --kubeconfig):
    -missing-node    --node-name n2, which the API server lacks: exit 1, one line with its 404, nothing
                     written
    -fallback        no label: the "named" fallback writes "default" to --config-file; 8 devices
    -label           the label set to ts2: registered again with 16 devices; `gpuctk labels` on the same
                     file says nvidia.com/gpu.replicas=2
    -unknown         the label set to ts3, which the folder lacks: one error line, nothing registers, the
                     file and the stream stay
    -configmap       the folder updated as the kubelet updates a ConfigMap, now with ts3: 24 devices; the
                     failed choice was logged once across the update's events

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
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from daemon_test import (SOURCE, TIMEOUT, Daemon, Failure, check, host_gpus, import_grpc,  # noqa: E402
                         import_yaml, main as run_main, materialise, nvml_conf)

grpc, cri = import_grpc("python3-grpcio, python3-grpc-tools, python3-yaml")
import_yaml("python3-grpcio, python3-grpc-tools, python3-yaml")  # host_gpus reads the fixture host with it


class Kubelet:
    """The Registration server on DIR/kubelet.sock; each Register lands in `registrations`, except the
    first `refuse` ones, which are answered UNAVAILABLE and counted in `refused`."""

    def __init__(self, pb, pb_grpc, socket, refuse=0):
        self.pb, self.socket = pb, socket
        self.registrations = queue.Queue()
        self.refused = 0
        kubelet = self

        class Registration(pb_grpc.RegistrationServicer):
            def Register(self, request, context):
                if kubelet.refused < refuse:
                    kubelet.refused += 1
                    context.abort(grpc.StatusCode.UNAVAILABLE, f"refusal {kubelet.refused} of {refuse}")
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

    def quiet(self, seconds, what):
        """No Register within `seconds`."""
        try:
            request = self.registrations.get(timeout=seconds)
        except queue.Empty:
            return
        raise Failure(f"{what}: an unexpected Register of {request.resource_name}")

    def registered(self, count, what):
        """The next `count` Register requests, by resource name."""
        out = {}
        for _ in range(count):
            request = self.registration()
            check(request.resource_name not in out, f"{what}: {request.resource_name} registered twice")
            out[request.resource_name] = request
        return out

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


def main(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    plugin, fixture_tool, proto, stubs, gpuctk = argv[1:]
    pb, pb_grpc = cri.load_stubs(proto, stubs)
    gpus = host_gpus()
    uuids = [g["uuid"] for g in gpus]

    with tempfile.TemporaryDirectory(prefix="gpuctk-kubelet-") as root:
        Lab.base = dict(pb=pb, pb_grpc=pb_grpc, plugin=plugin, fixture_tool=fixture_tool, root=root)
        lab = Lab("first", "dgx-a100")
        plugins, env, command = lab.plugins, lab.env, lab.command
        plugin_sock = os.path.join(plugins, "nvidia-gpu.sock")

        kubelet = lab.kubelet()
        # invalid-config
        config = os.path.join(lab.dir, "config.yaml")
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

        with Daemon(command, os.path.join(lab.dir, "plugin.log"), env) as daemon:
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
            with open(lab.events, "w", encoding="utf-8") as fifo:
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
            kubelet = lab.kubelet()
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
            daemon.process.send_signal(signal.SIGTERM)
            status = daemon.wait("sigterm")
            check(status == 0, f"sigterm: exit {status}")
            check(not os.path.exists(plugin_sock), "sigterm: nvidia-gpu.sock is left")
            lines = daemon.lines()
            check(lines[-2:] == ["gpuctk-device-plugin: stopping on SIGTERM", "gpuctk-device-plugin: stopped"],
                  f"sigterm: log ends {lines[-2:]}")
            print("ok sigterm")
            channel.close()
        proc_mode(lab, kubelet, healthy)
        kubelet.stop()
        reloads(Lab("reload", "dgx-a100"), gpuctk, uuids)
        register_retry(Lab("retry", "dgx-a100"))
        wait_for_kubelet(Lab("wait", "dgx-a100"))
        mig_restart(Lab("mig", "dgx-a100"), uuids)
        nvml_fail(Lab("nvml", "nvml-init-fails"))
        mps_ready(Lab("mps", "dgx-a100"), uuids)
        node_configs(Lab("node", "dgx-a100"), gpuctk, uuids)
    return 0


def proc_mode(lab, kubelet, healthy):
    """proc: the same host without NVML (the GPUs from /proc): every GPU advertised healthy and nothing
    more streamed, a note says nothing is watched, SIGTERM still ends it cleanly."""
    plugin_sock = os.path.join(lab.plugins, "nvidia-gpu.sock")
    with Daemon(lab.command + ["--device-discovery-strategy", "proc"], os.path.join(lab.dir, "plugin-proc.log"),
                lab.env, name="the proc-mode daemon") as daemon:
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu", f"proc: register {request}")
        watch, channel = lab.watch("nvidia.com/gpu")
        first = watch.next("proc: list")
        check(first == healthy, f"proc: list {first}, not {healthy}")
        watch.quiet(1)  # no health watch: nothing more is streamed
        note = ("gpuctk-device-plugin: no NVML (GPUs from " + os.path.join(lab.dev_root, "proc/driver/nvidia/gpus") +
                "): every device is reported healthy and not watched, and GetPreferredAllocation knows no links")
        lines = daemon.lines()
        check(note in lines, f"proc: no note {note!r} in {lines}")
        daemon.process.send_signal(signal.SIGTERM)
        check(daemon.wait("proc: SIGTERM") == 0, "proc: SIGTERM did not end it with status 0")
        check(not os.path.exists(plugin_sock), "proc: nvidia-gpu.sock is left")
        watch.cancel()
        channel.close()
        print("ok proc")


class Lab:
    """One scenario's own fixture host (materialised anew: scenarios change its NVML data file) and its
    kubelet folder under the run's temporary folder; `base` holds what every scenario shares."""

    base = {}

    def __init__(self, name, host):
        self.__dict__.update(Lab.base)
        self.name = name
        self.dir = os.path.join(self.root, name)
        os.mkdir(self.dir)
        self.driver_root, self.dev_root = materialise(self.fixture_tool, host, os.path.join(self.dir, "host"))
        self.plugins = os.path.join(self.dir, "device-plugins")
        os.mkdir(self.plugins)
        self.kubelet_sock = os.path.join(self.plugins, "kubelet.sock")
        self.events = os.path.join(self.dir, "nvml-events")
        os.mkfifo(self.events)
        self.env = dict(os.environ, GPUCTK_MOCK_NVML_EVENTS=self.events)
        self.command = [self.plugin, "--kubelet-socket", self.kubelet_sock, "--driver-root", self.driver_root,
                        "--container-driver-root", self.driver_root, "--dev-root", self.dev_root,
                        "--container-dev-root", self.dev_root]

    def kubelet(self, refuse=0):
        return Kubelet(self.pb, self.pb_grpc, self.kubelet_sock, refuse)

    def nvml_conf(self):
        return nvml_conf(self.driver_root)

    def watch(self, resource):
        """A ListAndWatch stream of `resource` (its socket beside kubelet.sock) and its channel."""
        name = resource.rsplit("/", 1)[-1]
        channel = grpc.insecure_channel("unix:" + os.path.join(self.plugins, f"nvidia-{name}.sock"))
        return Watch(self.pb_grpc.DevicePluginStub(channel), self.pb), channel

    def registered_again(self, kubelet, watch, channel, want, what):
        """nvidia.com/gpu registers again and its old stream (`watch` on `channel`, closed here) ends; a new
        stream's first list has the device IDs `want`. Returns the new stream and its channel."""
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu", f"{what}: register {request}")
        check(watch.lists.get(timeout=TIMEOUT) is None, f"{what}: the old stream went on")
        channel.close()
        watch, channel = self.watch("nvidia.com/gpu")
        listed = [d[0] for d in watch.next(f"{what}: list")]
        check(listed == want, f"{what}: listed {listed}")
        return watch, channel


class Plugin(Daemon):
    """gpuctk-device-plugin run with `args` after the lab's, its stderr in the lab's plugin.log."""

    def __init__(self, lab, args):
        super().__init__(lab.command + args, os.path.join(lab.dir, "plugin.log"), lab.env,
                         name=f"the daemon ({lab.name})")
        self.lab = lab

    def sigterm(self, what):
        self.process.send_signal(signal.SIGTERM)
        status = self.wait(f"{what}: SIGTERM")
        check(status == 0, f"{what}: exit {status} on SIGTERM")
        left = sorted(set(os.listdir(self.lab.plugins)) - {"kubelet.sock"})
        check(not left, f"{what}: sockets left after SIGTERM: {left}")


LOG = "gpuctk-device-plugin: "


def replicas(uuids, n):
    return [f"{u}::{i}" for u in uuids for i in range(n)]


def slicing(n):
    return f"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: {n}\n"


def reloads(lab, gpuctk, uuids):
    """sighup-reload, file-reload, invalid-reload and listandwatch-cancel, on one daemon."""
    elsewhere = os.path.join(lab.dir, "elsewhere")
    os.mkdir(elsewhere)
    target = os.path.join(elsewhere, "config.yaml")
    with open(target, "w", encoding="utf-8") as f:
        f.write("version: v1\n")
    configs = os.path.join(lab.dir, "config")
    os.mkdir(configs)
    config = os.path.join(configs, "config.yaml")
    os.symlink(target, config)
    kubelet = lab.kubelet()
    with Plugin(lab, ["--config-file", config]) as daemon:
        check(kubelet.registration().resource_name == "nvidia.com/gpu", "reload: first register")
        watch, channel = lab.watch("nvidia.com/gpu")
        check([d[0] for d in watch.next("reload: first list")] == uuids, "reload: the first list")

        # sighup-reload: the link's target changes in a folder nobody watches; only SIGHUP tells.
        with open(target, "w", encoding="utf-8") as f:
            f.write(slicing(2))
        kubelet.quiet(0.5, "sighup-reload: before SIGHUP")
        daemon.process.send_signal(signal.SIGHUP)
        watch, channel = lab.registered_again(kubelet, watch, channel, replicas(uuids, 2), "sighup-reload")
        daemon.await_line(LOG + "changed: nvidia.com/gpu: 8 -> 16 devices (16 new, 8 gone)", "sighup-reload")
        labels = subprocess.run([gpuctk, "labels", "--driver-root", lab.driver_root, "--dev-root", lab.dev_root,
                                 "--config-file", config, "-o", "-"], capture_output=True, text=True, check=False)
        check(labels.returncode == 0 and "nvidia.com/gpu.replicas=2" in labels.stdout.splitlines(),
              f"sighup-reload: gpuctk labels: {labels.returncode} {labels.stdout!r} {labels.stderr!r}")
        print("ok sighup-reload")

        # file-reload: a file renamed over the link, as an atomic writer (or a ConfigMap's ..data) does.
        with open(os.path.join(configs, ".config.tmp"), "w", encoding="utf-8") as f:
            f.write(slicing(3))
        os.rename(os.path.join(configs, ".config.tmp"), config)
        watch, channel = lab.registered_again(kubelet, watch, channel, replicas(uuids, 3), "file-reload")
        print("ok file-reload")

        # invalid-reload: rewritten in place, invalid.
        errors = [line for line in daemon.lines() if line.startswith(LOG + "error: ")]
        with open(config, "w", encoding="utf-8") as f:
            f.write("version: v1\nflags:\n  plugin:\n    deviceListStrategy: [envvar, bogus]\n")
        want = (LOG + 'error: reload: flags.plugin.deviceListStrategy: invalid strategy "bogus" (want envvar, '
                "volume-mounts, cdi-annotations or cdi-cri): keeping the configuration in force")
        daemon.await_line(want, "invalid-reload")
        kubelet.quiet(0.5, "invalid-reload")
        watch.quiet(0.1)  # the stream goes on
        now = [line for line in daemon.lines() if line.startswith(LOG + "error: ")]
        check(now == errors + [want], f"invalid-reload: error lines {now[len(errors):]}")
        second, second_channel = lab.watch("nvidia.com/gpu")
        listed = [d[0] for d in second.next("invalid-reload: list")]
        check(listed == replicas(uuids, 3), f"invalid-reload: listed {listed}")
        print("ok invalid-reload")

        # listandwatch-cancel: no health change follows, so only the cancel can end the stream.
        second.cancel()
        daemon.await_line(LOG + "ListAndWatch of nvidia.com/gpu ended: the kubelet cancelled it",
                          "listandwatch-cancel")
        second_channel.close()
        print("ok listandwatch-cancel")
        daemon.sigterm("reload")
        channel.close()
    kubelet.stop()


def register_retry(lab):
    """register-retry: Register refused twice, then accepted, after 1 s and 2 s of backoff."""
    kubelet = lab.kubelet(refuse=2)
    with Plugin(lab, []) as daemon:
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu" and kubelet.refused == 2,
              f"register-retry: {request.resource_name} after {kubelet.refused} refusals")
        why = f"register nvidia.com/gpu with {lab.kubelet_sock}: refusal"
        retries = [line.split(": trying again in ")[1] for line in daemon.lines()
                   if line.startswith(LOG + why) and ": trying again in " in line]
        check(retries == ["1 s", "2 s"], f"register-retry: retries {retries}")
        daemon.await_line(LOG + f"registered nvidia.com/gpu with {lab.kubelet_sock} as nvidia-gpu.sock",
                          "register-retry")
        daemon.sigterm("register-retry")
    kubelet.stop()
    print("ok register-retry")


def wait_for_kubelet(lab):
    """wait-for-kubelet: started before kubelet.sock exists; registers once it does."""
    with Plugin(lab, []) as daemon:
        daemon.await_line(LOG + f"waiting for {lab.kubelet_sock} (the kubelet) to register", "wait-for-kubelet")
        kubelet = lab.kubelet()
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu", f"wait-for-kubelet: {request}")
        daemon.sigterm("wait-for-kubelet")
    kubelet.stop()
    print("ok wait-for-kubelet")


# GPU 0's new MIG devices (mig-restart): two 3g.20gb GPU instances, as GPU 5 of dgx-a100 has them.
NEW_MIGS = [(1, "MIG-0a0a0a0a-1111-4111-8111-000000000001"), (2, "MIG-0a0a0a0a-2222-4222-8222-000000000002")]


def put_gpu0_in_mig_mode(lab):
    """The mock's data file says GPU 0 is in MIG mode with NEW_MIGS; their capability nodes are made with
    the minors mig-minors lists, as the driver makes them when a GPU instance is created."""
    conf = lab.nvml_conf()
    lines = []
    with open(conf, encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.startswith("gpu\tindex=0\t"):
                line = line.replace("\tmig_mode=0\t", "\tmig_mode=1\t")
                lines.append(line)
                lines += [f"mig\tparent=0\tindex={i}\tuuid={uuid}\tgi={gi}\tci=0\tprofile=3g.20gb\t"
                          "memory_total=21072183296" for i, (gi, uuid) in enumerate(NEW_MIGS)]
            else:
                lines.append(line)
    with open(conf, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(lab.dev_root, "proc/driver/nvidia-caps/mig-minors"), encoding="utf-8") as f:
        minors = dict(line.split() for line in f if line.strip())
    caps = os.path.join(lab.dev_root, "dev/nvidia-caps")
    model = os.stat(os.path.join(caps, "nvidia-cap2"))
    for gi, _ in NEW_MIGS:
        for cap in (f"gpu0/gi{gi}/access", f"gpu0/gi{gi}/ci0/access"):
            minor = int(minors[cap])
            path = os.path.join(caps, f"nvidia-cap{minor}")
            if stat.S_ISCHR(model.st_mode):
                os.mknod(path, stat.S_IFCHR | 0o444, os.makedev(os.major(model.st_rdev), minor))
            else:  # the fixture's nodes are regular files where it cannot make nodes: the same here
                with open(path, "w", encoding="utf-8"):
                    os.chmod(path, 0o444)


def mig_restart(lab, uuids):
    """mig-restart: a MIG change seen at the kubelet's restart."""
    kubelet = lab.kubelet()
    resources = ["nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb"]
    with Plugin(lab, ["--mig-strategy", "mixed"]) as daemon:
        first = kubelet.registered(len(resources), "mig-restart")
        check(sorted(first) == resources, f"mig-restart: registered {sorted(first)}")
        put_gpu0_in_mig_mode(lab)
        kubelet.stop()
        for name in os.listdir(lab.plugins):
            os.unlink(os.path.join(lab.plugins, name))
        kubelet = lab.kubelet()
        again = kubelet.registered(len(resources), "mig-restart: again")
        check(sorted(again) == resources, f"mig-restart: registered again {sorted(again)}")
        watch, channel = lab.watch("nvidia.com/gpu")
        listed = [d[0] for d in watch.next("mig-restart: nvidia.com/gpu")]
        check(listed == uuids[1:4], f"mig-restart: nvidia.com/gpu lists {listed}, not {uuids[1:4]}")
        watch.cancel()
        channel.close()
        watch, channel = lab.watch("nvidia.com/mig-3g.20gb")
        listed = [d[0] for d in watch.next("mig-restart: nvidia.com/mig-3g.20gb")]
        check(listed[:2] == [uuid for _, uuid in NEW_MIGS], f"mig-restart: mig-3g.20gb lists {listed}")
        watch.cancel()
        channel.close()
        daemon.await_line(LOG + "changed: nvidia.com/gpu: 4 -> 3 devices (0 new, 1 gone)", "mig-restart")
        daemon.sigterm("mig-restart")
    kubelet.stop()
    print("ok mig-restart")


def nvml_fail(lab):
    """nvml-fail: NVML's init fails on a host whose driver is loaded."""
    kubelet = lab.kubelet()
    out = subprocess.run(lab.command, env=lab.env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    version = os.path.join(lab.dev_root, "proc/driver/nvidia/version")
    why = ("NVML did not start: nvml: nvmlInit_v2: Driver Not Loaded; the driver is loaded (" + version +
           "), so the GPUs are not taken from /proc, where nothing would watch their health")
    check(out.returncode == 1, f"nvml-fail: failOnInitError true: exit {out.returncode}, not 1: {out.stderr!r}")
    check(out.stderr == LOG + "error: " + why + "\n", f"nvml-fail: stderr {out.stderr!r}")
    check(kubelet.registrations.empty(), "nvml-fail: failOnInitError true registered")
    with Plugin(lab, ["--fail-on-init-error=false", "--retry-interval", "1"]) as daemon:
        daemon.await_line(LOG + why + " (failOnInitError is false): serving nothing, trying again every 1 s and "
                          "when the kubelet restarts", "nvml-fail")
        kubelet.quiet(1.5, "nvml-fail: while NVML fails")  # a retry or more, each failing
        conf = lab.nvml_conf()
        with open(conf, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if not line.startswith("fail\t")]
        with open(conf, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu", f"nvml-fail: {request}")
        watch, channel = lab.watch("nvidia.com/gpu")
        listed = watch.next("nvml-fail: list")
        check([d[1] for d in listed] == ["Healthy"], f"nvml-fail: listed {listed}")
        watch.cancel()
        channel.close()
        check([line for line in daemon.lines() if line.startswith(LOG + why)] == [
            LOG + why + " (failOnInitError is false): serving nothing, trying again every 1 s and when the "
            "kubelet restarts"], "nvml-fail: the failure was logged more than once")
        daemon.sigterm("nvml-fail")
    kubelet.stop()
    print("ok nvml-fail")


def mps_ready(lab, uuids):
    """mps-ready: an MPS-shared resource registers only once its daemon is ready."""
    root = os.path.join(lab.dir, "mps")
    os.mkdir(root)
    config = os.path.join(lab.dir, "config.yaml")
    with open(config, "w", encoding="utf-8") as f:
        f.write("version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
    kubelet = lab.kubelet()
    with Plugin(lab, ["--config-file", config, "--mps-root", root]) as daemon:
        ready = os.path.join(root, "nvidia.com/gpu/.ready")
        daemon.await_line(LOG + "waiting for the MPS daemon of nvidia.com/gpu before registering it: " + ready +
                          ": No such file or directory", "mps-ready")
        kubelet.quiet(1.5, "mps-ready: before the daemon is ready")
        pipe = os.path.join(root, "nvidia.com/gpu/pipe")
        os.makedirs(pipe)
        with open(ready, "w", encoding="utf-8"):
            pass
        control = socket.socket(socket.AF_UNIX)
        control.bind(os.path.join(pipe, "control"))
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu", f"mps-ready: {request}")
        daemon.await_line(LOG + "the MPS daemon of nvidia.com/gpu is ready", "mps-ready")
        watch, channel = lab.watch("nvidia.com/gpu")
        listed = [d[0] for d in watch.next("mps-ready: list")]
        check(listed == replicas(uuids, 2), f"mps-ready: listed {listed}")
        watch.cancel()
        channel.close()
        control.close()
        daemon.sigterm("mps-ready")
    kubelet.stop()
    print("ok mps-ready")


class ApiServer:
    """tests/kube/apiserver.py, the strict stand-in API server, on loopback with node n1 (no labels); `label`
    sets or removes one of n1's labels through its control port, as `kubectl label` would."""

    def __init__(self, folder):
        self.dir = folder
        self.process = subprocess.Popen([sys.executable, os.path.join(SOURCE, "tests", "kube", "apiserver.py"),
                                         "--dir", folder, "--node", "n1"], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(os.path.join(folder, "ready")):
            check(self.process.poll() is None, f"apiserver.py exited {self.process.returncode}")
            check(time.monotonic() < deadline, f"apiserver.py not ready within {TIMEOUT} s")
            time.sleep(0.05)
        with open(os.path.join(folder, "control-port"), encoding="utf-8") as f:
            self.control = int(f.read())
        self.kubeconfig = os.path.join(folder, "kubeconfig")

    def label(self, key, value):
        import urllib.request
        body = json.dumps({"node": "n1", "key": key, "value": value}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.control}/label", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            check(answer.status == 200, f"apiserver.py /label: {answer.status}")

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=TIMEOUT)


def configmap(folder, version, files):
    """A ConfigMap volume as the kubelet writes it: the files in a timestamped folder, "..data" a link to
    it swapped by a rename, each name a link through "..data"; the old folder removed."""
    os.makedirs(folder, exist_ok=True)
    stamped = f"..{version}"
    os.mkdir(os.path.join(folder, stamped))
    for name, text in files.items():
        with open(os.path.join(folder, stamped, name), "w", encoding="utf-8") as f:
            f.write(text)
    old = os.readlink(os.path.join(folder, "..data")) if os.path.islink(os.path.join(folder, "..data")) else None
    os.symlink(stamped, os.path.join(folder, "..data_tmp"))
    os.rename(os.path.join(folder, "..data_tmp"), os.path.join(folder, "..data"))
    for name in files:
        if not os.path.islink(os.path.join(folder, name)):
            os.symlink(os.path.join("..data", name), os.path.join(folder, name))
    if old:
        subprocess.run(["rm", "-rf", os.path.join(folder, old)], check=True)


def node_configs(lab, gpuctk, uuids):
    """node-config-*: per-node configs from the node label, read through apiserver.py."""
    api = ApiServer(os.path.join(lab.dir, "api"))
    try:
        node_configs_with(lab, gpuctk, uuids, api)
    finally:
        api.close()


def node_configs_with(lab, gpuctk, uuids, api):
    configs = os.path.join(lab.dir, "configs")
    configmap(configs, "v1", {"default": "version: v1\n", "ts2": slicing(2)})
    os.mkdir(os.path.join(lab.dir, "config"))
    config = os.path.join(lab.dir, "config", "config.yaml")
    label = "nvidia.com/device-plugin.config"

    def args(node):
        return ["--config-file", config, "--config-file-srcdir", configs, "--node-name", node, "--kubeconfig",
                api.kubeconfig, "--fallback-strategies", "named,single"]

    # node-config-missing-node: a node the API server does not have stops the start with one line.
    out = subprocess.run(lab.command + args("n2"), env=lab.env, capture_output=True,
                         text=True, timeout=TIMEOUT, check=False)
    want = (LOG + f"error: read node n2 (kubeconfig {api.kubeconfig}): GET /api/v1/nodes/n2: 404 Not Found: "
            'nodes "n2" not found\n')
    check(out.returncode == 1 and out.stderr == want,
          f"node-config-missing-node: exit {out.returncode}, stderr {out.stderr!r}, not {want!r}")
    check(not os.path.exists(config), "node-config-missing-node: the config file was written")
    print("ok node-config-missing-node")

    kubelet = lab.kubelet()
    with Plugin(lab, args("n1")) as daemon:
        # node-config-fallback: no label, no default: the "named" fallback picks "default".
        check(kubelet.registration().resource_name == "nvidia.com/gpu", "node-config-fallback: register")
        watch, channel = lab.watch("nvidia.com/gpu")
        listed = [d[0] for d in watch.next("node-config-fallback: list")]
        check(listed == uuids, f"node-config-fallback: listed {listed}")
        with open(config, encoding="utf-8") as f:
            check(f.read() == "version: v1\n", "node-config-fallback: the config file is not \"default\"'s")
        daemon.await_line(LOG + f'per-node config: "default" written to {config}', "node-config-fallback")
        print("ok node-config-fallback")

        # node-config-label: the label names ts2 (time-slicing, 2 replicas): 16 devices, and the labels
        # sidecar reading the same file says so.
        api.label(label, "ts2")
        watch, channel = lab.registered_again(kubelet, watch, channel, replicas(uuids, 2), "node-config-label")
        labels = subprocess.run([gpuctk, "labels", "--driver-root", lab.driver_root, "--dev-root", lab.dev_root,
                                 "--config-file", config, "-o", "-"], capture_output=True, text=True, check=False)
        check(labels.returncode == 0 and "nvidia.com/gpu.replicas=2" in labels.stdout.splitlines(),
              f"node-config-label: gpuctk labels: {labels.returncode} {labels.stdout!r} {labels.stderr!r}")
        print("ok node-config-label")

        # node-config-unknown: the label names a config the ConfigMap lacks: one error line, nothing changes.
        api.label(label, "ts3")
        daemon.await_line(LOG + 'error: per-node config: specified config "ts3" does not exist: keeping the '
                          "configuration in force", "node-config-unknown")
        kubelet.quiet(0.5, "node-config-unknown")
        watch.quiet(0.1)
        with open(config, encoding="utf-8") as f:
            check(f.read() == slicing(2), "node-config-unknown: the config file changed")
        print("ok node-config-unknown")

        # node-config-configmap: the ConfigMap updated with a "ts3" (3 replicas): chosen at once.
        configmap(configs, "v2", {"default": "version: v1\n", "ts2": slicing(2), "ts3": slicing(3)})
        request = kubelet.registration()
        check(request.resource_name == "nvidia.com/gpu", f"node-config-configmap: register {request}")
        channel.close()
        watch, channel = lab.watch("nvidia.com/gpu")
        listed = [d[0] for d in watch.next("node-config-configmap: list")]
        check(listed == replicas(uuids, 3), f"node-config-configmap: listed {listed}")
        unknown = [line for line in daemon.lines() if '"ts3" does not exist' in line]
        check(len(unknown) == 1, f"node-config-configmap: the failed choice logged {len(unknown)} times, not once")
        watch.cancel()
        channel.close()
        print("ok node-config-configmap")
        daemon.sigterm("node-config")
    kubelet.stop()


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
        self.daemon = Daemon([plugin, *daemon_args, "--kubelet-socket", kubelet_sock, "--config-file", config],
                             os.path.join(lab, self.name + ".log"), both=True, name=f"the daemon ({self.name})")

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
        self.daemon.process.send_signal(signal.SIGTERM)
        return answer_json(responses[0]), ms, list(listed)

    def finish(self):
        """The daemon exited 0 on SIGTERM and removed its sockets."""
        status = self.daemon.wait(f"{self.name}: SIGTERM")
        check(status == 0, f"{self.name}: the daemon exited {status} on SIGTERM")
        left = sorted(set(os.listdir(self.plugins)) - {"kubelet.sock"})
        check(not left, f"{self.name}: sockets left after SIGTERM: {left}")

    def dump_log(self):
        sys.stderr.write(f"the daemon's log ({self.name}):\n" + self.daemon.log())

    def close(self):
        self.daemon.close()
        self.kubelet.stop()


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
    run_main(lambda argv: allocate_main(argv[2:]) if len(argv) > 1 and argv[1] == "allocate" else main(argv),
             cri.CriError)
