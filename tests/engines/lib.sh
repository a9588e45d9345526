# shellcheck shell=bash
# Helpers of the engines suite (tests/e2e/engines_*.sh; sourced after tests/e2e/lib.sh): the engines
# clusters run today (engines.sh: containerd 1.7 and 2.x, docker 26 and 28 from Debian's newer suites,
# cached), a kubelet stand-in (cri.py) that drives containerd's CRI plugin, offline images (oci_image.py),
# and the real-package NVIDIA host of tests/realhost with the devices of a multi-GPU node (devices.yaml:
# GPU 0, and GPU 1 in MIG mode).

engines_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Debian's python3: python3-grpcio and python3-grpc-tools are its packages (a python3 earlier on PATH, a
# pyenv one say, lacks them).
engines_python=/usr/bin/python3

# engines_python_check: skips unless Debian's python3 has grpc and grpc_tools (scripts/deps.sh test).
engines_python_check() {
  "$engines_python" -c 'import grpc, grpc_tools.protoc' 2>/dev/null ||
    e2e_skip "$engines_python cannot import grpc and grpc_tools (python3-grpcio, python3-grpc-tools: scripts/deps.sh test)"
}

# engines_fetch SUITE: the engines of Debian SUITE (trixie or sid), fetched into the test cache once.
# Sets engines_root (the unpacked packages), containerd_version, docker_version, cri_proto, and says which
# versions run. A failed fetch fails the test with engines.sh's one line.
engines_fetch() {
  local out
  out=$(bash "$engines_dir/engines.sh" "$1") || exit 1  # engines.sh said why, in its one FAIL line
  engines_root=$(sed -n 's/^root=//p' <<<"$out")
  containerd_version=$(sed -n 's/^containerd_version=//p' <<<"$out")
  docker_version=$(sed -n 's/^docker_version=//p' <<<"$out")
  cri_proto=$(sed -n 's/^cri_proto=//p' <<<"$out")
  echo "engines: containerd $containerd_version, docker $docker_version (Debian $1); $(runc --version | head -1) (Debian 12)"
}

# engines_real_host GPUCTK FIXTURE: the real-package host with devices.yaml's devices, its spec as
# `gpuctk cdi generate` writes it with default options in $LAB/cdi/nvidia.yaml (a spec directory only the
# engines under test read), the same spec as JSON in $LAB/spec.json (not in a spec directory: the tests
# read it), a gpuctk config $LAB/gpuctk.yaml for the runtime shim (that spec directory, this gpuctk as
# hook-path, volume mounts accepted as the device plugin's volume-mounts strategy needs, log
# $LAB/gpuctk.log) and $LAB/bin/gpuctk-runtime. Sets driver_root, dev_root, real_version, real_cudart.
engines_real_host() {
  local gpuctk=$1 fixture=$2 dir=$LAB/devices
  # shellcheck source=tests/realhost/lib.sh
  source "$engines_dir/../realhost/lib.sh"
  realhost_root
  mkdir -p "$dir/manifest" "$LAB/cdi" "$LAB/bin"
  sed "s/^  version: .*/  version: $real_version/" "$engines_dir/devices.yaml" >"$dir/manifest/host.yaml"
  grep -qx "  version: $real_version" "$dir/manifest/host.yaml" || e2e_fail "could not set the version in $dir/manifest/host.yaml"
  "$fixture" materialize "$dir/manifest/host.yaml" "$dir/host" >"$dir/roots" 2>"$dir/materialize.err" ||
    e2e_fail "materialising the devices failed: $(cat "$dir/materialize.err")"
  grep -qx "nodes=real" "$dir/roots" || e2e_skip "fixture device nodes are not real char devices"
  driver_root=$real_root
  dev_root=$(sed -n 's/^dev_root=//p' "$dir/roots")
  "$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --hook-path "$(realpath "$gpuctk")" \
    --output "$LAB/cdi/nvidia.yaml" 2>"$LAB/generate.err" ||
    e2e_fail "cdi generate failed: $(cat "$LAB/generate.err")"
  # The real NVML cannot initialise without the kernel module: `auto` falls back to /proc, saying so once
  # (and that a build tree's gpuctk will not last).
  [ "$(e2e_without_hook_path_warnings <"$LAB/generate.err" | wc -l)" = 1 ] &&
    grep -q "; GPUs from /proc/driver/nvidia instead$" "$LAB/generate.err" ||
    e2e_fail "cdi generate said more than the NVML fallback: $(cat "$LAB/generate.err")"
  "$gpuctk" cdi generate --driver-root "$driver_root" --dev-root "$dev_root" --hook-path "$(realpath "$gpuctk")" \
    --format json --output "$LAB/spec.json" 2>/dev/null || e2e_fail "cdi generate --format json failed"
  cat >"$LAB/gpuctk.yaml" <<YAML
spec-dirs: [$LAB/cdi]
driver-root: $driver_root
dev-root: $dev_root
hook-path: $(realpath "$gpuctk")
accept-volume-mounts: true
log-file: $LAB/gpuctk.log
log-level: debug
YAML
  ln -s "$(realpath "$gpuctk")" "$LAB/bin/gpuctk-runtime"
}

# engines_spec_nodes DEVICE: the GPU nodes (/dev/nvidia<N>, /dev/nvidia-caps/*) that the spec's DEVICE
# (a name of kind nvidia.com/gpu, or "all") gives a container, sorted, space-separated: what a container
# that asked for DEVICE must see, and nothing else.
engines_spec_nodes() {
  "$engines_python" - "$LAB/spec.json" "$1" <<'PY'
import json, re, sys
spec = json.load(open(sys.argv[1]))
nodes = [n["path"] for d in spec["devices"] if d["name"] == sys.argv[2]
         for n in d["containerEdits"].get("deviceNodes", [])]
print(" ".join(sorted(p for p in nodes if re.fullmatch(r"/dev/nvidia[0-9]+|/dev/nvidia-caps/.*", p))))
PY
}

# engines_mock_nvml_root FIXTURE NAME: the driver root (printed) of the real-package host's manifest
# materialised once more in $LAB/NAME with the mock NVML as its only library (devices.yaml has no
# libraries: the driver's files are the real packages'), for a daemon that reads the GPUs through NVML:
# the real libnvidia-ml cannot initialise without a kernel module, and /proc has no MIG profiles or UUIDs.
engines_mock_nvml_root() {
  local fixture=$1 dir=$LAB/$2
  mkdir -p "$dir/manifest"
  {
    cat "$LAB/devices/manifest/host.yaml"
    printf '%s\n' "" "libraries:" "  - dir: /usr/lib/x86_64-linux-gnu" "    libs:" \
      "      - {name: libnvidia-ml.so, soname: libnvidia-ml.so.1, links: [libnvidia-ml.so], source: mock-nvml}"
  } >"$dir/manifest/host.yaml"
  "$fixture" materialize "$dir/manifest/host.yaml" "$dir/host" >"$dir/roots" 2>"$dir/materialize.err" ||
    e2e_fail "materialising the mock NVML failed: $(cat "$dir/materialize.err")"
  grep -qx "nvml=mock" "$dir/roots" || e2e_fail "the fixture made no mock NVML: $(cat "$dir/roots")"
  sed -n 's/^driver_root=//p' "$dir/roots"
}

# What a pod's container sees (e2e_real_probe: the real CUDA runtime's answer, where libcuda.so.1 comes
# from, nvidia-smi, the linker cache), then every GPU node it has ("gpu nodes: ..." sorted, "-" for none:
# /dev/nvidia<N> and /dev/nvidia-caps/*), the request it got by env, and "probe done", the line the
# kubelet stand-in waits for in the log.
# shellcheck disable=SC2016,SC2154  # expanded in the container; e2e_real_probe is tests/e2e/lib.sh's
engines_probe=${e2e_real_probe%true}'echo "gpu nodes: $(ls -d /dev/nvidia[0-9]* /dev/nvidia-caps/* 2>/dev/null | sort | tr "\n" " " | sed "s/ $//")"
echo probe done'

# engines_expect_match OUTPUT REGEX: OUTPUT has a line that matches the extended regular expression
# REGEX as a whole.
engines_expect_match() {
  grep -qxE -- "$2" <<<"$1" || e2e_fail "expected a line matching '$2' in:
$1"
}

# engines_check_gpu OUTPUT WHO NODES: e2e_real_probe's output of a container that got a GPU: the real CUDA
# runtime reached the kernel boundary through the real libcuda.so.1 (cudaErrorNoDevice, never
# cudaErrorInsufficientDriver), which is the mounted library of the real driver (loaded through the
# Debian layout's link in /usr/lib/<triplet> or from nvidia/current, as the container's linker cache
# orders them: update-ldcache's business, not the engine's), nvidia-smi failed only at the driver, the
# container's linker cache lists libcuda.so.1 and libnvidia-ml.so.1; and its GPU nodes are exactly NODES.
engines_check_gpu() {
  local out=$1 who=$2 nodes=$3 dir=/usr/lib/x86_64-linux-gnu/nvidia/current
  local lib='(/usr)?/lib/x86_64-linux-gnu(/nvidia/current)?'
  e2e_expect_line "$out" "cudaGetDeviceCount: 100 cudaErrorNoDevice"
  engines_expect_match "$out" "libcuda\.so\.1 loaded from $lib/libcuda\.so\.1"
  e2e_expect_line "$out" "libcuda.so.1 is $dir/libcuda.so.$real_version"
  e2e_expect_line "$out" "mounted $dir/libcuda.so.$real_version"
  e2e_expect_line "$out" "nvidia-smi exit 9"
  engines_expect_match "$out" "libcuda\.so\.1 \(libc6,x86-64\) => $lib/libcuda\.so\.1"
  engines_expect_match "$out" "libnvidia-ml\.so\.1 \(libc6,x86-64\) => $lib/libnvidia-ml\.so\.1"
  e2e_expect_line "$out" "gpu nodes: $nodes"
  e2e_expect_line "$out" "container exit 0"
  echo "ok: $who: cudaErrorNoDevice from the real libcuda.so.1; GPU nodes $nodes"
}

# engines_check_nothing OUTPUT WHO: a container that asked for no GPU: e2e_check_real_nothing, and no GPU
# node at all.
engines_check_nothing() {
  local out=$1 who=$2
  e2e_check_real_nothing "$out" "$who" >/dev/null
  e2e_expect_line "$out" "gpu nodes: "
  e2e_expect_line "$out" "container exit 0"
  echo "ok: $who: nothing injected (cudaErrorInsufficientDriver, no GPU node)"
}

# engines_probe_image: $LAB/images/probe.tar, the glibc image holding the real CUDA runtime and its probe
# (e2e_real_cuda_rootfs, in $LAB/rootfs), as the archive gpuctk.test/probe:1 that containerd and docker
# load.
engines_probe_image() {
  e2e_real_cuda_rootfs
  mkdir -p "$LAB/images"
  "$engines_python" "$engines_dir/oci_image.py" "$LAB/rootfs" gpuctk.test/probe:1 "$LAB/images/probe.tar" ||
    e2e_fail "could not pack the probe image"
}

# engines_pause_image: $LAB/images/pause.tar (gpuctk.test/pause:1), the pods' sandbox image: a static
# program that waits for a signal (there is no registry to pull one from).
engines_pause_image() {
  mkdir -p "$LAB/images" "$LAB/pause-root"
  cat >"$LAB/pause.c" <<'C'
#include <signal.h>
#include <unistd.h>

static void stop(int sig) { _exit(sig == SIGTERM || sig == SIGINT ? 0 : 1); }

int main(void) {
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  for (;;) pause();
}
C
  cc -static -O2 -o "$LAB/pause-root/pause" "$LAB/pause.c" || e2e_fail "could not build the static pause program"
  "$engines_python" "$engines_dir/oci_image.py" "$LAB/pause-root" gpuctk.test/pause:1 "$LAB/images/pause.tar" /pause ||
    e2e_fail "could not pack the pause image"
}

# ---- containerd through CRI ----

# engines_containerd_lab GPUCTK FIXTURE SUITE: what every containerd test starts from: the suite's engines
# fetched, the real-package host, the probe and pause images, shim=$LAB/bin/gpuctk-runtime and
# c=$LAB/containerd with its default config (engines_containerd_config), not yet configured for gpuctk.
engines_containerd_lab() {
  engines_fetch "$3"
  engines_real_host "$1" "$2"
  engines_probe_image
  engines_pause_image
  shim=$LAB/bin/gpuctk-runtime
  c=$LAB/containerd
  engines_containerd_config "$c"
}

# engines_containerd_config DIR: DIR/config.toml, `containerd config default` of the fetched containerd
# (kept as DIR/config.default.toml) with only what a lab needs changed: every path of its own under DIR
# (root, state, socket, /opt/containerd, the CNI config dir the CRI plugin makes, NRI's socket), the
# sandbox image (pause), CDI specs read from $LAB/cdi only, and restrict_oom_score_adj (this machine's root
# lacks CAP_SYS_RESOURCE; runc cannot set a pod's -998 otherwise). CDI itself stays as the version has it
# (off in 1.7, on in 2.x): `gpuctk runtime configure --cdi` is what turns it on.
engines_containerd_config() {
  local c=$1 cri images
  mkdir -p "$c"
  "$engines_root/usr/bin/containerd" config default >"$c/config.default.toml" ||
    e2e_fail "containerd config default failed"
  cp "$c/config.default.toml" "$c/config.toml"
  case "$containerd_version" in
    1.*)
      cri=plugins.io.containerd.grpc.v1.cri
      "$engines_python" "$engines_dir/toml_set.py" "$c/config.toml" "$cri" sandbox_image '"gpuctk.test/pause:1"' ||
        e2e_fail "could not set the sandbox image"
      ;;
    *)
      cri=plugins.io.containerd.cri.v1.runtime
      images=plugins.io.containerd.cri.v1.images.pinned_images
      "$engines_python" "$engines_dir/toml_set.py" "$c/config.toml" "$images" sandbox '"gpuctk.test/pause:1"' ||
        e2e_fail "could not set the sandbox image"
      ;;
  esac
  "$engines_python" "$engines_dir/toml_set.py" "$c/config.toml" \
    "" root "\"$c/root\"" "" state "\"$c/state\"" grpc address "\"$c/containerd.sock\"" \
    plugins.io.containerd.internal.v1.opt path "\"$c/opt\"" \
    plugins.io.containerd.nri.v1.nri socket_path "\"$c/nri.sock\"" \
    "$cri.cni" conf_dir "\"$c/cni\"" \
    "$cri" restrict_oom_score_adj true \
    "$cri" cdi_spec_dirs "[\"$LAB/cdi\"]" || e2e_fail "could not move containerd's paths into $c"
}

# engines_containerd_start DIR [SOCKET]: the fetched containerd on DIR/config.toml (whose socket is SOCKET,
# by default DIR/containerd.sock as engines_containerd_config writes it), with its own binaries first on
# PATH (its runc shim), Debian 12's runc, and GPUCTK_CONFIG=$LAB/gpuctk.yaml in its environment (it reaches
# the shim and gpuctk-runtime). Waits for its CRI. Sets CTR, containerd_pid, containerd_sock; registers
# the cleanups: the daemon by its pid, the shims of this daemon (found by its socket in their command
# line), mounts under $LAB, the pods' cgroups (engines_cgroup), and what the runc shim keeps under
# /run/containerd whatever the state dir.
engines_containerd_start() {
  local c=$1
  engines_cgroup=gpuctk-e2e-engines-$$
  containerd_sock=${2:-$c/containerd.sock}
  e2e_cleanup_add "rmdir /run/containerd/runc/k8s.io /run/containerd/runc /run/containerd/fifo /run/containerd/s /run/containerd 2>/dev/null"
  e2e_cleanup_add "for d in /sys/fs/cgroup/*/$engines_cgroup /sys/fs/cgroup/$engines_cgroup; do [ -d \"\$d\" ] && find \"\$d\" -depth -type d -exec rmdir {} +; done"
  e2e_cleanup_add "e2e_umount_under '$LAB'"
  e2e_cleanup_add "for p in \$(pgrep -f -- '-address $containerd_sock'); do kill -9 \$p; done"
  PATH=$engines_root/usr/bin:$PATH GPUCTK_CONFIG=$LAB/gpuctk.yaml setsid "$engines_root/usr/bin/containerd" \
    --config "$c/config.toml" >"$c/containerd.log" 2>&1 &
  containerd_pid=$!
  e2e_cleanup_add "engines_containerd_stop"
  CTR=("$engines_root/usr/bin/ctr" --address "$containerd_sock")
  for _ in $(seq 300); do
    engines_cri version >/dev/null 2>&1 && break
    kill -0 "$containerd_pid" 2>/dev/null || e2e_fail "containerd exited: $(tail -20 "$c/containerd.log")"
    sleep 0.1
  done
  engines_cri version >"$LAB/cri-version" 2>&1 ||
    e2e_fail "containerd's CRI did not come up: $(cat "$LAB/cri-version"); $(grep -i 'level=error' "$c/containerd.log" | tail -3)"
  echo "engines: CRI of $(cat "$LAB/cri-version")"
}

# engines_containerd_stop: stops the daemon by its pid (SIGTERM, then SIGKILL after 20 s) and waits for it.
engines_containerd_stop() {
  e2e_stop_daemon "$containerd_pid"
}

# engines_containerd_stop_clean: engines_containerd_stop, then no process of containerd ($c) and no mount
# under $LAB may be left.
engines_containerd_stop_clean() {
  engines_containerd_stop
  local left mounts
  left=$(pgrep -f -- "$c/" || true)
  [ -z "$left" ] || e2e_fail "processes of containerd left: $(ps -o pid,args -p "${left//$'\n'/,}")"
  mounts=$(awk -v d="$LAB/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo)
  [ -z "$mounts" ] || e2e_fail "mounts left under $LAB after containerd stopped: $mounts"
}

# engines_import ARCHIVE...: the image archives into containerd's k8s.io namespace, where its CRI finds them.
engines_import() {
  local archive out
  for archive in "$@"; do
    out=$("${CTR[@]}" -n k8s.io images import "$archive" 2>&1) || e2e_fail "ctr images import $archive failed: $out"
  done
}

# engines_cri ARGS...: the kubelet stand-in on this containerd's socket.
engines_cri() {
  "$engines_python" "$engines_dir/cri.py" --socket "$containerd_sock" --proto "$cri_proto" \
    --stubs "$LAB/cri-stubs" "$@"
}

# engines_pod NAME [POD OPTIONS]: one pod (cri.py pod) running engines_probe in the probe image, its cgroup
# below engines_cgroup; prints the container's output and "container exit N".
engines_pod() {
  local name=$1
  shift
  engines_cri pod --name "$name-$$" --image gpuctk.test/probe:1 --log-dir "$LAB/pods/$name" \
    --cgroup-parent "/$engines_cgroup" "$@" -- /bin/sh -c "$engines_probe"
}

# engines_expect_clean WHO: after a pod: containerd lists no pod and no container, no shim of this daemon
# is left (it may take a moment to exit), nothing is mounted under $LAB (rootfs, shm, driver files), no
# cgroup is left below engines_cgroup.
engines_expect_clean() {
  local who=$1 state shims mounts cgroups
  state=$(engines_cri state) || e2e_fail "$who: cri.py state failed"
  [ "$state" = $'sandboxes 0\ncontainers 0' ] || e2e_fail "$who: containerd still lists: $state"
  for _ in $(seq 100); do
    shims=$(pgrep -f -- "-address $containerd_sock" || true)
    [ -z "$shims" ] && break
    sleep 0.1
  done
  [ -z "$shims" ] || e2e_fail "$who: shims left: $(ps -o pid,args -p "${shims//$'\n'/,}")"
  mounts=$(awk -v d="$LAB/" 'index($5, d) == 1 || $5 ~ /libcuda/ { print $5 }' /proc/self/mountinfo)
  [ -z "$mounts" ] || e2e_fail "$who: mounts left: $mounts"
  cgroups=$(find /sys/fs/cgroup/*/"$engines_cgroup" /sys/fs/cgroup/"$engines_cgroup" -mindepth 1 -type d 2>/dev/null || true)
  [ -z "$cgroups" ] || e2e_fail "$who: cgroups left: $cgroups"
}

# engines_toml_get FILE KEY...: prints the value at the key path (each KEY one table level) of a TOML
# file (containerd's `config dump`), or nothing when a key is missing; lists and tables as JSON.
engines_toml_get() {
  "$engines_python" - "$@" <<'PY'
import json, sys, tomllib
value = tomllib.load(open(sys.argv[1], "rb"))
for key in sys.argv[2:]:
    if not isinstance(value, dict) or key not in value:
        sys.exit(0)
    value = value[key]
print(json.dumps(value) if isinstance(value, (list, dict)) else str(value).lower() if isinstance(value, bool) else value)
PY
}
