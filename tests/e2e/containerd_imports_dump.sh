#!/usr/bin/env bash
# containerd's own reading of the imports of a config.toml that `gpuctk runtime configure --runtime
# containerd --drop-in-config ""` wrote runtime "nvidia" into, against what gpuctk says of them. For each
# layout of conf.d (imported by config.toml with an absolute glob, as NVIDIA's toolkit v1.18+ adds it;
# containerd 1.6 would match a relative one from its working directory), gpuctk configures config.toml and
# `containerd config dump` must show what gpuctk's one line says:
#   - NVIDIA's 99-nvidia.toml: its runtime "nvidia" wins, and gpuctk warns that it runs
#     nvidia-container-runtime;
#   - an import with the CRI plugin's table but no runtime "nvidia": containerd 1.x replaces the table whole
#     and has no runtime "nvidia" (gpuctk warns it is dropped); 2.x merges key by key and keeps gpuctk's;
#   - an import of another plugin only: gpuctk's runtime, no warning;
#   - --drop-in-config: gpuctk's own drop-in, imported by config.toml: its runtime as the default, and
#     runc's keys (the drop-in copies the CRI table); --remove gives config.toml's bytes back;
#   - no --drop-in-config (the default: conf.d/99-zz-gpuctk.toml) beside NVIDIA's 99-nvidia.toml under
#     the glob: gpuctk's sorts after it, containerd runs gpuctk's shim, config.toml is not touched;
#   - --config-source command: the drop-in's CRI table is this containerd's own `config dump` (its
#     defaults, such as default_runtime_name = "runc", which config.toml does not set).
# No daemon starts: `config dump` only reads the files.
#   usage: containerd_imports_dump.sh <gpuctk> <gpuctk-fixture> [trixie|sid]
#   (no suite: Debian 12's containerd 1.6; a suite: that suite's containerd from the engines cache)
source "$(dirname "$0")/lib.sh"
gpuctk=$1
suite=${3:-}
e2e_init
if [ -n "$suite" ]; then
  # shellcheck source=tests/engines/lib.sh
  source "$(dirname "$0")/../engines/lib.sh"
  engines_fetch "$suite"
  containerd=$engines_root/usr/bin/containerd
else
  containerd=$(command -v containerd) || e2e_skip "containerd is not installed"
  containerd_version=$("$containerd" --version | awk '{ print $3 }')
fi
python3 -c 'import tomllib' 2>/dev/null || e2e_skip "python3 has no tomllib (python 3.11 or later)"
case "$containerd_version" in
  1.*) version=2 plugin=io.containerd.grpc.v1.cri merge=replace ;;
  *) version=3 plugin=io.containerd.cri.v1.runtime merge=keys ;;
esac
shim=/usr/bin/gpuctk-runtime

# toml_get FILE KEY...: the value at the key path of a TOML file ("" when missing).
toml_get() {
  python3 - "$@" <<'PY'
import sys, tomllib
value = tomllib.load(open(sys.argv[1], "rb"))
for key in sys.argv[2:]:
    if not isinstance(value, dict) or key not in value:
        sys.exit(0)
    value = value[key]
print(value)
PY
}

# config_toml DIR [IMPORTS [MORE]]: DIR/config.toml, a containerd config of the lab's own (root and state in
# DIR) with runc as its one runtime, importing the glob IMPORTS when given, MORE (TOML) after runc's table.
config_toml() {
  local dir=$1
  mkdir -p "$dir"
  {
    echo "version = $version"
    [ -z "${2:-}" ] || echo "imports = [\"$2\"]"
    cat <<EOF
root = "$dir/root"
state = "$dir/state"
[plugins."$plugin".containerd.runtimes.runc]
runtime_type = "io.containerd.runc.v2"
EOF
    printf '%s' "${3:-}"
  } >"$dir/config.toml"
}

# dump CONFIG OUT WHAT: containerd's `config dump` of CONFIG into OUT (its stderr in OUT.err); WHAT names the
# case when it fails.
dump() {
  "$containerd" --config "$1" config dump >"$2" 2>"$2.err" ||
    e2e_fail "containerd config dump $3 failed: $(cat "$2.err")"
}

# case_run NAME IMPORT-TEXT: a lab with config.toml (runc, importing conf.d/*.toml) and conf.d/NAME.toml;
# sets out (gpuctk's line) and binary (the dump's BinaryName of "nvidia", "(none)" without the runtime).
case_run() {
  local dir=$LAB/$1
  config_toml "$dir" "$dir/conf.d/*.toml"
  mkdir -p "$dir/conf.d"
  printf '%s' "$2" >"$dir/conf.d/$1.toml"
  out=$("$gpuctk" runtime configure --runtime containerd --config "$dir/config.toml" --runtime-path "$shim" \
    --drop-in-config "" 2>/dev/null) || e2e_fail "runtime configure failed in $1: $out"
  dump "$dir/config.toml" "$dir/dump.toml" "in $1"
  if [ -n "$(toml_get "$dir/dump.toml" plugins "$plugin" containerd runtimes nvidia)" ]; then
    binary=$(toml_get "$dir/dump.toml" plugins "$plugin" containerd runtimes nvidia options BinaryName)
  else
    binary="(none)"
  fi
}
added="containerd: runtime \"nvidia\" ($shim) added"
later=": containerd reads that import after this file"

case_run 99-nvidia "version = $version
[plugins.\"$plugin\".containerd.runtimes.nvidia]
runtime_type = \"io.containerd.runc.v2\"
[plugins.\"$plugin\".containerd.runtimes.nvidia.options]
BinaryName = \"/usr/bin/nvidia-container-runtime\"
"
[ "$binary" = /usr/bin/nvidia-container-runtime ] ||
  e2e_fail "containerd $containerd_version runs '$binary' for \"nvidia\" beside NVIDIA's drop-in"
want="$added; $LAB/99-nvidia/config.toml written (the original kept as $LAB/99-nvidia/config.toml.gpuctk-backup); warning: runtime \"nvidia\" of $LAB/99-nvidia/conf.d/99-nvidia.toml wins (it runs /usr/bin/nvidia-container-runtime, not gpuctk's $shim)$later; restart containerd"
[ "$out" = "$want" ] || e2e_fail "gpuctk's line beside NVIDIA's drop-in: $out (want: $want)"
echo "ok: containerd $containerd_version runs NVIDIA's runtime beside its drop-in, as gpuctk warns"

case_run 50-cgroup "version = $version
[plugins.\"$plugin\".containerd.runtimes.runc.options]
SystemdCgroup = true
"
if [ "$merge" = replace ]; then
  [ "$binary" = "(none)" ] || e2e_fail "containerd $containerd_version kept runtime \"nvidia\" ($binary) under an import of the CRI table"
  want="$added; $LAB/50-cgroup/config.toml written (the original kept as $LAB/50-cgroup/config.toml.gpuctk-backup); warning: runtime \"nvidia\" is dropped by $LAB/50-cgroup/conf.d/50-cgroup.toml, whose CRI plugin table replaces this file's whole in containerd 1.x$later; restart containerd"
else
  [ "$binary" = "$shim" ] || e2e_fail "containerd $containerd_version runs '$binary' for \"nvidia\" under an import of runc's keys"
  want="$added; $LAB/50-cgroup/config.toml written (the original kept as $LAB/50-cgroup/config.toml.gpuctk-backup); restart containerd"
fi
[ "$out" = "$want" ] || e2e_fail "gpuctk's line under an import of the CRI table: $out (want: $want)"
echo "ok: containerd $containerd_version under an import of the CRI table: runtime \"nvidia\" is $binary, as gpuctk says"

case_run 10-opt "version = $version
[plugins.\"io.containerd.internal.v1.opt\"]
path = \"$LAB/opt\"
"
[ "$binary" = "$shim" ] || e2e_fail "containerd $containerd_version runs '$binary' for \"nvidia\" under an import of another plugin"
want="$added; $LAB/10-opt/config.toml written (the original kept as $LAB/10-opt/config.toml.gpuctk-backup); restart containerd"
[ "$out" = "$want" ] || e2e_fail "gpuctk's line under an import of another plugin: $out (want: $want)"
echo "ok: containerd $containerd_version runs gpuctk's $shim under an import of another plugin, no warning"
# --drop-in-config: gpuctk's runtime in a drop-in of its own that config.toml imports (no import before).
dir=$LAB/drop-in
config_toml "$dir" "" "[plugins.\"$plugin\".containerd.runtimes.runc.options]
SystemdCgroup = true
"
cp "$dir/config.toml" "$LAB/drop-in.original"
drop_in=$dir/conf.d/99-gpuctk.toml
out=$("$gpuctk" runtime configure --runtime containerd --config "$dir/config.toml" --runtime-path "$shim" \
  --drop-in-config "$drop_in" --set-as-default 2>/dev/null) || e2e_fail "runtime configure --drop-in-config failed: $out"
want="$added, default runtime set to \"nvidia\"; $drop_in written; restart containerd
containerd: import $drop_in added; $dir/config.toml written (the original kept as $dir/config.toml.gpuctk-backup); restart containerd"
[ "$out" = "$want" ] || e2e_fail "gpuctk's lines with --drop-in-config: $out (want: $want)"
dump "$dir/config.toml" "$LAB/drop-in.dump" "with the drop-in"
runtimes=(plugins "$plugin" containerd runtimes)
got=$(toml_get "$LAB/drop-in.dump" "${runtimes[@]}" nvidia options BinaryName)
[ "$got" = "$shim" ] || e2e_fail "containerd $containerd_version's dump with the drop-in: \"nvidia\" runs '$got'"
[ "$(toml_get "$LAB/drop-in.dump" plugins "$plugin" containerd default_runtime_name)" = nvidia ] ||
  e2e_fail "containerd $containerd_version's dump with the drop-in: the default runtime is not nvidia"
[ "$(toml_get "$LAB/drop-in.dump" "${runtimes[@]}" runc options SystemdCgroup)" = True ] ||
  e2e_fail "containerd $containerd_version's dump with the drop-in lost runc's SystemdCgroup"
echo "ok: containerd $containerd_version reads gpuctk's drop-in: \"nvidia\" runs $shim as the default; runc keeps SystemdCgroup"
out=$("$gpuctk" runtime configure --runtime containerd --config "$dir/config.toml" --drop-in-config "$drop_in" \
  --remove 2>&1) || e2e_fail "runtime configure --drop-in-config --remove failed: $out"
cmp -s "$dir/config.toml" "$LAB/drop-in.original" || e2e_fail "--remove did not give config.toml's bytes back"
[ ! -e "$drop_in" ] || e2e_fail "--remove left the drop-in"
dump "$dir/config.toml" "$LAB/drop-in.dump" "after --remove"
[ -z "$(toml_get "$LAB/drop-in.dump" "${runtimes[@]}" nvidia)" ] || e2e_fail "runtime \"nvidia\" is still in the dump after --remove"
echo "ok: --remove deleted the drop-in and gave config.toml's bytes back"
# The default drop-in beside NVIDIA's, one glob importing both: gpuctk's sorts after NVIDIA's and wins.
dir=$LAB/default
config_toml "$dir" "$dir/conf.d/*.toml"
mkdir -p "$dir/conf.d"
cp "$dir/config.toml" "$LAB/default.original"
printf '%s' "version = $version
[plugins.\"$plugin\".containerd.runtimes.nvidia]
runtime_type = \"io.containerd.runc.v2\"
[plugins.\"$plugin\".containerd.runtimes.nvidia.options]
BinaryName = \"/usr/bin/nvidia-container-runtime\"
" >"$dir/conf.d/99-nvidia.toml"
out=$("$gpuctk" runtime configure --runtime containerd --config "$dir/config.toml" --runtime-path "$shim" \
  2>/dev/null) || e2e_fail "runtime configure with the default drop-in failed: $out"
# The drop-in copies the CRI table as NVIDIA's leaves it: its runtime "nvidia", taken over.
want="containerd: runtime \"nvidia\" ($shim) updated (was /usr/bin/nvidia-container-runtime); $dir/conf.d/99-zz-gpuctk.toml written; restart containerd"
[ "$out" = "$want" ] || e2e_fail "gpuctk's line with the default drop-in: $out (want: $want)"
cmp -s "$dir/config.toml" "$LAB/default.original" || e2e_fail "config.toml changed though its glob imports the drop-in"
dump "$dir/config.toml" "$LAB/default.dump" "with the default drop-in"
got=$(toml_get "$LAB/default.dump" "${runtimes[@]}" nvidia options BinaryName)
[ "$got" = "$shim" ] ||
  e2e_fail "containerd $containerd_version runs '$got' for \"nvidia\" beside NVIDIA's drop-in, not gpuctk's $shim"
echo "ok: containerd $containerd_version reads gpuctk's default drop-in after NVIDIA's: \"nvidia\" runs $shim"

# --config-source command: the drop-in's CRI table from this containerd's own dump.
dir=$LAB/command
config_toml "$dir"
out=$("$gpuctk" runtime configure --runtime containerd --config "$dir/config.toml" --runtime-path "$shim" \
  --config-source command --executable-path "$containerd" 2>&1) ||
  e2e_fail "runtime configure --config-source command failed: $out"
drop_in=$dir/conf.d/99-zz-gpuctk.toml
[ "$(toml_get "$drop_in" plugins "$plugin" containerd default_runtime_name)" = runc ] ||
  e2e_fail "the drop-in did not get the dump's default_runtime_name: $(cat "$drop_in")"
dump "$dir/config.toml" "$LAB/command.dump" "with the command-sourced drop-in"
got=$(toml_get "$LAB/command.dump" "${runtimes[@]}" nvidia options BinaryName)
[ "$got" = "$shim" ] ||
  e2e_fail "containerd $containerd_version's dump with the command-sourced drop-in: \"nvidia\" runs '$got'"
echo "ok: --config-source command: the drop-in holds containerd $containerd_version's dump; \"nvidia\" runs $shim"
echo "PASS: containerd $containerd_version's config dump of imported files agrees with gpuctk runtime configure"
