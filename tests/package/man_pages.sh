#!/usr/bin/env bash
# The man pages the build makes (packaging/CMakeLists.txt): every command's page (help2man from its
# --help) has EXAMPLES, FILES, ENVIRONMENT and SEE ALSO, from its own packaging/man/<page>.h2m; the
# configuration file's page (section 5) and the request variables' (section 7) are there too; every page
# renders without a groff or man warning, and every gpuctk page a SEE ALSO names exists.
#   usage: man_pages.sh <packaging/man of the sources> <packaging/man of the build>
# shellcheck source=tests/package/lib.sh
source "$(dirname "$0")/lib.sh"
src=$1
built=$2
command -v man >/dev/null || skip "man (man-db) is not installed"

pages=(gpuctk-config.yaml.5 gpuctk-requests.7)
for include in "$src"/*.h2m; do
  name=$(basename "$include" .h2m)
  [ "$name" = common ] || pages+=("$name.1")
done
# A page made without an include file of its own would lack its examples.
for page in "$built"/*.1.gz; do
  name=$(basename "$page" .1.gz)
  [ -e "$src/$name.h2m" ] || fail "$name.1 is built but has no $src/$name.h2m"
done

for page in "${pages[@]}"; do
  file=$built/$page.gz
  [ -s "$file" ] || fail "$page: not built ($file)"
  text=$(zcat "$file")
  for section in EXAMPLES FILES ENVIRONMENT 'SEE ALSO'; do
    grep -Eqx "\.SH \"?$section\"?" <<<"$text" || fail "$page has no section $section"
  done
  warnings=$(zcat "$file" | LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l - 2>&1 >/dev/null) || true
  [ -z "$warnings" ] || fail "$page: man warns: $warnings"
  while read -r name section; do
    [ -e "$built/$name.$section.gz" ] || fail "$page: SEE ALSO names $name($section), which is not built"
  done < <(sed -En '/^\.SH "?SEE ALSO"?$/,/^\.SH [^S"]/p' <<<"$text" |
    sed -n 's/^\.BR \(gpuctk[^ ]*\) (\([0-9]\)).*/\1 \2/p' | sed 's/\\-/-/g')
done
echo "PASS: ${#pages[@]} man pages, each with EXAMPLES, FILES, ENVIRONMENT and SEE ALSO, rendered without warnings"
