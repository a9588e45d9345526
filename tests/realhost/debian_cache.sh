# shellcheck shell=bash
# A cache of things made from real Debian packages for tests (sourced; bash). It fetches with apt-get
# through a private configuration (the host's sources, lists, preferences and dpkg status are never
# read or changed), keys what it builds by the exact package versions it was built from, and builds each
# entry into a temporary directory that is renamed into place, so an interrupted build never looks
# complete. The first use needs the network; later uses work offline from the cache.
#
#   GPUCTK_TEST_CACHE            the cache directory (default /var/cache/gpuctk-tests; it survives
#                                `rm -rf build`)
#   GPUCTK_TEST_CACHE_MAX_AGE    days after which the package lists are refreshed (default 7); when the
#                                refresh fails (offline) the old lists are used and a note says so
#
# The cache directory holds:
#   apt/<set>/{sources.list,lists/,archives/}   one private apt configuration per source set
#   <entry>-<key>/                               a finished entry (only ever appears by rename)
#   .<entry>.lock                                held while an entry is looked up or built
#
# Every failure is one line "FAIL: <what>: <why>" on stderr and exit status 1: a test that needs the cache
# and cannot get it has failed (it is never a skip).
#
# Use:
#   source tests/realhost/debian_cache.sh
#   debcache_sources trixie "deb http://deb.debian.org/debian trixie main"   # once per source set
#   debcache_lists trixie                       # fetch or refresh its package lists when needed
#   debcache_candidates trixie containerd runc  # "containerd=1.7.24~ds1-6" lines, one per package
#   debcache_download trixie DIR containerd=1.7.24~ds1-6 ...   # the .debs into DIR (archives/ reused)
#   debcache_entry NAME KEY BUILDER ARGS...     # prints the entry's path; BUILDER DIR ARGS... fills DIR
#   debcache_key LINES                          # a short key (hex) of a recipe's text

debcache_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

debcache_note() {
  echo "debcache: $*" >&2
}

# The line of apt's output that says why it failed: its first error, else its first warning, else its last
# line.
debcache_why() {
  grep -m1 '^E:' <<<"$1" || grep -m1 '^W:' <<<"$1" || tail -1 <<<"$1"
}

debcache_dir() {
  echo "${GPUCTK_TEST_CACHE:-/var/cache/gpuctk-tests}"
}

# debcache_sources SET LINE...: the private apt configuration SET with these sources.list lines (written
# when they differ from what is there, so a changed source set gets fresh lists).
debcache_sources() {
  local set=$1 dir
  shift
  dir=$(debcache_dir)/apt/$set
  mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/empty.d" ||
    debcache_fail "mkdir $dir: cannot create the apt directory"
  : >"$dir/status" || debcache_fail "write $dir/status: cannot write"
  if [ "$(printf '%s\n' "$@")" != "$(cat "$dir/sources.list" 2>/dev/null)" ]; then
    printf '%s\n' "$@" >"$dir/sources.list" || debcache_fail "write $dir/sources.list: cannot write"
    find "$dir/lists" -maxdepth 1 -type f -delete
  fi
}

# The apt-get / apt-cache options of SET: only its own sources, lists, archives and an empty dpkg status
# (so a package installed on the host never becomes the candidate), no preferences of the host's, no
# lock on the host's apt state, short timeouts.
debcache_apt_options() {
  local dir
  dir=$(debcache_dir)/apt/$1
  printf '%s\n' -o "Dir::Etc::sourcelist=$dir/sources.list" -o "Dir::Etc::sourceparts=$dir/empty.d" \
    -o "Dir::State::Lists=$dir/lists" -o "Dir::State::status=$dir/status" \
    -o "Dir::Cache=$dir" -o "Dir::Cache::archives=$dir/archives" \
    -o Dir::Cache::srcpkgcache= \
    -o Dir::Etc::preferences=/dev/null -o "Dir::Etc::preferencesparts=$dir/empty.d" -o Debug::NoLocking=1 \
    -o Acquire::http::Timeout=30 -o Acquire::Retries=2 -o APT::Architecture=amd64 -o APT::Architectures=amd64
}

debcache_apt_get() {
  local set=$1 options
  shift
  mapfile -t options < <(debcache_apt_options "$set")
  apt-get "${options[@]}" "$@"
}

debcache_apt_cache() {
  local set=$1 options
  shift
  mapfile -t options < <(debcache_apt_options "$set")
  apt-cache "${options[@]}" "$@"
}

# debcache_lists SET: package lists that are there and younger than GPUCTK_TEST_CACHE_MAX_AGE days are
# used as they are (offline); otherwise `apt-get update`. A failed update with older lists at hand goes on
# with those (a note); without any lists it is a failure.
debcache_lists() {
  local set=$1 dir max_age out
  dir=$(debcache_dir)/apt/$set
  max_age=${GPUCTK_TEST_CACHE_MAX_AGE:-7}
  if [ -n "$(find "$dir/lists" -maxdepth 1 -name '*_Packages*' -mtime "-$max_age" -print -quit)" ]; then
    return 0
  fi
  if out=$(debcache_apt_get "$set" -qq update 2>&1) && [ -n "$(find "$dir/lists" -maxdepth 1 -name '*_Packages*' -print -quit)" ]; then
    find "$dir/lists" -maxdepth 1 -name '*_Packages*' -exec touch {} +
    return 0
  fi
  if [ -n "$(find "$dir/lists" -maxdepth 1 -name '*_Packages*' -print -quit)" ]; then
    debcache_note "apt-get update of $set failed; using the package lists from $(stat -c %y "$dir/lists" | cut -d. -f1): $(tail -1 <<<"$out")"
    return 0
  fi
  debcache_fail "apt-get update of $set ($dir/sources.list) failed: $(debcache_why "$out")"
}

# debcache_candidates SET PACKAGE...: "PACKAGE=VERSION" per package, the version apt would install from
# SET's lists. A package without a candidate is a failure naming it.
debcache_candidates() {
  local set=$1 package policy version
  shift
  policy=$(debcache_apt_cache "$set" policy "$@" 2>&1) || debcache_fail "apt-cache policy of $set failed: $(tail -1 <<<"$policy")"
  for package in "$@"; do
    version=$(awk -v p="$package:" '$1 == p || $1 == p "amd64:" { want = 1; next }
      /^[^ ]/ { want = 0 } want && $1 == "Candidate:" { print $2; exit }' <<<"$policy")
    if [ -z "$version" ] || [ "$version" = "(none)" ]; then
      debcache_fail "package $package: no version in the $set sources ($(debcache_dir)/apt/$set/sources.list)"
    fi
    echo "$package=$version"
  done
}

# debcache_download SET DIR PACKAGE=VERSION...: exactly those .debs (no dependencies) into DIR, fetched
# into SET's archives/ once. A version that is gone from the mirrors (a point release removed it) gets one
# update of the lists and one more try.
debcache_download() {
  local set=$1 dest=$2 archives spec name version file out
  shift 2
  archives=$(debcache_dir)/apt/$set/archives
  mkdir -p "$dest" || debcache_fail "mkdir $dest: cannot create"
  for spec in "$@"; do
    name=${spec%%=*}
    version=${spec#*=}
    file=$(debcache_deb_in "$archives" "$name" "$version")
    if [ -z "$file" ]; then
      if ! out=$(cd "$archives" && debcache_apt_get "$set" -qq download "$spec" 2>&1); then
        debcache_apt_get "$set" -qq update >/dev/null 2>&1 || true
        out=$(cd "$archives" && debcache_apt_get "$set" -qq download "$spec" 2>&1) ||
          debcache_fail "download of $spec from $set failed: $(debcache_why "$out")"
      fi
      file=$(debcache_deb_in "$archives" "$name" "$version")
      [ -n "$file" ] || debcache_fail "download of $spec from $set: no ${name}_*.deb of that version in $archives"
    fi
    cp "$file" "$dest/" || debcache_fail "copy $file to $dest failed"
  done
}

# debcache_deb_in DIR NAME VERSION: the path of NAME's .deb of VERSION in DIR (file names spell an epoch's
# colon as %3a), or nothing.
debcache_deb_in() {
  local file
  for file in "$1/$2_${3//:/%3a}_"*.deb; do
    [ -f "$file" ] && echo "$file" && return 0
  done
  return 0
}

# debcache_key TEXT: the first 12 hex digits of TEXT's SHA-256 (a recipe: its format version and the
# exact package versions).
debcache_key() {
  printf '%s\n' "$1" | sha256sum | cut -c1-12
}

# debcache_entry NAME KEY BUILDER ARGS...: prints the path of the finished entry NAME-KEY, building it
# first when it is not there: `BUILDER TMPDIR ARGS...` (run in a subshell) fills an empty temporary
# directory in the cache, which is then renamed to NAME-KEY; a builder that fails says why with
# debcache_fail, and its directory is removed. Entries of NAME with another key (older package versions) are
# removed after a successful build, and so are temporary directories an interrupted build left. The
# lock serialises builders of NAME across processes (ctest runs tests in parallel).
debcache_entry() {
  local name=$1 key=$2 builder=$3 cache entry tmp lock old
  shift 3
  cache=$(debcache_dir)
  entry=$cache/$name-$key
  mkdir -p "$cache" || debcache_fail "mkdir $cache: cannot create the test cache"
  exec {lock}>"$cache/.$name.lock" || debcache_fail "open $cache/.$name.lock: cannot open"
  flock "$lock" || debcache_fail "flock $cache/.$name.lock: failed"
  if [ -d "$entry" ]; then
    exec {lock}>&-
    echo "$entry"
    return 0
  fi
  for old in "$cache/.$name-"*.tmp.*; do
    [ -e "$old" ] && rm -rf "$old"
  done
  tmp=$(mktemp -d "$cache/.$name-$key.tmp.XXXXXX") || debcache_fail "mktemp in $cache: failed"
  debcache_note "building $entry (once; later runs reuse it)"
  if ! ("$builder" "$tmp" "$@"); then
    rm -rf "$tmp"
    exit 1  # the builder said why, in its one FAIL line
  fi
  mv -T "$tmp" "$entry" || {
    rm -rf "$tmp"
    debcache_fail "rename $tmp to $entry failed"
  }
  for old in "$cache/$name-"*; do
    [ "$old" != "$entry" ] && [ -d "$old" ] && rm -rf "$old" && debcache_note "removed the older $old"
  done
  exec {lock}>&-
  echo "$entry"
}
