#!/usr/bin/python3
"""gpuctk-mps-control-daemon end to end (test code), on the fixture host dgx-a100 (8 GPUs, the mock NVML)
in a private mount namespace (it re-runs itself under `unshare -m --propagation private`), as root.

    mps_control_daemon.py DAEMON FIXTURE_TOOL READY_CHECK CONTROL [--real]

DAEMON: gpuctk-mps-control-daemon; FIXTURE_TOOL: gpuctk-fixture; READY_CHECK: gpuctk-mps-ready-check
(plugin::mps_ready as the device plugin asks it); CONTROL: the nvidia-cuda-mps-control to run, the
stand-in (mps_control_standin.py, which records what it got) or, with --real, Debian's real one, whose
control.log says what it got.

Checks, in order, each printed as "ok <what>" (the first failure: "mps_control_daemon.py: error: <what>"
and exit 1; not root or no unshare: "SKIP: <why>" and exit 77):
  not-mps      without sharing.mps the daemon says so, makes nothing, and SIGTERM ends it with exit 0
  link         <root>/nvidia.com/gpu/log is a link to another folder: the start is refused with
               "...: a symbolic link, refused", nothing is written through it, no GPU's compute mode
               changes, no .ready; SIGTERM: exit 0, the shm tmpfs gone
  folders      sharing.mps with 4 replicas of nvidia.com/gpu: <root>/nvidia.com/gpu/{pipe,log} are
               folders of mode 0755
  shm          <root>/shm is a tmpfs, rw,nosuid,nodev,noexec,relatime, of half of MemTotal
  commands     the control daemon was started with exactly CUDA_MPS_PIPE_DIRECTORY,
               CUDA_MPS_LOG_DIRECTORY and CUDA_VISIBLE_DEVICES=<the 8 UUIDs>, then got
               set_default_device_pinned_mem_limit <i> 10240M for GPUs 0-7,
               set_default_active_thread_percentage 25 and get_default_active_thread_percentage
  compute-mode the mock NVML recorded mode 3 (EXCLUSIVE_PROCESS) for every GPU
  ready        .ready is there and plugin::mps_ready says ready
  sighup       SIGHUP: the daemon quits the control daemon and starts it again with the same commands,
               .ready and one tmpfs again (NVIDIA's restart)
  sigterm      SIGTERM: exit 0; quit received, the control socket no longer accepts, .ready gone,
               mps_ready says not ready, every GPU's mode 0 again, <root>/shm no longer a mount
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
from daemon_test import (TIMEOUT, Daemon, Failure, check, host_gpus, main as run_main,  # noqa: E402
                         materialise, nvml_conf, skip)

RESOURCE = "nvidia.com/gpu"
REPLICAS = 4


def mounts_at(path):
    """The mountinfo entries (mount options, fs type, super options) whose mount point is `path`."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[4] == path:
                found.append((fields[5], fields[dash + 1], fields[dash + 3]))
    return found


def mem_total_kib():
    with open("/proc/meminfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    raise Failure("no MemTotal in /proc/meminfo")


def compute_modes(state):
    if not os.path.exists(state):
        return {}
    with open(state, encoding="utf-8") as f:
        return dict(tuple(int(kv.split("=")[1]) for kv in line.split()) for line in f if line.strip())


def listening(pipe):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        probe.connect(os.path.join(pipe, "control"))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def wait_for(condition, what, log):
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise Failure(f"{what} within {TIMEOUT} s; the daemon's log:\n{log()}")
        time.sleep(0.05)


class Control(Daemon):
    """gpuctk-mps-control-daemon, its stdout and stderr in LAB/NAME.log."""

    def __init__(self, command, lab, name):
        super().__init__(command, os.path.join(lab, f"{name}.log"), both=True)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.wait("SIGTERM")
        finally:
            self.close()
        check(status == 0, f"exit status {status} after SIGTERM; log:\n{self.log()}")


def ready_check(tool, root):
    out = subprocess.run([tool, root, RESOURCE], capture_output=True, text=True, check=False)
    return out.returncode == 0, out.stdout.strip()


def write_config(lab, name, text):
    path = os.path.join(lab, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def not_mps(base, lab, root):
    config = write_config(lab, "plain.yaml", f"version: v1\nflags:\n  mpsRoot: {root}\n")
    daemon = Control(base + ["--config-file", config], lab, "not-mps")
    wait_for(lambda: "not MPS" in daemon.log(), "no line saying MPS is not configured", daemon.log)
    daemon.stop()
    check(not os.path.exists(root), f"without MPS it made {root}")
    print("ok not-mps")


def link_refused(base, lab, root, config, state):
    resource_dir = os.path.join(root, RESOURCE)
    os.makedirs(resource_dir)
    elsewhere = os.path.join(lab, "elsewhere")
    os.mkdir(elsewhere)
    os.symlink(elsewhere, os.path.join(resource_dir, "log"))
    daemon = Control(base + ["--config-file", config], lab, "link")
    want = f"{resource_dir}/log: a symbolic link, refused"
    wait_for(lambda: want in daemon.log(), f"no refusal {want!r}", daemon.log)
    check(os.listdir(elsewhere) == [], f"it wrote through the link: {os.listdir(elsewhere)}")
    check(set(compute_modes(state).values()) <= {0}, f"compute modes changed: {compute_modes(state)}")
    check(not os.path.exists(os.path.join(resource_dir, ".ready")), ".ready with a refused start")
    daemon.stop()
    check(mounts_at(os.path.join(root, "shm")) == [], "the shm tmpfs stayed after a refused start")
    os.unlink(os.path.join(resource_dir, "log"))
    print("ok link")


def limit_commands(gpus):
    limit = gpus[0]["memory"] // REPLICAS // (1024 * 1024)
    commands = [f"set_default_device_pinned_mem_limit {i} {limit}M" for i in range(len(gpus))]
    return commands + [f"set_default_active_thread_percentage {100 // REPLICAS}",
                       "get_default_active_thread_percentage"]


def commands_got(base, real):
    """The commands the control daemon got, in order: from the real one's control.log or the stand-in's record."""
    if real:
        with open(os.path.join(base, "log", "control.log"), encoding="utf-8") as f:
            return [line.split("Cmd:", 1)[1].strip() for line in f if "Cmd:" in line]
    with open(os.path.join(base, "log", "standin.record"), encoding="utf-8") as f:
        return [line[4:] for line in f.read().splitlines() if line.startswith("cmd ")]


def sighup(daemon, root, gpus, real, ready_tool):
    base = os.path.join(root, RESOURCE)
    commands = limit_commands(gpus)
    daemon.process.send_signal(signal.SIGHUP)
    want = commands + ["quit"] + commands
    wait_for(lambda: commands_got(base, real) == want and os.path.exists(os.path.join(base, ".ready")),
             f"after SIGHUP the commands {want} and .ready", daemon.log)
    ok, text = ready_check(ready_tool, root)
    check(ok, f"mps_ready after SIGHUP: {text}")
    check(len(mounts_at(os.path.join(root, "shm"))) == 1, "after SIGHUP: not exactly one tmpfs on shm")
    print("ok sighup")


def check_started(root, gpus, real, state, ready_tool):
    base = os.path.join(root, RESOURCE)
    for leaf in ("pipe", "log"):
        st = os.lstat(os.path.join(base, leaf))
        check(oct(st.st_mode) == oct(0o40755), f"{base}/{leaf}: mode {oct(st.st_mode)}, not a 0755 folder")
    print("ok folders")

    shm = mounts_at(os.path.join(root, "shm"))
    check(len(shm) == 1, f"{root}/shm: mounts {shm}, want one tmpfs")
    options, fstype, super_options = shm[0]
    check(fstype == "tmpfs", f"{root}/shm: {fstype}, not tmpfs")
    check(set(options.split(",")) == {"rw", "nosuid", "nodev", "noexec", "relatime"},
          f"{root}/shm: options {options}")
    # Its size from statfs: mountinfo leaves size= out when it is tmpfs's default, which half of
    # MemTotal is; the kernel rounds it up to whole pages.
    st = os.statvfs(os.path.join(root, "shm"))
    size = st.f_blocks * st.f_frsize // 1024
    want = mem_total_kib() // 2
    check(0 <= size - want < 4 * 1024, f"{root}/shm: {size} KiB ({super_options}), want {want} KiB")
    print("ok shm")

    uuids = [g["uuid"] for g in gpus]
    commands = limit_commands(gpus)
    if real:
        got = commands_got(base, real)
        check(got == commands, f"the real control daemon got {got}, want {commands}")
    else:
        with open(os.path.join(base, "log", "standin.record"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        start = (f"start CUDA_VISIBLE_DEVICES={','.join(uuids)} "
                 "env=CUDA_MPS_LOG_DIRECTORY,CUDA_MPS_PIPE_DIRECTORY,CUDA_VISIBLE_DEVICES")
        want_lines = [start] + [f"cmd {c}" for c in commands]
        check(lines == want_lines, f"the stand-in got {lines}, want {want_lines}")
    print("ok commands")

    modes = compute_modes(state)
    check(modes == {i: 3 for i in range(len(gpus))}, f"compute modes {modes}, want 3 on every GPU")
    print("ok compute-mode")

    check(os.path.isfile(os.path.join(base, ".ready")), ".ready missing")
    ok, text = ready_check(ready_tool, root)
    check(ok, f"mps_ready: {text}")
    print("ok ready")


def check_stopped(root, gpus, real, state, ready_tool):
    base = os.path.join(root, RESOURCE)
    if real:
        with open(os.path.join(base, "log", "control.log"), encoding="utf-8") as f:
            text = f.read()
        check("Cmd:quit" in text and "Exit with status 0" in text, f"the real daemon did not quit: {text}")
    else:
        with open(os.path.join(base, "log", "standin.record"), encoding="utf-8") as f:
            check(f.read().splitlines()[-1] == "cmd quit", "the stand-in got no quit last")
    check(not listening(os.path.join(base, "pipe")), "the control socket still accepts")
    check(not os.path.exists(os.path.join(base, ".ready")), ".ready stayed")
    ok, text = ready_check(ready_tool, root)
    check(not ok and text == f"not ready: {base}/.ready: No such file or directory", f"mps_ready: {text}")
    modes = compute_modes(state)
    check(modes == {i: 0 for i in range(len(gpus))}, f"compute modes {modes}, want 0 again")
    check(mounts_at(os.path.join(root, "shm")) == [], f"{root}/shm is still a mount")
    print("ok sigterm")


def main(argv):
    real = "--real" in argv
    args = [a for a in argv[1:] if a != "--real"]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    daemon_bin, fixture_tool, ready_tool, control = args
    gpus = host_gpus()
    with tempfile.TemporaryDirectory(prefix="gpuctk-mps-") as lab:
        driver_root, dev_root = materialise(fixture_tool, "dgx-a100", os.path.join(lab, "host"))
        state = os.path.join(os.path.dirname(nvml_conf(driver_root)), "nvml-compute-mode")
        root = os.path.join(lab, "mps")
        base = [daemon_bin, "--driver-root", driver_root, "--container-driver-root", driver_root,
                "--dev-root", dev_root, "--container-dev-root", dev_root, "--mps-control-binary", control]
        not_mps(base, lab, root)
        config = write_config(lab, "mps.yaml", f"version: v1\nflags:\n  mpsRoot: {root}\nsharing:\n  mps:\n"
                              f"    resources:\n    - name: gpu\n      replicas: {REPLICAS}\n")
        link_refused(base, lab, root, config, state)
        daemon = Control(base + ["--config-file", config], lab, "mps")
        try:
            wait_for(lambda: os.path.exists(os.path.join(root, RESOURCE, ".ready")), ".ready", daemon.log)
            check_started(root, gpus, real, state, ready_tool)
            sighup(daemon, root, gpus, real, ready_tool)
        except Failure:
            daemon.process.kill()
            daemon.process.wait()
            subprocess.run(["umount", "-l", os.path.join(root, "shm")], check=False, capture_output=True)
            raise
        daemon.stop()
        check_stopped(root, gpus, real, state, ready_tool)
    return 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        skip("not root: mounting the shm tmpfs needs CAP_SYS_ADMIN")
    if os.environ.get("GPUCTK_MPS_TEST_UNSHARED") != "1":
        # Once, in a private mount namespace: the tmpfs never reaches the host's mount table.
        env = dict(os.environ, GPUCTK_MPS_TEST_UNSHARED="1")
        try:
            sys.exit(subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, *sys.argv],
                                    env=env, check=False).returncode)
        except FileNotFoundError:
            skip("unshare (util-linux) is not installed")
    run_main(main)
