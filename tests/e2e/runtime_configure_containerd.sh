#!/usr/bin/env bash
# End to end for `gpuctk runtime configure --runtime containerd` with containerd 1.6 (Debian 12's) as the
# consumer: the output of `containerd config default` (every path moved into the lab) is configured with
# runtime "nvidia" (gpuctk-runtime) as the default runtime, and CDI on (which 1.6 ignores), in gpuctk's
# default drop-in conf.d/99-zz-gpuctk.toml that config.toml then imports; containerd
# starts with that file and its CRI plugin, which validates the runtimes table, loads; `containerd config
# dump` shows the runtime with our BinaryName; a container run with that BinaryName as its runc sees GPU 0
# and loads the driver's libcuda.so.1. A second configure changes nothing; --remove deletes the drop-in,
# gives back `containerd config default`'s bytes, and the dump no longer has the runtime.
# Then the same file written in schema 1 (no version key, plugins by their short IDs, as containerd 1.x
# before 1.3 wrote it) is configured with the command's default options: containerd 1.6 reads it, its CRI
# plugin loads, the dump shows runtime "nvidia" with the default shim path as its BinaryName (schema 1 has no
# imports: the file itself is edited, no drop-in), and --remove gives back the schema-1 bytes.
#   usage: runtime_configure_containerd.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs containerd "ctr (containerd)" runc
e2e_glibc_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"
shim=$LAB/bin/gpuctk-runtime

c=$LAB/containerd
mkdir -p "$c"
# The daemon on a config file; its environment reaches the runc shim and gpuctk-runtime. Sets
# containerd_pid; the CRI plugin checks the runtimes table (default_runtime_name names one of them, no
# runtime_engine beside a runc v2 runtime): it loads, or that is an error.
start_containerd() {
  GPUCTK_CONFIG=$LAB/gpuctk.yaml setsid containerd --config "$1" >"$c/containerd.log" 2>&1 &
  containerd_pid=$!
  e2e_cleanup_add "kill $containerd_pid; wait $containerd_pid"
  e2e_daemon_up containerd "$containerd_pid" "$c/containerd.log" 10 "${CTR[@]}" version
  plugins=$("${CTR[@]}" plugins ls 2>&1)
  grep -qE '^io\.containerd\.grpc\.v1 +cri +[^ ]+ +ok *$' <<<"$plugins" ||
    e2e_fail "the CRI plugin did not load with $1: $(grep cri <<<"$plugins"; grep -i 'cri' "$c/containerd.log" | tail -5)"
}
stop_containerd() {
  kill "$containerd_pid"
  wait "$containerd_pid" 2>/dev/null || true
}
e2e_cleanup_add "rmdir /run/containerd/runc/default /run/containerd/runc /run/containerd/fifo /run/containerd/s /run/containerd 2>/dev/null"
e2e_cleanup_add "find /sys/fs/cgroup -depth -type d -name 'gpuctk-e2e-*' -exec rmdir {} + 2>/dev/null; rmdir /sys/fs/cgroup/*/default 2>/dev/null"
CTR=(ctr --address "$c/containerd.sock")
# containerd's own reading of a config file (`config dump`: defaults merged in, printed in schema 2
# whatever the file's): sets dump, and binary to the BinaryName of runtime "nvidia", which must be a runc
# v2 runtime.
dump_binary() {
  local table
  dump=$(containerd --config "$1" config dump 2>&1) || e2e_fail "containerd config dump of $1 failed: $dump"
  table=$(awk '/^ *\[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia\]/ { on = 1; next }
    on && /^ *\[/ && !/runtimes.nvidia.options\]/ { on = 0 } on' <<<"$dump")
  grep -qx ' *runtime_type = "io.containerd.runc.v2"' <<<"$table" ||
    e2e_fail "the dump of $1 has no runc v2 runtime \"nvidia\": $dump"
  binary=$(sed -n 's/^ *BinaryName = "\(.*\)"$/\1/p' <<<"$table")
}

containerd config default |
  sed -e "s|^root = .*|root = \"$c/root\"|" -e "s|^state = .*|state = \"$c/state\"|" \
    -e "s|address = \"/run/containerd/containerd.sock\"|address = \"$c/containerd.sock\"|" \
    -e "s|path = \"/opt/containerd\"|path = \"$c/opt\"|" >"$c/config.toml" ||
  e2e_fail "containerd config default failed"
grep -q "^root = \"$c/root\"" "$c/config.toml" || e2e_fail "could not move containerd's root into the lab"
cp "$c/config.toml" "$LAB/config.toml.original"

out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" --runtime-path "$shim" \
  --set-as-default --cdi 2>&1) || e2e_fail "runtime configure failed: $out"
drop_in=$c/conf.d/99-zz-gpuctk.toml
expected="containerd: runtime \"nvidia\" ($shim) added, default runtime set to \"nvidia\" (was \"runc\"), CDI enabled; $drop_in written; restart containerd
containerd: import $drop_in added; $c/config.toml written (the original kept as $c/config.toml.gpuctk-backup); restart containerd"
[ "$out" = "$expected" ] || e2e_fail "unexpected output: $out"
cmp -s "$c/config.toml.gpuctk-backup" "$LAB/config.toml.original" || e2e_fail "the backup is not the original"
! grep -q 'runtimes.nvidia' "$c/config.toml" || e2e_fail "config.toml itself got runtime \"nvidia\""
out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" --runtime-path "$shim" \
  --set-as-default --cdi 2>&1) || e2e_fail "the second runtime configure failed: $out"
[ "$out" = "containerd: $drop_in unchanged: runtime \"nvidia\" ($shim) is already configured" ] ||
  e2e_fail "the second run was not a no-op: $out"
echo "ok: configured, and a second run changes nothing"

dump_binary "$c/config.toml"
[ "$binary" = "$shim" ] || e2e_fail "the dump's BinaryName of \"nvidia\" is '$binary', not $shim"
grep -qx ' *default_runtime_name = "nvidia"' <<<"$dump" || e2e_fail "the dump's default runtime is not nvidia"
echo "ok: containerd config dump shows runtime \"nvidia\" with BinaryName $binary, the default runtime"

start_containerd "$c/config.toml"
echo "ok: containerd 1.6 runs on the configured file and its CRI plugin loads"

name=gpuctk-e2e-configured-$$
# (Only while the daemon runs: ctr waits 10 s for a socket nobody answers.)
e2e_cleanup_add "kill -0 $containerd_pid && { ${CTR[*]} task kill -s KILL $name; ${CTR[*]} container rm $name; }"
rootfs=$(e2e_rootfs_copy "$name")
out=$("${CTR[@]}" run --rm --env NVIDIA_VISIBLE_DEVICES=0 --runc-binary "$binary" --rootfs "$rootfs" "$name" \
  /bin/sh -c "$e2e_t4_probe" 2>&1) || e2e_fail "ctr run with the configured BinaryName failed: $out"
e2e_check_t4_gpu0 "$out" "a container run by the configured BinaryName sees GPU 0 and loads libcuda.so.1"
stop_containerd

out=$("$gpuctk" runtime configure --runtime containerd --config "$c/config.toml" --remove 2>&1) ||
  e2e_fail "runtime configure --remove failed: $out"
[ "$out" = "containerd: $drop_in deleted (it did not exist before); restart containerd
containerd: $c/config.toml restored from $c/config.toml.gpuctk-backup; restart containerd" ] ||
  e2e_fail "unexpected output of --remove: $out"
cmp -s "$c/config.toml" "$LAB/config.toml.original" || e2e_fail "--remove did not give back the original bytes"
[ ! -e "$drop_in" ] || e2e_fail "--remove left the drop-in"
[ ! -e "$c/config.toml.gpuctk-backup" ] && [ ! -e "$c/config.toml.gpuctk-written" ] ||
  e2e_fail "--remove left the backup or the record"
dump=$(containerd --config "$c/config.toml" config dump 2>&1) || e2e_fail "containerd config dump failed: $dump"
if grep -q 'runtimes.nvidia' <<<"$dump"; then e2e_fail "the runtime is still in the dump after --remove"; fi
echo "ok: --remove restored containerd config default's bytes"

# Schema 1: the same file with no version key and every plugin by its short ID ("cri", "overlayfs", ...).
v1=$c/config-v1.toml
sed -e '/^version = 2$/d' -e 's/plugins\."io\.containerd\.[a-z.]*\.v[0-9]\.\([^"]*\)"/plugins.\1/g' \
  "$LAB/config.toml.original" >"$v1"
grep -q '^ *\[plugins\.cri\.containerd\.runtimes\.runc\]' "$v1" && ! grep -q '^version' "$v1" ||
  e2e_fail "could not write the file in schema 1"
cp "$v1" "$LAB/config-v1.toml.original"
out=$("$gpuctk" runtime configure --runtime containerd --config "$v1" 2>"$LAB/configure-v1.err") ||
  e2e_fail "runtime configure of a schema-1 file failed: $out $(cat "$LAB/configure-v1.err")"
default_shim=$(sed -n 's/^containerd: runtime "nvidia" (\(.*\)) added; .*/\1/p' <<<"$out")
[ -n "$default_shim" ] && [ "$out" = "containerd: runtime \"nvidia\" ($default_shim) added; $v1 written (the original kept as $v1.gpuctk-backup); restart containerd" ] ||
  e2e_fail "unexpected output for the schema-1 file: $out"
! grep -q '^version' "$v1" || e2e_fail "the schema-1 file got a version key: $(grep '^version' "$v1")"
dump_binary "$v1"
[ "$binary" = "$default_shim" ] || e2e_fail "the dump's BinaryName of \"nvidia\" is '$binary', not $default_shim"
echo "ok: containerd config dump reads runtime \"nvidia\" with BinaryName $binary from the schema-1 file"
start_containerd "$v1"
stop_containerd
echo "ok: containerd 1.6 runs on the configured schema-1 file and its CRI plugin loads"
out=$("$gpuctk" runtime configure --runtime containerd --config "$v1" --remove 2>&1) ||
  e2e_fail "runtime configure --remove of the schema-1 file failed: $out"
[ "$out" = "containerd: $v1 restored from $v1.gpuctk-backup; restart containerd" ] ||
  e2e_fail "unexpected output of --remove for the schema-1 file: $out"
cmp -s "$v1" "$LAB/config-v1.toml.original" || e2e_fail "--remove did not give back the schema-1 bytes"
echo "ok: --remove restored the schema-1 bytes"
[ ! -e "$c/conf.d/99-zz-gpuctk.toml" ] || e2e_fail "a schema-1 file got a drop-in"
echo "PASS: gpuctk runtime configure wired gpuctk-runtime into containerd 1.6 (schemas 2 and 1) and took it out again"
