#!/usr/bin/env bash
# make soak: the nemesis soak (integration/cmd/soak). A 3-node ZooKeeper ensemble, 4 ejserver peers with
# PostgreSQL history, a mixed job set with recording receivers, and a seeded nemesis injecting overlapping
# faults for DURATION (default 5m; the run takes about 2 minutes more); then the checker's report. It exits
# non-zero on any violation and prints the seed that replays the fault schedule and the kept run directory.
#   make soak DURATION=30m SEED=42
#   scripts/soak.sh -peers 5 -keep
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh zookeeper java postgresql
mkdir -p .run/soak
go build -o .run/soak/soak ./integration/cmd/soak
args=(-duration "${DURATION:-5m}")
[ -n "${SEED:-}" ] && args+=(-seed "$SEED")
exec .run/soak/soak "${args[@]}" "$@"
