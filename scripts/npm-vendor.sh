# npm_vendor checks a pinned npm package's tarball against its published integrity hash (npm's
# dist.integrity, sha512 of the tarball) and then the committed copies of some of its files in
# web/static/vendor/ against the tarball's; with mode "write" it (re)writes those copies instead.
# Sourced by scripts/fetch-uplot.sh and scripts/fetch-dagre.sh:
#   npm_vendor MODE PACKAGE VERSION INTEGRITY TARBALL_URL SCRIPT 'src1:dst1 src2:dst2 ...'
npm_vendor() {
  local mode=$1 pkg=$2 version=$3 integrity=$4 tarball=$5 script=$6 files=$7
  local dest=web/static/vendor got published pair src dst status=0
  NPM_VENDOR_TMP=$(mktemp -d)
  trap 'rm -rf "$NPM_VENDOR_TMP"' EXIT
  local tmp=$NPM_VENDOR_TMP
  curl -fsSL "$tarball" -o "$tmp/pkg.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tmp/pkg.tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "$pkg $version: the tarball's hash $got is not the published $integrity" >&2
    return 1
  fi
  # the registry's own record must still say the same (a pinned hash that went stale would be caught here)
  if command -v npm >/dev/null; then
    published=$(npm view "$pkg@$version" dist.integrity 2>/dev/null || true)
    if [ -n "$published" ] && [ "$published" != "$integrity" ]; then
      echo "$pkg $version: the registry now publishes $published, not the pinned $integrity" >&2
      return 1
    fi
  fi
  tar -xzf "$tmp/pkg.tgz" -C "$tmp"
  for pair in $files; do
    src="$tmp/package/${pair%%:*}" dst="$dest/${pair#*:}"
    if [ "$mode" = write ]; then
      mkdir -p "$dest"
      cp "$src" "$dst"
      echo "wrote $dst"
    elif ! cmp -s "$src" "$dst"; then
      echo "$dst differs from $pkg $version's ${pair%%:*}: run $script write" >&2
      status=1
    fi
  done
  [ $status -eq 0 ] && [ "$mode" != write ] && echo "$dest/ holds $pkg $version as published ($integrity)"
  return $status
}
