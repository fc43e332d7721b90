#!/usr/bin/env bash
# The OpenAPI spec in openapi/ is generated from the swag annotations in api/:
#   scripts/openapi.sh generate   # make generate: swag -> openapi/swagger.{json,yaml}, then the OpenAPI 3 conversion
#   scripts/openapi.sh check      # make test: fails if the committed spec differs from a fresh generation, or is invalid
set -euo pipefail
cd "$(dirname "$0")/.."
SWAG_VERSION=v1.16.6
export PATH=$PATH:$(go env GOPATH)/bin

swag_bin() {
  local bin
  bin="$(go env GOPATH)/bin/swag"
  # `swag --version` prints 1.16.4 for v1.16.6, so the version is pinned by installing, not by checking
  if [ ! -x "$bin" ] || [ ! -f "$(go env GOPATH)/bin/.swag-$SWAG_VERSION" ]; then
    echo "installing swag $SWAG_VERSION..." >&2
    go install "github.com/swaggo/swag/cmd/swag@$SWAG_VERSION"
    touch "$(go env GOPATH)/bin/.swag-$SWAG_VERSION"
  fi
  echo "$bin"
}

# generate DIR: the three files into DIR
generate() {
  local out=$1 swag
  swag=$(swag_bin)
  mkdir -p "$out"
  "$swag" init --quiet -d ./ -g api/server.go --parseInternal --useStructName \
    --exclude ./integration,./examples,./internal/tools,./client,./cmd,./openapi \
    --outputTypes json,yaml -o "$out" >/dev/null
  go run ./internal/tools/openapi convert "$out/swagger.json" "$out/openapi3.json"
}

case "${1:-}" in
  generate)
    generate openapi
    echo "wrote openapi/swagger.json, openapi/swagger.yaml, openapi/openapi3.json"
    ;;
  check)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    generate "$tmp"
    stale=0
    for f in swagger.json swagger.yaml openapi3.json; do
      if ! diff -u "openapi/$f" "$tmp/$f" >"$tmp/$f.diff"; then
        echo "openapi/$f is stale: run make generate and commit it. The difference:" >&2
        head -40 "$tmp/$f.diff" >&2
        stale=1
      fi
    done
    [ $stale -eq 0 ] || exit 1
    go run ./internal/tools/openapi validate openapi/openapi3.json
    echo "openapi/ is fresh and valid"
    ;;
  *)
    echo "usage: scripts/openapi.sh generate|check" >&2
    exit 2
    ;;
esac
