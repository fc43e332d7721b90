#!/usr/bin/env bash
# make bench-stats: the console charts' data benchmarks (docs/benchmarks.md, "Console charts"), each an A/B in
# one run: the stats of a 100,000-execution window read through the rollup and off the rows (SQLite and
# PostgreSQL; the tests start their own PostgreSQL), the Writer's throughput with and without the rollup's
# triggers, the rollup's cost per removed row of a cell of 20,000 rows (migration 0010 against 0009's trigger
# at 5,000), the load ahead of 100,000 jobs, and a job page of 10,000 executions in headless Chromium. The load average is printed before and after each, since
# the figures move with it. Extra arguments go to every `go test` (e.g. -benchtime 5x).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh postgresql
load() { echo "load average $1: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs" >&2; }
run() {
	load before
	go test "$1" -run '^$' -bench "$2" -benchtime "$3" "${@:4}" | grep -E '^(Benchmark|ok|FAIL)'
	load after
}
run ./internal/history 'BenchmarkJobStats100k' 3x "$@"
run ./internal/history 'BenchmarkWriter$' 20000x "$@"
run ./internal/history 'BenchmarkPruneHotCell/.*/.*/0010' 20000x "$@"
run ./internal/history 'BenchmarkPruneHotCell/sqlite' 5000x "$@"
run ./internal/loadahead 'BenchmarkCompute100kJobs' 3x -benchmem "$@"
run ./integration 'BenchmarkConsoleJobPage10k' 3x "$@"
