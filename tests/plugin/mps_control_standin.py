#!/usr/bin/python3
"""A stand-in for nvidia-cuda-mps-control (test code), for what the real one needs a GPU's kernel driver for
(it needs none for what it is asked here, but tests/plugin/mps_control_real.sh runs the real one too).

    mps_control_standin.py -d     start the control daemon: fork away, listen on the unix socket (a
                                  SOCK_SEQPACKET one, as the real one listens)
                                  $CUDA_MPS_PIPE_DIRECTORY/control, return 0 once it listens (1 and a
                                  line on stderr when one already listens there)
    mps_control_standin.py        the client: read commands from stdin, send them to that socket, print
                                  the answer; exit 1 with "Cannot find MPS control daemon process" when
                                  nothing listens

The daemon answers as the real one (535) does: get_/set_default_active_thread_percentage print the
percentage with one decimal ("25.0"), set_default_device_pinned_mem_limit prints nothing,
get_default_device_pinned_mem_limit the limit as given, quit prints nothing and exits (its socket file
stays, as the real one's does). What it gets is recorded in $CUDA_MPS_LOG_DIRECTORY/standin.record, one
line each: "start CUDA_VISIBLE_DEVICES=<value> env=<the names of its environment, sorted>", then
"cmd <command>" per command.
"""
import os
import socket
import sys

SOCKET = "control"


def record(line):
    path = os.path.join(os.environ["CUDA_MPS_LOG_DIRECTORY"], "standin.record")
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def answer(state, command):
    words = command.split()
    if not words:
        return ""
    name, args = words[0], words[1:]
    if name == "get_default_active_thread_percentage" and not args:
        return f"{state['threads']:.1f}\n"
    if name == "set_default_active_thread_percentage" and len(args) == 1:
        state["threads"] = float(args[0])
        return f"{state['threads']:.1f}\n"
    if name == "set_default_device_pinned_mem_limit" and len(args) == 2:
        state["pinned"][args[0]] = args[1]
        return ""
    if name == "get_default_device_pinned_mem_limit" and len(args) == 1:
        return state["pinned"].get(args[0], "0") + "\n"
    if name == "quit" and not args:
        state["quit"] = True
        return ""
    return f"Unrecognized command: {command}\n"


def serve(listener):
    state = {"threads": 100.0, "pinned": {}, "quit": False}
    while not state["quit"]:
        conn, _ = listener.accept()
        with conn:
            try:
                handle(conn, state)
            except OSError:
                pass  # a client gone before its answer (a probe that only connects): the next one


def handle(conn, state):
    data = b""
    while len(data) < 4096:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    out = ""
    for command in data.decode("utf-8", "replace").splitlines():
        record(f"cmd {command.strip()}")
        out += answer(state, command.strip())
    if out:
        conn.sendall(out.encode())


def listening(path):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def daemon():
    path = os.path.join(os.environ["CUDA_MPS_PIPE_DIRECTORY"], SOCKET)
    if listening(path):
        print("An instance of this daemon is already running", file=sys.stderr)
        return 1
    if os.path.lexists(path):
        os.unlink(path)  # a socket the last daemon left
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(8)
    # Python itself adds LC_CTYPE=C.UTF-8 to an environment without a locale (PEP 538): not the caller's.
    names = sorted(n for n in os.environ if not (n == "LC_CTYPE" and "LANG" not in os.environ))
    record(f"start CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')} env={','.join(names)}")
    if os.fork() > 0:
        return 0  # the parent returns once the socket listens, as the real -d does
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        serve(listener)
    finally:
        os._exit(0)
    return 0


def client():
    path = os.path.join(os.environ["CUDA_MPS_PIPE_DIRECTORY"], SOCKET)
    commands = sys.stdin.read()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(path)
    except OSError:
        print("Cannot find MPS control daemon process", file=sys.stderr)
        return 1
    with conn:
        conn.sendall(commands.encode())
        conn.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                break
            out += chunk
    sys.stdout.write(out.decode("utf-8", "replace"))
    return 0


if __name__ == "__main__":
    sys.exit(daemon() if sys.argv[1:] == ["-d"] else client())
