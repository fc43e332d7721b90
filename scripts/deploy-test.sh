#!/usr/bin/env bash
# make test-deploy: the deployment files under deploy/, checked with the real tools and the real binary, in
# deploy/'s own Go module (k8s.io/api and compose-go stay out of the server's go.mod):
#   - Kubernetes manifests decoded strictly into k8s.io/api's types, with their probes, grace period,
#     selectors, Secret references and pod fields checked, and their probe paths asked on a real peer;
#   - compose.yaml loaded and validated with compose-spec/compose-go;
#   - the systemd unit: systemd-analyze verify with the real binary, systemd-analyze security --offline;
#   - the Prometheus rules: promtool check rules and promtool test rules.
# Installs Debian's prometheus (promtool) and ZooKeeper when missing; starts and stops a ZooKeeper by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

need=()
command -v promtool >/dev/null || need+=(prometheus)
command -v systemd-analyze >/dev/null || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} (Debian packages)..." >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
scripts/deps.sh zookeeper java

. scripts/zk.sh
zkdir=$(mktemp -d)
trap 'zk_stop "$zkdir"; rm -rf "$zkdir"' EXIT
EJ_TEST_ZK=$(zk_start "$zkdir/zk" "$(zk_free_port)")
export EJ_TEST_ZK EJ_DEPLOY_TOOLS=1

cd deploy
echo "== gofmt, go mod tidy, go vet (deploy module)"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
go mod tidy -diff
go vet ./...
echo "== go test (deploy module)"
log="$zkdir/test.log"
status=0
go test -count=1 -v ./... > "$log" 2>&1 || status=$?
grep -vE '^=== (RUN|PAUSE|CONT)' "$log"
[ "$status" -eq 0 ] || { echo "deploy tests FAILED"; exit "$status"; }
echo "deploy tests passed in $((SECONDS - start)) s"
