#!/usr/bin/env bash
# make test: installs what the tests need, then gofmt, go mod tidy -diff, vet, unit tests with -race (fuzz
# seed corpora run as part of them; internal/history once more without -race), the integration tests against real ZooKeeper/PostgreSQL/receivers, and
# the OpenAPI freshness check. Every server a test needs is started by the test itself and stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:$(go env GOPATH)/bin
start=$SECONDS
step() { printf '\n== %s (%ds)\n' "$1" $((SECONDS - start)); }

step "installing test dependencies"
scripts/deps.sh zookeeper java postgresql node chromium

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^openapi/') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi

step "go.mod and go.sum are tidy"
# a module imported directly must not be marked // indirect, and nothing unused may linger
if ! go mod tidy -diff; then echo "go.mod or go.sum is not tidy: run go mod tidy and commit the result"; exit 1; fi

step "go vet and staticcheck"
go vet ./...
GOFLAGS= go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
staticcheck ./...

step "unit tests with -race (fuzz seeds included)"
go test -race -count=1 -timeout 10m $(go list ./... | grep -v /integration)
# internal/history again without -race: its data-heavy tests (query plans, migrations, the rollup against its
# rows; one goroutine each) leave the race pass, where modernc's SQLite is ~30x slower, and run here (dataHeavy)
go test -count=1 -timeout 5m ./internal/history
# the go-zookeeper fork is a module of its own (go.mod's replace): its vet and tests run from its folder
(cd internal/third_party/zk && go vet ./... && go test -race -count=1 -timeout 5m ./...)

step "integration tests (real ZooKeeper, real ejserver processes, real receivers)"
# tests that call t.Parallel (most: they wait on cron ticks and session timeouts, not on CPU) run
# IT_PARALLEL at a time; the timing-sensitive ones stay sequential (integration/README.md)
go test -count=1 -timeout 12m -parallel "${IT_PARALLEL:-4}" ./integration/...

if [ -f scripts/openapi.sh ]; then
  step "OpenAPI spec is fresh and valid"
  scripts/openapi.sh check
fi
step "all tests passed"
