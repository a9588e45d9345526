#!/usr/bin/env bash
# gpuctk-mps-control-daemon with Debian 12's REAL nvidia-cuda-mps-control (package nvidia-cuda-mps, the
# version of the driver user space tests/realhost/debian_nvidia_root.sh installs into its cached root; the
# host's apt sources are never used). Without a GPU the real control daemon still starts (-d forks, its
# SOCK_SEQPACKET control socket listens), answers and stores the default active thread percentage and
# pinned device memory limits, and quits; what it cannot do here is start an MPS server
# (nvidia-cuda-mps-server), which it does only when a CUDA client connects and which needs the kernel
# driver. The checks are mps_control_daemon.py's, reading the real daemon's control.log for the commands.
#   usage: mps_control_real.sh <gpuctk-mps-control-daemon> <gpuctk-fixture> <gpuctk-mps-ready-check>
# Exit 77 (skip) only when not root; a root that cannot be made is a failure, as every realhost test has it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: not root: the Debian root and the shm tmpfs need root" >&2
  exit 77
fi
out=$(bash "$here/../realhost/debian_nvidia_root.sh") || exit 1
root=$(sed -n 's/^root=//p' <<<"$out")
control=$root/usr/bin/nvidia-cuda-mps-control
[ -x "$control" ] || {
  echo "FAIL: $control: not in the Debian root (package nvidia-cuda-mps)" >&2
  exit 1
}
exec /usr/bin/python3 "$here/mps_control_daemon.py" "$1" "$2" "$3" "$control" --real
