#!/usr/bin/env bash
# etc/bash-completion/gpuctk: sourced into this shell, _gpuctk completes commands, subcommands, options and
# option values exactly (COMP_WORDS/COMP_CWORD as bash sets them), and every option it offers is one the
# built binary's --help lists.
#   usage: completion.sh <gpuctk>
# shellcheck source=tests/package/lib.sh
source "$(dirname "$0")/lib.sh"
gpuctk=$(realpath "$1")
# shellcheck source=/dev/null
source "$(dirname "$0")/../../etc/bash-completion/gpuctk"

# expect "LINE BEING TYPED" "SORTED EXPECTED WORDS": the line's last word is the one completed.
expect() {
  local line=$1 want=$2 got
  read -ra COMP_WORDS <<<"$line"
  [[ $line == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _gpuctk
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
  [ "${got% }" = "$want" ] || fail "'$line': expected '$want', got '${got% }'"
}
expect "gpuctk " "--debug --help --quiet --version cdi config hook info install labels runtime system"
expect "gpuctk system " "--help create-device-nodes"
expect "gpuctk system create-device-nodes --c" "--control-devices"
expect "gpuctk c" "cdi config"
expect "gpuctk cdi " "--help generate inject list validate"
expect "gpuctk hook pre" "precreate prestart"
expect "gpuctk runtime conf" "configure"
expect "gpuctk cdi generate --dev" "--dev-root --device-ids --device-name-strategy"
expect "gpuctk cdi generate --output x --mode " "auto management nvml proc"
expect "gpuctk cdi generate --format j" "json"
expect "gpuctk runtime configure --runtime " "containerd crio docker"
expect "gpuctk info --j" "--json"
expect "gpuctk hook chmod --" "--help --mode --path"
# A path option completes file names.
cd "$(mktemp -d)"
trap 'rm -rf "$PWD"' EXIT
touch spec-a.yaml spec-b.yaml
expect "gpuctk cdi generate --output spec-" "spec-a.yaml spec-b.yaml"
expect "gpuctk cdi validate spec-a" "spec-a.yaml"

# Every option offered is in the command's --help.
for command in "cdi generate" "cdi list" "cdi inject" "hook precreate" "hook prestart" "hook create-symlinks" \
  "hook update-ldcache" "hook enable-cuda-compat" "hook chmod" "runtime configure" "install" "info" "labels" \
  "config" "system create-device-nodes"; do
  read -ra COMP_WORDS <<<"gpuctk $command --"
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  _gpuctk
  # shellcheck disable=SC2086  # the command's words
  help=$("$gpuctk" $command --help)
  for option in "${COMPREPLY[@]}"; do
    grep -qE -- "(^|[ ,])$option( |$|=|,)" <<<"$help" || fail "gpuctk $command --help has no $option"
  done
done
echo "PASS: bash completion of commands, options and values; every option offered exists"
