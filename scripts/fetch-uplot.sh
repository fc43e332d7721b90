#!/usr/bin/env bash
# Fetches the console's chart library again from the npm registry and checks it: the tarball of the pinned
# version must match the package's published integrity hash (npm's dist.integrity, sha512 of the tarball),
# and the committed files in web/static/vendor/ must then equal the tarball's.
#   scripts/fetch-uplot.sh          # verify the committed files (exit 1 if they differ)
#   scripts/fetch-uplot.sh write    # (re)write them from the verified tarball
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.6.32
INTEGRITY='sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=='
TARBALL="https://registry.npmjs.org/uplot/-/uplot-$VERSION.tgz"
DEST=web/static/vendor

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL "$TARBALL" -o "$tmp/uplot.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tmp/uplot.tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
  echo "uplot $VERSION: the tarball's hash $got is not the published $INTEGRITY" >&2
  exit 1
fi
# the registry's own record must still say the same (a pinned hash that went stale would be caught here)
if command -v npm >/dev/null; then
  published=$(npm view "uplot@$VERSION" dist.integrity 2>/dev/null || true)
  if [ -n "$published" ] && [ "$published" != "$INTEGRITY" ]; then
    echo "uplot $VERSION: the registry now publishes $published, not the pinned $INTEGRITY" >&2
    exit 1
  fi
fi
tar -xzf "$tmp/uplot.tgz" -C "$tmp"
files=(dist/uPlot.esm.js dist/uPlot.min.css LICENSE)
names=(uPlot.esm.js uPlot.min.css uPlot.LICENSE.txt)
status=0
for i in "${!files[@]}"; do
  src="$tmp/package/${files[$i]}" dst="$DEST/${names[$i]}"
  if [ "${1:-}" = write ]; then
    mkdir -p "$DEST"
    cp "$src" "$dst"
    echo "wrote $dst"
  elif ! cmp -s "$src" "$dst"; then
    echo "$dst differs from uplot $VERSION's ${files[$i]}: run scripts/fetch-uplot.sh write" >&2
    status=1
  fi
done
[ $status -eq 0 ] && [ "${1:-}" != write ] && echo "web/static/vendor/ holds uplot $VERSION as published ($INTEGRITY)"
exit $status
