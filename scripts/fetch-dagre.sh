#!/usr/bin/env bash
# Fetches the console's graph-layout library (@dagrejs/dagre, which lays out a workflow run's DAG) again from
# the npm registry and checks it: the tarball of the pinned version must match the package's published
# integrity hash (npm's dist.integrity, sha512 of the tarball), and the committed files in web/static/vendor/
# must then equal the tarball's. The ES module bundles its one dependency (@dagrejs/graphlib).
#   scripts/fetch-dagre.sh          # verify the committed files (exit 1 if they differ)
#   scripts/fetch-dagre.sh write    # (re)write them from the verified tarball
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=3.1.3
INTEGRITY='sha512-X4aUTwOReZvthaZWOVHqlJ52/ZdhZFEM4+Lh/uR4XooUSLE6p71bcy7MPGzYnNUcNh+nj+i/qJQpCMIdQnSmrg=='
TARBALL="https://registry.npmjs.org/@dagrejs/dagre/-/dagre-$VERSION.tgz"
DEST=web/static/vendor

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL "$TARBALL" -o "$tmp/dagre.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tmp/dagre.tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
  echo "@dagrejs/dagre $VERSION: the tarball's hash $got is not the published $INTEGRITY" >&2
  exit 1
fi
# the registry's own record must still say the same (a pinned hash that went stale would be caught here)
if command -v npm >/dev/null; then
  published=$(npm view "@dagrejs/dagre@$VERSION" dist.integrity 2>/dev/null || true)
  if [ -n "$published" ] && [ "$published" != "$INTEGRITY" ]; then
    echo "@dagrejs/dagre $VERSION: the registry now publishes $published, not the pinned $INTEGRITY" >&2
    exit 1
  fi
fi
tar -xzf "$tmp/dagre.tgz" -C "$tmp"
files=(dist/dagre.esm.js dist/dagre.esm.js.LEGAL.txt LICENSE)
names=(dagre.esm.js dagre.esm.js.LEGAL.txt dagre.LICENSE.txt)
status=0
for i in "${!files[@]}"; do
  src="$tmp/package/${files[$i]}" dst="$DEST/${names[$i]}"
  if [ "${1:-}" = write ]; then
    mkdir -p "$DEST"
    cp "$src" "$dst"
    echo "wrote $dst"
  elif ! cmp -s "$src" "$dst"; then
    echo "$dst differs from @dagrejs/dagre $VERSION's ${files[$i]}: run scripts/fetch-dagre.sh write" >&2
    status=1
  fi
done
[ $status -eq 0 ] && [ "${1:-}" != write ] && echo "web/static/vendor/ holds @dagrejs/dagre $VERSION as published ($INTEGRITY)"
exit $status
