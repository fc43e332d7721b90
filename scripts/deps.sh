#!/usr/bin/env bash
# Installs what ejserver's run and test targets need, on Debian, when it is missing. Idempotent.
#   scripts/deps.sh zookeeper [postgresql] [node] [chromium]
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
for what in "$@"; do
  case "$what" in
    zookeeper)  [ -f /usr/share/java/zookeeper.jar ] || need_apt+=(zookeeper) ;;
    postgresql) [ -x /usr/lib/postgresql/15/bin/initdb ] || need_apt+=(postgresql) ;;
    chromium)   command -v chromium >/dev/null || need_apt+=(chromium) ;;
    java)       command -v java >/dev/null || need_apt+=(default-jre-headless) ;;
  esac
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} (Debian packages)..." >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
for what in "$@"; do
  if [ "$what" = node ]; then
    for dir in examples/webhooks/node; do
      if [ -f "$dir/package-lock.json" ] && [ ! -d "$dir/node_modules" ]; then
        echo "installing node packages in $dir..." >&2
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
      fi
    done
  fi
done
