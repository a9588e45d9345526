#!/usr/bin/env bash
# End to end for issue 26 item 1: a mistake in gpuctk's config file never stops a container that asks
# for no GPU, and fails one that does with one line naming the file, the line and the key. Two broken
# configs, each under the three injection points:
#   - typo.yaml: a typo'd key (`spec_dirs:`, a warning naming spec-dirs) and a typo'd value
#     (`accept-volume-mounts: ture`, line 7: the file is unusable);
#   - nolog.yaml: a log-file that cannot be opened (its directory does not exist).
# podman 4.3.1 with the precreate hook in hooks.d (`always: true`, so it sees every container), the shim
# (gpuctk-runtime run) in front of runc, and `gpuctk hook prestart` in a runc bundle's hooks.prestart:
# a container without a request runs (the shim leaves its config.json byte for byte), one with
# NVIDIA_VISIBLE_DEVICES=0 is refused with the config's one line (podman shows only the hook's exit
# status: the line is in the log when the log can be opened).
#   usage: failsafe_config.sh <gpuctk> <gpuctk-fixture>
source "$(dirname "$0")/lib.sh"
e2e_init gpuctk fixture -- "$@"
e2e_needs runc "python3 (it writes config.json)"
e2e_podman_init
e2e_busybox_rootfs
e2e_t4_host_with_spec "$gpuctk" "$fixture"
hook=$(realpath "$gpuctk")

# typo.yaml: $LAB/gpuctk.yaml (6 lines, a valid log-file) and the two typos.
cp "$LAB/gpuctk.yaml" "$LAB/typo.yaml"
printf 'accept-volume-mounts: ture\nspec_dirs: [/etc/cdi]\n' >>"$LAB/typo.yaml"
[ "$(grep -n '^accept-volume-mounts' "$LAB/typo.yaml" | cut -d: -f1)" = 7 ] || e2e_fail "typo.yaml: line 7 moved"
declare -A errors
errors[typo]="$LAB/typo.yaml:7: accept-volume-mounts: expected true or false, got \"ture\""
typo_warning="$LAB/typo.yaml:8: unknown key \"spec_dirs\" ignored (did you mean \"spec-dirs\"?)"
# nolog.yaml: the same settings, logging where nothing can be created.
sed "s|^log-file: .*|log-file: $LAB/no-such-dir/gpuctk.log|" "$LAB/gpuctk.yaml" >"$LAB/nolog.yaml"
errors[nolog]="open log file $LAB/no-such-dir/gpuctk.log: No such file or directory"

# The container of the shim and podman: says it ran and whether it sees a GPU node.
# shellcheck disable=SC2016  # expanded in the container
probe='if [ -e /dev/nvidia0 ]; then echo "gpu node"; fi; echo "env NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"; echo ran'

# shim_bundle NAME ENV: a runc bundle on a copy of the busybox root that runs $probe with ENV.
shim_bundle() { e2e_runc_bundle "$1" "$2" "$probe"; }

podman_base=("${PODMAN[@]}")
for name in typo nolog; do
  config=$LAB/$name.yaml
  error=${errors[$name]}

  # ---- podman, the precreate hook for every container ----
  e2e_precreate_hook_dir "$LAB/hooks-$name.d" "$hook" "$config"
  PODMAN=("${podman_base[@]}" --hooks-dir "$LAB/hooks-$name.d")
  out=$(e2e_podman_run --rootfs "$(e2e_rootfs_copy "podman-none-$name")" \
    /bin/sh -c "$probe" 2>&1) || e2e_fail "podman ($name.yaml): a container without a GPU request failed: $out"
  e2e_expect_line "$out" "ran"
  e2e_expect_no_line "$out" "gpu node"
  echo "ok: podman ($name.yaml) ran a container without a GPU request"
  if out=$(e2e_podman_run -e NVIDIA_VISIBLE_DEVICES=0 \
    --rootfs "$(e2e_rootfs_copy "podman-gpu-$name")" /bin/sh -c "$probe" 2>&1); then
    e2e_fail "podman ($name.yaml) started a GPU container with a broken config: $out"
  fi
  grep -qF "executing [gpuctk hook precreate --config $config]: exit status 1" <<<"$out" ||
    e2e_fail "podman ($name.yaml): unexpected error: $out"
  echo "ok: podman ($name.yaml) refused a GPU container"

  # ---- the shim in front of runc ----
  export GPUCTK_CONFIG=$config
  bundle=$(shim_bundle "shim-none-$name" "")
  cp "$bundle/config.json" "$LAB/config.shim-none-$name.json"
  e2e_cleanup_add "runc delete -f gpuctk-e2e-shim-none-$name-$$"
  out=$("$LAB/bin/gpuctk-runtime" run --bundle "$bundle" "gpuctk-e2e-shim-none-$name-$$" 2>&1) ||
    e2e_fail "the shim ($name.yaml): a bundle without a GPU request failed: $out"
  e2e_expect_line "$out" "ran"
  e2e_expect_no_line "$out" "gpu node"
  e2e_expect_line "$out" "gpuctk: warning: $error; $bundle/config.json asks for no GPU: left as it is"
  cmp -s "$bundle/config.json" "$LAB/config.shim-none-$name.json" ||
    e2e_fail "the shim ($name.yaml) changed the config.json of a bundle without a GPU request"
  echo "ok: the shim ($name.yaml) passed a bundle without a GPU request to runc unchanged"
  e2e_expect_shim_refuses "shim-gpu-$name" NVIDIA_VISIBLE_DEVICES=0 "$error"
  echo "ok: the shim ($name.yaml) refused a GPU bundle with the config's line"
  unset GPUCTK_CONFIG

  # ---- gpuctk hook prestart in runc's hooks.prestart ----
  id=gpuctk-e2e-prestart-none-$name-$$
  bundle=$(e2e_prestart_bundle "prestart-none-$name" "$LAB/rootfs" "" "$hook" prestart "$config")
  e2e_cleanup_add "runc delete -f $id"
  out=$(runc run --bundle "$bundle" "$id" 2>&1) ||
    e2e_fail "runc with the prestart hook ($name.yaml): a container without a GPU request failed: $out"
  e2e_check_prestart_nothing "$out" "runc with the prestart hook ($name.yaml), no GPU request" busybox
  id=gpuctk-e2e-prestart-gpu-$name-$$
  bundle=$(e2e_prestart_bundle "prestart-gpu-$name" "$LAB/rootfs" NVIDIA_VISIBLE_DEVICES=0 "$hook" prestart "$config")
  e2e_cleanup_add "runc delete -f $id"
  if out=$(runc run --bundle "$bundle" "$id" 2>&1); then
    e2e_fail "runc with the prestart hook ($name.yaml) started a GPU container with a broken config: $out"
  fi
  # runc quotes the hook's stderr in its own message (logfmt: quotes escaped).
  grep -qF "gpuctk: error: $error" <<<"$out" || grep -qF "gpuctk: error: ${error//\"/\\\"}" <<<"$out" ||
    e2e_fail "runc with the prestart hook ($name.yaml): the output does not show the config's line: $out"
  count=$(grep -o "gpuctk: error: " <<<"$out" | wc -l)
  [ "$count" = 1 ] || e2e_fail "runc with the prestart hook ($name.yaml): expected one error line, got $count: $out"
  echo "ok: runc with the prestart hook ($name.yaml) refused a GPU container with the config's line"
done

# Where the log can be opened, it has every line, each naming its container.
log=$(cat "$LAB/gpuctk.log")
grep -qF "warning: container with hostname " <<<"$log" || e2e_fail "no precreate warning names its container: $log"
grep -qF ": $typo_warning" <<<"$log" || e2e_fail "the log does not have the unknown key's warning: $log"
grep -qF "error: container with hostname " <<<"$log" || e2e_fail "no precreate error names its container: $log"
grep -qF ": ${errors[typo]}" <<<"$log" || e2e_fail "the log does not have the config's error: $log"
grep -qF "error: container gpuctk-e2e-prestart-gpu-typo-$$: ${errors[typo]}" <<<"$log" ||
  e2e_fail "the log does not have prestart's error naming the container: $log"
echo "PASS: a broken config (typo'd key and value, a log that cannot be opened) let containers without a GPU run under podman, the shim and prestart, and refused GPU containers with its one line"
