#!/usr/bin/python3
"""A kubelet stand-in (test code): drives a container runtime over CRI v1 the way the kubelet does for one
pod, so that the end-to-end tests reach gpuctk through the path clusters use: the device plugin's answer
(CDI devices, cdi.k8s.io annotations, NVIDIA_VISIBLE_DEVICES, volume mounts) travels in the
CreateContainer request, and the runtime handler (a RuntimeClass's) in RunPodSandbox.

The stubs are generated from the CRI's api.proto of Debian's package (never a copied file) into a
directory, once per proto (keyed by its hash), with grpc_tools' protoc. Debian 12's protoc knows neither
the field option debug_redact (cri-api >= 0.33) nor, without its file, gogoproto's options (cri-api 0.32
imports gogo.proto for Go code generation only): both are left out of the copy that is compiled.

    cri.py --socket SOCK --proto API.PROTO --stubs DIR version
    cri.py ... pod [pod options] -- COMMAND...
        RunPodSandbox (host network, so no CNI; no hostname), CreateContainer, StartContainer, wait for
        the container to exit, read its log, StopPodSandbox, RemovePodSandbox, and check that neither the
        pod nor its container is listed any more. Prints the container's output (the CRI log's lines),
        then "container exit N". Options:
          --name NAME            the pod's name (and uid), unique per runtime
          --handler NAME         the RuntimeClass handler ("" : the default runtime)
          --image REF            the container's image; --pause is not needed (the runtime's sandbox image)
          --cdi-device NAME      CreateContainer's CDI_devices (repeatable)
          --annotation KEY=VAL   the container's annotations (repeatable)
          --env KEY=VAL          the container's environment (repeatable)
          --mount HOST:CONTAINER a read-only bind mount (repeatable)
          --allocate-response FILE  a device plugin's ContainerAllocateResponse as JSON (tests/plugin/
                                 kubelet.py allocate writes it), handed on as the kubelet does
                                 (pkg/kubelet/cm/devicemanager, then kuberuntime's generateContainerConfig):
                                 envs -> Envs, mounts -> Mounts (read_only as given), devices -> Devices
                                 (host path, container path, permissions), annotations -> the container's
                                 Annotations, cdi_devices -> CDIDevices; before the options' own, as the
                                 kubelet puts the device plugin's first
          --cgroup-parent PATH   the pod's cgroup parent (cgroupfs driver), as the kubelet sets it
          --log-dir DIR          the pod's log directory
          --expect LINE          the output must hold this line (repeatable), else exit 1
          --timeout SECONDS      for the container to exit (default 60)
    cri.py ... soak --cycles N --form "POD OPTIONS" [--form ...] [--times FILE] -- COMMAND...
        N pods one after another, the forms taken in turn (each a shell-quoted pod option list, with its
        own --expect lines); --name is NAME-<cycle>. Prints one line per 100 cycles and the total time;
        with --times, writes "<form index> <milliseconds>" to FILE for each pod's whole life (bench/).
    cri.py ... state
        "sandboxes N" and "containers N": what the runtime still lists.
    cri.py ... handlers
        The runtime handlers the runtime's CRI serves now, one per line, sorted (from the config in its
        verbose Status, as `crictl info` shows it).

Every failure is one line "cri.py: error: <what>: <why>" on stderr and exit status 1.
"""
import argparse
import hashlib
import importlib
import json
import os
import re
import shlex
import subprocess
import sys
import time


class CriError(Exception):
    pass


def load_stubs(proto, stubs):
    """Imports api_pb2 and api_pb2_grpc generated from `proto` into stubs/<hash>/."""
    with open(proto, "rb") as f:
        text = f.read().decode()
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    out = os.path.join(stubs, key)
    if not os.path.exists(os.path.join(out, "api_pb2_grpc.py")):
        os.makedirs(out, exist_ok=True)
        text = re.sub(r"\s*\[debug_redact = true\]", "", text)
        text = re.sub(r'(?m)^import "github\.com/gogo/protobuf/gogoproto/gogo\.proto";\n', "", text)
        text = re.sub(r"(?m)^option \(gogoproto\.[a-z_]+\)\s*=\s*[a-z]+;\n", "", text)
        # Field options (the device plugin API's [(gogoproto.customname) = "DevicesIDs"]): Go names only.
        text = re.sub(r'\s*\[\(gogoproto\.[a-z_]+\)\s*=\s*"[A-Za-z]*"\]', "", text)
        if "gogoproto" in text or "debug_redact" in text:
            raise CriError(f"{proto}: options left that Debian 12's protoc does not know")
        with open(os.path.join(out, "api.proto"), "w") as f:
            f.write(text)
        result = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", "-I", out, "--python_out", out,
             "--grpc_python_out", out, os.path.join(out, "api.proto")],
            capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CriError(f"protoc {proto}: {result.stderr.strip().splitlines()[-1:]}")
    sys.path.insert(0, out)
    return importlib.import_module("api_pb2"), importlib.import_module("api_pb2_grpc")


class Cri:
    def __init__(self, socket, pb, pb_grpc):
        import grpc  # Debian's python3-grpcio
        self.grpc = grpc
        self.pb = pb
        self.channel = grpc.insecure_channel("unix://" + socket)
        self.rt = pb_grpc.RuntimeServiceStub(self.channel)

    def call(self, what, method, request, timeout=120):
        try:
            return method(request, timeout=timeout)
        except self.grpc.RpcError as e:
            raise CriError(f"{what}: {e.code().name}: {e.details()}") from None

    def version(self):
        v = self.call("Version", self.rt.Version, self.pb.VersionRequest(version="v1"))
        return f"{v.runtime_name} {v.runtime_version} (CRI {v.runtime_api_version})"

    def handlers(self):
        status = self.call("Status", self.rt.Status, self.pb.StatusRequest(verbose=True))
        try:
            config = json.loads(status.info["config"])
            return sorted(config["containerd"]["runtimes"])
        except (KeyError, ValueError) as e:
            raise CriError(f"Status: no runtimes in the verbose info's config ({e})") from None

    def state(self):
        pods = self.call("ListPodSandbox", self.rt.ListPodSandbox, self.pb.ListPodSandboxRequest())
        ctrs = self.call("ListContainers", self.rt.ListContainers, self.pb.ListContainersRequest())
        return len(pods.items), len(ctrs.containers)

    def pod(self, o, command):
        """One pod's life, as the kubelet lives it. Returns (output lines, exit code)."""
        pb = self.pb
        answer = load_answer(o.allocate_response)
        os.makedirs(o.log_dir, exist_ok=True)
        sandbox_config = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=o.name, uid=o.name, namespace="gpuctk-e2e", attempt=0),
            log_directory=o.log_dir,
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=o.cgroup_parent,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=pb.NamespaceOption(network=pb.NODE))),
        )
        pod_id = self.call("RunPodSandbox", self.rt.RunPodSandbox, pb.RunPodSandboxRequest(
            config=sandbox_config, runtime_handler=o.handler)).pod_sandbox_id
        try:
            log_path = o.name + ".log"
            annotations = dict(answer["annotations"])
            annotations.update(split_pair(a, "=") for a in o.annotation)
            config = pb.ContainerConfig(
                metadata=pb.ContainerMetadata(name="probe", attempt=0),
                image=pb.ImageSpec(image=o.image),
                command=command,
                envs=[pb.KeyValue(key=k, value=self.env_value(v))
                      for k, v in [*answer["envs"].items(), *(split_pair(e, "=") for e in o.env)]],
                mounts=[pb.Mount(host_path=m["host_path"], container_path=m["container_path"],
                                 readonly=m["read_only"]) for m in answer["mounts"]] +
                       [pb.Mount(host_path=h, container_path=c, readonly=True)
                        for h, c in (split_pair(m, ":") for m in o.mount)],
                devices=[pb.Device(host_path=d["host_path"], container_path=d["container_path"],
                                   permissions=d["permissions"]) for d in answer["devices"]],
                annotations=annotations,
                log_path=log_path,
                CDI_devices=[pb.CDIDevice(name=d) for d in [*answer["cdi_devices"], *o.cdi_device]],
            )
            ctr_id = self.call("CreateContainer", self.rt.CreateContainer, pb.CreateContainerRequest(
                pod_sandbox_id=pod_id, config=config, sandbox_config=sandbox_config)).container_id
            self.call("StartContainer", self.rt.StartContainer, pb.StartContainerRequest(container_id=ctr_id))
            code = self.wait_exited(ctr_id, o.timeout)
            lines = self.read_log(os.path.join(o.log_dir, log_path), o.timeout)
        finally:
            self.call("StopPodSandbox", self.rt.StopPodSandbox, pb.StopPodSandboxRequest(pod_sandbox_id=pod_id))
            self.call("RemovePodSandbox", self.rt.RemovePodSandbox,
                      pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
        left = self.call("ListPodSandbox", self.rt.ListPodSandbox, pb.ListPodSandboxRequest(
            filter=pb.PodSandboxFilter(id=pod_id))).items
        ctrs = self.call("ListContainers", self.rt.ListContainers, pb.ListContainersRequest(
            filter=pb.ContainerFilter(pod_sandbox_id=pod_id))).containers
        if left or ctrs:
            raise CriError(f"pod {o.name}: still listed after RemovePodSandbox "
                           f"({len(left)} sandbox, {len(ctrs)} containers)")
        return lines, code

    def env_value(self, value):
        """KeyValue.value is a string up to cri-api 0.33 and bytes since (the same on the wire)."""
        field = self.pb.KeyValue.DESCRIPTOR.fields_by_name["value"]
        return value.encode() if field.type == field.TYPE_BYTES else value

    def wait_exited(self, ctr_id, timeout):
        deadline = time.monotonic() + timeout
        while True:
            status = self.call("ContainerStatus", self.rt.ContainerStatus,
                               self.pb.ContainerStatusRequest(container_id=ctr_id)).status
            if status.state == self.pb.CONTAINER_EXITED:
                return status.exit_code
            if time.monotonic() > deadline:
                raise CriError(f"container {ctr_id}: not exited after {timeout} s "
                               f"(state {self.pb.ContainerState.Name(status.state)})")
            time.sleep(0.02)

    @staticmethod
    def read_log(path, timeout):
        """The container's output from its CRI log ("<time> <stream> <P|F> <text>" per line; P lines are
        parts of one line). The runtime may close the log a moment after the container exits: wait for
        the probe's last line, "probe done"."""
        deadline = time.monotonic() + timeout
        while True:
            lines, part = [], ""
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    for record in f.read().splitlines():
                        fields = record.split(" ", 3)
                        if len(fields) < 3:
                            continue
                        text = fields[3] if len(fields) == 4 else ""
                        if fields[2] == "P":
                            part += text
                        else:
                            lines.append(part + text)
                            part = ""
            except FileNotFoundError:
                pass
            if "probe done" in lines or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)


def load_answer(path):
    """A ContainerAllocateResponse written by kubelet.py allocate (or the empty answer without one)."""
    empty = {"envs": {}, "mounts": [], "devices": [], "annotations": {}, "cdi_devices": []}
    if path is None:
        return empty
    try:
        with open(path, encoding="utf-8") as f:
            answer = json.load(f)
    except (OSError, ValueError) as e:
        raise CriError(f"--allocate-response {path}: {e}") from None
    if not isinstance(answer, dict) or set(answer) != set(empty):
        raise CriError(f"--allocate-response {path}: not an answer of kubelet.py allocate "
                       f"(keys {sorted(answer) if isinstance(answer, dict) else type(answer).__name__})")
    return answer


def split_pair(text, sep):
    if sep not in text:
        raise CriError(f"{text!r}: expected KEY{sep}VALUE")
    key, value = text.split(sep, 1)
    return key, value


def pod_parser():
    p = argparse.ArgumentParser(prog="cri.py pod", add_help=False)
    p.add_argument("--name", required=True)
    p.add_argument("--handler", default="")
    p.add_argument("--image", required=True)
    p.add_argument("--cdi-device", action="append", default=[])
    p.add_argument("--annotation", action="append", default=[])
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--mount", action="append", default=[])
    p.add_argument("--allocate-response")
    p.add_argument("--cgroup-parent", default="")
    p.add_argument("--log-dir", required=True)
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--timeout", type=float, default=60)
    return p


def run_pod(cri, options, command):
    lines, code = cri.pod(options, command)
    missing = [e for e in options.expect if e not in lines]
    if missing:
        raise CriError(f"pod {options.name}: no line {missing[0]!r} in its output: {lines!r}")
    return lines, code


def main(argv):
    top = argparse.ArgumentParser(prog="cri.py")
    top.add_argument("--socket", required=True)
    top.add_argument("--proto", required=True)
    top.add_argument("--stubs", required=True)
    top.add_argument("command", choices=["version", "pod", "soak", "state", "handlers"])
    args, rest = top.parse_known_args(argv[1:])
    command = []
    if "--" in rest:
        command = rest[rest.index("--") + 1:]
        rest = rest[:rest.index("--")]
    pb, pb_grpc = load_stubs(args.proto, args.stubs)
    cri = Cri(args.socket, pb, pb_grpc)
    if args.command == "version":
        print(cri.version())
    elif args.command == "handlers":
        for name in cri.handlers():
            print(name)
    elif args.command == "state":
        pods, ctrs = cri.state()
        print(f"sandboxes {pods}")
        print(f"containers {ctrs}")
    elif args.command == "pod":
        options = pod_parser().parse_args(rest)
        lines, code = run_pod(cri, options, command)
        for line in lines:
            print(line)
        print(f"container exit {code}")
    else:
        soak = argparse.ArgumentParser(prog="cri.py soak")
        soak.add_argument("--cycles", type=int, required=True)
        soak.add_argument("--form", action="append", required=True)
        soak.add_argument("--name", required=True)
        soak.add_argument("--times")
        s = soak.parse_args(rest)
        times = open(s.times, "w", encoding="utf-8") if s.times else None
        start = time.monotonic()
        for cycle in range(s.cycles):
            form = s.form[cycle % len(s.form)]
            options = pod_parser().parse_args(shlex.split(form) + ["--name", f"{s.name}-{cycle}"])
            began = time.monotonic()
            _, code = run_pod(cri, options, command)
            if times:
                times.write(f"{cycle % len(s.form)} {(time.monotonic() - began) * 1000:.3f}\n")
            if code != 0:
                raise CriError(f"pod {options.name} ({form}): the container exited {code}")
            if (cycle + 1) % 100 == 0:
                print(f"soak: {cycle + 1} pods in {time.monotonic() - start:.1f} s", flush=True)
        if times:
            times.close()
        print(f"soak: {s.cycles} pods, {len(s.form)} forms, {time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except CriError as e:
        print(f"cri.py: error: {e}", file=sys.stderr)
        sys.exit(1)
