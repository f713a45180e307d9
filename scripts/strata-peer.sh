#!/usr/bin/env bash
# Builds the Strata peer: Strata's own `spec` package (the parser, Validate,
# IsFrozen and EnvironmentID that Strata itself uses), taken from a local
# mirror of Strata's public repository at a pinned commit, linked with
# cairn's small reader tests/strata/peer/main.go. Prints the binary's path on
# stdout. Nothing is downloaded and nothing fetched is written into this
# repository: the sources are exported into a temporary directory and the
# binary is cached under /tmp, keyed by the commit, main.go and the Go version.
#
#   scripts/strata-peer.sh            # build (or reuse) and print the path
#   scripts/strata-peer.sh --where    # print the mirror and the commit, one a line
#
# Environment:
#   CAIRN_STRATA_SRC     the mirror (a git directory, bare or not);
#                        default /work/.mirror/scttfrdmn+strata/repo
#   CAIRN_STRATA_COMMIT  the commit to build; default Strata v0.22.0 (below)
#   CAIRN_STRATA_PEER_CACHE  where built binaries are kept; default /tmp/cairn-strata-peer
#
# Exit status: 0 built (path on stdout); 3 a prerequisite is missing (Go or
# gopkg.in/yaml.v3, which scripts/setup-host.sh installs); 4 the Strata mirror
# or the commit is absent (a source this machine may simply not have); the
# reason on stderr either way; 1 the build failed.
#
# Go and yaml.v3 come from Debian 12 (golang-go 1.19, golang-gopkg-yaml.v3-dev;
# scripts/setup-host.sh installs them). Modules cannot be fetched here, so the
# build runs in GOPATH mode with Debian's /usr/share/gocode on the path. Strata
# v0.22.0 needs Go 1.22 for one construct, a range over an integer
# (`for i := range n`); when the compiler reports exactly that, the reported
# line is rewritten to the equivalent three-clause loop in the temporary copy
# and the build retried. No other change is made to Strata's code.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
src="${CAIRN_STRATA_SRC:-/work/.mirror/scttfrdmn+strata/repo}"
# Strata v0.22.0 (the tag in its public repository).
commit="${CAIRN_STRATA_COMMIT:-af4ef00401d4d5ac7177ecf526b37a72051bf920}"
cache="${CAIRN_STRATA_PEER_CACHE:-/tmp/cairn-strata-peer}"
main_go="$here/tests/strata/peer/main.go"
if [ "${1:-}" = "--where" ]; then
  printf '%s\n%s\n' "$src" "$commit"
  exit 0
fi
gocode="/usr/share/gocode"

missing() {
  echo "strata-peer: prerequisite missing: $*" >&2
  exit 3
}
absent() {
  echo "strata-peer: $*" >&2
  exit 4
}

[ -d "$src" ] || absent "no such directory; set CAIRN_STRATA_SRC to a clone of github.com/scttfrdmn/strata"
# Resolved to the full object name: the cache is keyed by what is built, so a
# tag or branch given in CAIRN_STRATA_COMMIT that moves is rebuilt, and no
# ref name (slashes, dots) becomes part of a cache path.
resolved="$(git -C "$src" rev-parse --verify --quiet "$commit^{commit}" 2>/dev/null)" || absent "commit $commit is not in it"
commit="$resolved"
command -v go >/dev/null 2>&1 || missing "go (apt-get install golang-go)"
[ -f "$gocode/src/gopkg.in/yaml.v3/yaml.go" ] || missing "gopkg.in/yaml.v3 in $gocode (apt-get install golang-gopkg-yaml.v3-dev)"

go_version="$(go env GOVERSION)"
key="$(printf '%s\n%s\n%s\n' "$commit" "$go_version" "$(sha256sum "$main_go" "$0" | cut -d' ' -f1)" | sha256sum | cut -c1-16)"
out="$cache/${commit:0:12}-$key/strata-peer"
if [ -x "$out" ]; then
  echo "$out"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/cairn-strata-peer-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
pkg="$work/gopath/src/github.com/scttfrdmn/strata"
mkdir -p "$pkg/spec" "$work/gopath/src/cairn-strata-peer"
# The spec directory's own tree: archiving the whole commit would walk (and
# complain about) large files a mirror may hold only as absent objects.
git -C "$src" archive "$commit:spec" | tar -x -C "$pkg/spec"
rm -f "$pkg"/spec/*_test.go
cp "$main_go" "$work/gopath/src/cairn-strata-peer/main.go"

# The build sees a clean environment: nothing of the caller's Go settings
# (GOFLAGS, GOOS/GOARCH, GOEXPERIMENT, a GOENV file with -toolexec, ...) can
# change or break what is built; GOTOOLCHAIN=local keeps a newer Go from
# fetching a toolchain, and CGO_ENABLED=0 keeps the C compiler out of it.
gobin="$(command -v go)"
build() {
  (cd "$work/gopath/src/cairn-strata-peer" &&
    env -i PATH="$(dirname "$gobin"):/usr/bin:/bin" HOME="$work" GOENV=off GOTOOLCHAIN=local CGO_ENABLED=0 \
      GO111MODULE=off GOPATH="$work/gopath:$gocode" GOCACHE="$work/cache" \
      "$gobin" build -trimpath -o "$work/strata-peer" . 2>"$work/build.log")
}

for _ in 1 2 3 4 5 6 7 8; do
  if build; then
    mkdir -p "$(dirname "$out")"
    # Published by rename so a concurrent reader never sees a partial binary.
    cp "$work/strata-peer" "$out.tmp.$$"
    mv -f "$out.tmp.$$" "$out"
    echo "$out"
    exit 0
  fi
  # The one rewrite allowed: Go 1.22's range over an int, at the line the compiler names.
  fixed=0
  while IFS=: read -r file line _; do
    case "$file" in /*) ;; *) file="$work/gopath/src/cairn-strata-peer/$file" ;; esac
    [ -f "$file" ] || continue
    sed -E -i "${line}s/for ([A-Za-z_][A-Za-z0-9_]*) := range ([A-Za-z_][A-Za-z0-9_.]*) \\{/for \\1 := 0; \\1 < \\2; \\1++ {/" "$file"
    fixed=1
  done < <(grep -E 'cannot range over [^ ]+ \((variable|constant) of type int\)' "$work/build.log" || true)
  [ "$fixed" -eq 1 ] || break
done
echo "strata-peer: the build failed:" >&2
cat "$work/build.log" >&2
exit 1
