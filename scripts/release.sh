#!/usr/bin/env bash
# Release binaries of the commit HEAD, and the proof that they are reproducible.
#
#   scripts/release.sh build [OUT]   static binaries for every platform below, and SHA256SUMS, in OUT (dist/)
#   scripts/release.sh test          build HEAD twice, each in a directory of its own with an empty build cache
#                                    of its own, compare the bytes, and run the linux/amd64 binary in an empty
#                                    root (no libc, no /usr/share/zoneinfo, no CA file)
#
# What goes into a build is the commit only (git archive HEAD, never the work tree): CGO off, -trimpath, no
# VCS stamp, no build id, and version/commit/date set with -ldflags, the date being the commit's time. So the
# same commit gives the same bytes on any machine with the same Go version, wherever it is checked out.
set -euo pipefail
cd "$(dirname "$0")/.."

PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/arm64 windows/amd64"}
COMMIT=$(git rev-parse HEAD)
DATE=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)
VERSION=${VERSION:-$(git describe --tags --always HEAD 2>/dev/null || echo "$COMMIT")}

# build_in SRC OUT CACHE: builds every platform from the source tree SRC into OUT with GOCACHE=CACHE.
build_in() {
  local src=$1 out=$2 cache=$3 p os arch bin
  mkdir -p "$out"
  for p in $PLATFORMS; do
    os=${p%/*} arch=${p#*/}
    bin="$out/ejserver_${VERSION}_${os}_${arch}"
    [ "$os" = windows ] && bin="$bin.exe"
    (cd "$src" && env GOCACHE="$cache" GOOS="$os" GOARCH="$arch" CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0 \
      GOTOOLCHAIN=local GOFLAGS=-mod=readonly GOEXPERIMENT= \
      go build -trimpath -buildvcs=false \
        -ldflags "-s -w -buildid= -X main.version=$VERSION -X main.commit=$COMMIT -X main.date=$DATE" \
        -o "$bin" ./cmd/ejserver)
    echo "  built $(basename "$bin") ($(( $(stat -c %s "$bin") / 1024 / 1024 )) MiB)"
  done
  (cd "$out" && sha256sum ejserver_* > SHA256SUMS)
}

# export_head DIR: the files of the commit HEAD was at the start, and nothing else, in DIR (HEAD may move
# while a build runs).
export_head() {
  mkdir -p "$1"
  git archive --format=tar "$COMMIT" | tar -x -C "$1"
}

warn_dirty() {
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "note: the work tree has uncommitted changes; the release is built from the commit $COMMIT only" >&2
  fi
}

case "${1:-build}" in
build)
  out=${2:-dist}
  warn_dirty
  tmp=$(mktemp -d)
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  export_head "$tmp/src"
  rm -rf "$out" && mkdir -p "$out"
  out=$(cd "$out" && pwd)
  echo "release $VERSION (commit $COMMIT, $DATE), $(go version | cut -d' ' -f3)"
  build_in "$tmp/src" "$out" "${GOCACHE:-$(go env GOCACHE)}"
  cat "$out/SHA256SUMS"
  ;;
test)
  warn_dirty
  start=$SECONDS
  tmp=$(mktemp -d)
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  # two checkouts at different paths (so -trimpath is what keeps paths out), two empty build caches
  for n in 1 2; do
    export_head "$tmp/checkout-$n/ejserver"
    mkdir -p "$tmp/cache-$n"
    echo "build $n: $tmp/checkout-$n, empty GOCACHE $tmp/cache-$n"
    build_in "$tmp/checkout-$n/ejserver" "$tmp/out-$n" "$tmp/cache-$n"
  done
  echo "== the two builds, byte for byte"
  cat "$tmp/out-1/SHA256SUMS"
  if ! cmp "$tmp/out-1/SHA256SUMS" "$tmp/out-2/SHA256SUMS"; then
    diff "$tmp/out-1/SHA256SUMS" "$tmp/out-2/SHA256SUMS" || true
    echo "FAIL: the two builds of $COMMIT differ"
    exit 1
  fi
  for f in "$tmp"/out-1/ejserver_*; do cmp "$f" "$tmp/out-2/$(basename "$f")"; done
  echo "ok: $(wc -l < "$tmp/out-1/SHA256SUMS") binaries and SHA256SUMS identical"

  bin=$(ls "$tmp"/out-1/ejserver_*_linux_amd64)
  echo "== the linux/amd64 binary is static"
  if readelf -l "$bin" | grep -q 'INTERP\|DYNAMIC'; then echo "FAIL: it asks for a dynamic loader"; exit 1; fi
  echo "ok: no interpreter, no dynamic section"
  echo "== it runs in an empty root (only the binary: no libc, no zoneinfo, no CA file)"
  root="$tmp/emptyroot"
  mkdir -p "$root"
  cp "$bin" "$root/ejserver"
  if [ "$(id -u)" -eq 0 ] && command -v chroot >/dev/null; then
    run() { chroot "$root" /ejserver "$@"; }
  else
    echo "(not root: running it with ZONEINFO unset and TZ pointing nowhere instead of in a chroot)"
    run() { env -i ZONEINFO=/nonexistent "$root/ejserver" "$@"; }
  fi
  v=$(run version)
  echo "$v"
  for want in "ejserver $VERSION" "commit:  $COMMIT" "built:   $DATE" "$(go version | cut -d' ' -f3)"; do
    if ! grep -qF "$want" <<<"$v"; then echo "FAIL: version does not say \"$want\""; exit 1; fi
  done
  # a client command that does real work: a token from the kernel's randomness, its hash
  tok=$(run token new --role viewer --name release-test)
  grep -q 'viewer release-test sha256:' <<<"$tok" || { echo "FAIL: token new: $tok"; exit 1; }
  # healthcheck with nothing listening: it must say so and exit 1 (the exit code is the health)
  if run healthcheck --listen 127.0.0.1:1 2>/dev/null; then echo "FAIL: healthcheck passed with no server"; exit 1; fi
  # the IANA zones travel inside the binary (time/tzdata); the image test fires an Asia/Shanghai job with them
  grep -aq 'Asia/Shanghai' "$bin" || { echo "FAIL: no embedded time zone database"; exit 1; }
  echo "ok: runs with nothing but itself; time zones embedded"
  echo "release test passed in $((SECONDS - start)) s"
  ;;
*)
  echo "usage: $0 build [OUT] | test" >&2
  exit 2
  ;;
esac
