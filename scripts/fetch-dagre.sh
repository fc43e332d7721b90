#!/usr/bin/env bash
# Fetches the console's graph-layout library (@dagrejs/dagre, which lays out a workflow run's DAG) again from
# the npm registry and checks it: the tarball of the pinned version must match the package's published
# integrity hash (npm's dist.integrity, sha512 of the tarball), and the committed files in web/static/vendor/
# must then equal the tarball's. The ES module bundles its one dependency (@dagrejs/graphlib).
#   scripts/fetch-dagre.sh          # verify the committed files (exit 1 if they differ)
#   scripts/fetch-dagre.sh write    # (re)write them from the verified tarball
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm-vendor.sh
VERSION=3.1.3
npm_vendor "${1:-}" @dagrejs/dagre "$VERSION" \
  'sha512-X4aUTwOReZvthaZWOVHqlJ52/ZdhZFEM4+Lh/uR4XooUSLE6p71bcy7MPGzYnNUcNh+nj+i/qJQpCMIdQnSmrg==' \
  "https://registry.npmjs.org/@dagrejs/dagre/-/dagre-$VERSION.tgz" scripts/fetch-dagre.sh \
  'dist/dagre.esm.js:dagre.esm.js dist/dagre.esm.js.LEGAL.txt:dagre.esm.js.LEGAL.txt LICENSE:dagre.LICENSE.txt'
