#!/usr/bin/env bash
# Fetches the console's chart library again from the npm registry and checks it: the tarball of the pinned
# version must match the package's published integrity hash (npm's dist.integrity, sha512 of the tarball),
# and the committed files in web/static/vendor/ must then equal the tarball's.
#   scripts/fetch-uplot.sh          # verify the committed files (exit 1 if they differ)
#   scripts/fetch-uplot.sh write    # (re)write them from the verified tarball
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/npm-vendor.sh
VERSION=1.6.32
npm_vendor "${1:-}" uplot "$VERSION" \
  'sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==' \
  "https://registry.npmjs.org/uplot/-/uplot-$VERSION.tgz" scripts/fetch-uplot.sh \
  'dist/uPlot.esm.js:uPlot.esm.js dist/uPlot.min.css:uPlot.min.css LICENSE:uPlot.LICENSE.txt'
