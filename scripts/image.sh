#!/usr/bin/env bash
# ejserver's OCI image, FROM scratch, built with Debian's buildah (no registry is needed: nothing is pulled).
#
#   scripts/image.sh build     build ejserver:VERSION (and :latest) from the commit HEAD
#   scripts/image.sh test      install podman, buildah, runc; build; run the image with podman against a real
#                              ZooKeeper and receiver (integration/image_test.go)
#
# IMAGE_FORMAT=docker builds a Docker-format image, which keeps the HEALTHCHECK (OCI images have no health
# check field: podman and Kubernetes configure their own). The layers take the commit's time (--timestamp),
# so the same commit gives the same image.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-ejserver}
FORMAT=${IMAGE_FORMAT:-oci}
COMMIT=$(git rev-parse HEAD)
EPOCH=$(git log -1 --format=%ct HEAD)
CREATED=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)
VERSION=${VERSION:-$(git describe --tags --always HEAD 2>/dev/null || echo "$COMMIT")}
ARCH=$(go env GOARCH)

need() {
  local missing=()
  command -v buildah >/dev/null || missing+=(buildah)
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  [ -f /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} (Debian packages)..." >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build() {
  need
  local ctx
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' RETURN
  PLATFORMS="linux/$ARCH" VERSION="$VERSION" scripts/release.sh build "$ctx/out" >/dev/null
  cp "$ctx/out/ejserver_${VERSION}_linux_${ARCH}" "$ctx/ejserver"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
  printf 'ejserver:x:65532:65532:ejserver:/var/lib/ejserver:/sbin/nologin\n' > "$ctx/passwd"
  printf 'ejserver:x:65532:\n' > "$ctx/group"
  mkdir "$ctx/data"
  local a=org.opencontainers.image
  buildah build --quiet --format "$FORMAT" --timestamp "$EPOCH" --layers=false \
    --build-arg VERSION="$VERSION" --build-arg COMMIT="$COMMIT" --build-arg CREATED="$CREATED" \
    --annotation "$a.title=ejserver" --annotation "$a.version=$VERSION" --annotation "$a.revision=$COMMIT" \
    --annotation "$a.created=$CREATED" --annotation "$a.source=https://github.com/ejserver/ejserver" \
    --annotation "$a.base.name=scratch" \
    -t "$IMAGE:$VERSION" -t "$IMAGE:latest" -f deploy/container/Containerfile "$ctx" >/dev/null
  echo "built $IMAGE:$VERSION ($FORMAT, linux/$ARCH, $(podman image inspect -f '{{.Size}}' "$IMAGE:$VERSION" | awk '{printf "%.1f MB", $1/1e6}'), id $(podman image inspect -f '{{.Id}}' "$IMAGE:$VERSION" | cut -c1-12))"
}

case "${1:-build}" in
build)
  build
  ;;
test)
  start=$SECONDS
  scripts/deps.sh zookeeper java
  build
  # and the Docker-format image, which keeps the HEALTHCHECK
  IMAGE=$IMAGE-docker FORMAT=docker build
  EJ_IMAGE="$IMAGE:$VERSION" EJ_IMAGE_DOCKER="$IMAGE-docker:$VERSION" \
    go test -tags image -count=1 -timeout 10m -run 'TestImage' -v ./integration/
  echo "image test passed in $((SECONDS - start)) s"
  ;;
*)
  echo "usage: $0 build | test" >&2
  exit 2
  ;;
esac
