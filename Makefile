# ejserver: `make run` starts a demo cluster of one; `make test` installs and runs every test.
.DEFAULT_GOAL := help
GO ?= go
# integration tests that call t.Parallel run this many at a time: they mostly wait on cron ticks and timeouts
IT_PARALLEL ?= 4
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
# the commit's time, not the build's: the same commit builds to the same bytes
DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: help run test test-race test-unit test-integration lint build bench bench-stats soak generate clean release test-release image test-image test-deploy

help: ## show the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

run: ## start ZooKeeper, ejserver, the demo receiver and a demo job; webhooks print here (Ctrl-C stops all)
	@scripts/run.sh

test: ## install test dependencies, then gofmt, go mod tidy, vet, unit+race, fuzz seeds, integration, OpenAPI check
	@scripts/test.sh

test-race: ## unit tests with the race detector
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /integration)

test-unit: ## unit tests without the race detector (quick)
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)

test-integration: ## the integration tests only
	$(GO) test -count=1 -timeout 12m -parallel $(IT_PARALLEL) ./integration/...

lint: ## gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	$$($(GO) env GOPATH)/bin/staticcheck ./...

build: ## build bin/ejserver
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ejserver ./cmd/ejserver

release: ## static, reproducible binaries of HEAD for linux/amd64, linux/arm64, darwin/arm64, windows/amd64 + SHA256SUMS in dist/
	@scripts/release.sh build dist

test-release: ## build HEAD twice (separate dirs, empty build caches), compare the bytes, run it in an empty root (minutes)
	@scripts/release.sh test

image: ## OCI image ejserver:VERSION FROM scratch (binary, CA roots, user 65532) with buildah; IMAGE_FORMAT=docker keeps HEALTHCHECK
	@scripts/image.sh build

test-image: ## install podman/buildah/runc, build the image, run it against real ZooKeeper and a receiver (minutes)
	@scripts/image.sh test

test-deploy: ## the deploy/ module: k8s manifests (k8s.io/api, strict), compose-go, systemd-analyze, promtool
	@scripts/deploy-test.sh

bench: ## run the benchmark harness (real ZooKeeper and peers; minutes)
	@scripts/bench.sh

bench-stats: ## the history's stats (rollup against rows), its writer with and without the rollup, the load ahead at 100k jobs, a 10k-execution job page in Chromium (~20 min)
	@scripts/bench-stats.sh

soak: ## nemesis soak: overlapping faults on a real cluster, then a checker over the whole run (DURATION=5m SEED=...)
	@scripts/soak.sh

generate: ## regenerate the OpenAPI spec in openapi/
	@scripts/openapi.sh generate

clean: ## remove build output and local run data
	rm -rf bin .run
