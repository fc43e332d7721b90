#!/usr/bin/env bash
# make bench: the benchmark harness (integration/cmd/ejbench) with its defaults: every workload (steady-1k,
# steady-10k, fanout, second, failover, reshard, async), each beside its bare-loop baseline, 5-minute windows
# for the steady ones and async. About 65 minutes. It starts its own ZooKeeper and peers on loopback and stops
# them by PID.
#
# The table goes to stdout (progress to stderr); the JSON of the run to .run/bench/latest.json.
# Pass flags through EJBENCH_FLAGS or as arguments, e.g.:
#   EJBENCH_FLAGS="-workload second,fanout -duration 2m" make bench
#   scripts/bench.sh -workload steady-10k -profile .run/bench/prof
#   scripts/bench.sh -workload async -duration 2m      # long-running items: 202 and a callback 1-30 s later
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh zookeeper java
mkdir -p .run/bench
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; a busy machine slows the baseline too" >&2
go build -o .run/bench/ejbench ./integration/cmd/ejbench
# shellcheck disable=SC2086 # EJBENCH_FLAGS is a list of flags
exec .run/bench/ejbench -out .run/bench/latest.json ${EJBENCH_FLAGS:-} "$@"
