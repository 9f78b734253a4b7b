# Reelforge. `make` lists the targets.
SHELL := /bin/bash
GO    ?= go
BIN   := bin
PLUGINS := $(notdir $(wildcard plugins/*))
# sqlite_fts5: go-sqlite3 compiles SQLite's FTS5 (the keyword index) only under this tag. It is
# added to whatever GOFLAGS the environment sets (CI sets -buildvcs=false).
export GOFLAGS := $(strip $(or $(GOFLAGS),-buildvcs=false) -tags=sqlite_fts5)

.DEFAULT_GOAL := help

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: plugins ## build the host (bin/reelforge) and the plugins (bin/plugins/)
	$(GO) build -o $(BIN)/reelforge ./host

plugins: ## build every plugin binary into bin/plugins/
	@mkdir -p $(BIN)/plugins
	@for d in plugins/*/cmd/*-plugin; do \
		[ -d "$$d" ] || continue; \
		echo "$(GO) build -o $(BIN)/plugins/$$(basename $$d) ./$$d"; \
		$(GO) build -o $(BIN)/plugins/$$(basename $$d) ./$$d || exit 1; \
	done

run: tools-run build ## build and start the host on :3001 with zero configuration (SQLite in ./data)
	exec ./$(BIN)/reelforge serve

test: tools-test plugins ## run every test (SQLite always; PostgreSQL too when TEST_DATABASE_URL is set)
	$(GO) test -race -count=1 -timeout 20m ./...

# The programs the local generators run (espeak-ng, ffmpeg, fonts) and the tests use: installed
# from Debian's packages when missing and run as root; otherwise make stops with the command to
# run. SKIP_MEDIA_TESTS=1 lets `make test` go on without them (the tests needing one skip, saying so).
tools-run:
	@scripts/install-tools.sh run

tools-test:
	@if [ "$${SKIP_MEDIA_TESTS:-}" = 1 ]; then \
		echo "SKIP_MEDIA_TESTS=1: tests needing a program this machine lacks are skipped"; \
	else scripts/install-tools.sh test; fi

crash-test: ## SIGKILL the host in CRASH_ROUNDS rounds (default 20) on SQLite and TEST_DATABASE_URL; counts lost, duplicated, stuck, orphaned work
	CRASH_ROUNDS=$${CRASH_ROUNDS:-20} $(GO) test -count=1 -timeout 3h -v -run 'TestCrash|TestTwoHosts' ./host/crashtest

fault-test: ## break the database under two host processes in FAULT_ROUNDS rounds (default 3): a PostgreSQL cluster of its own paused, killed, run out of connections, claims landing late, a host cut off; counts answers, lost, duplicated, overlapping, stuck work
	FAULT_ROUNDS=$${FAULT_ROUNDS:-3} $(GO) test -count=1 -timeout 1h -v -run 'TestFault|TestStart' ./host/faulttest

test-short: ## quick tests: no plugin processes, no race detector
	$(GO) test -short -count=1 ./...

test-pg: ## the store and API tests against $TEST_DATABASE_URL
	@test -n "$$TEST_DATABASE_URL" || { echo "set TEST_DATABASE_URL"; exit 1; }
	$(GO) test -count=1 ./host/store/... ./host/api/...

bench: build ## measure speed (bench/, figures in BENCHMARKS.md); TEST_DATABASE_URL adds PostgreSQL; BENCH_FLAGS="-only api -duration 2s" for a quick run
	$(GO) run ./bench $(BENCH_FLAGS)

proto: ## regenerate the plugin protocol's Go code
	bash sdk/proto/generate.sh

verify: proto ## regenerate, then fail when generated code drifted
	git diff --exit-code -- sdk/

# staticcheck with every check, pinned: `go run` fetches it through the Go module proxy once.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: ## go vet, gofmt, the import rules (internal/layering) and staticcheck
	$(GO) vet ./...
	@test -z "$$(gofmt -l host sdk plugins internal bench)" || { gofmt -l host sdk plugins internal bench; exit 1; }
	$(GO) test -count=1 ./internal/layering
	@! grep -rn --include='*.go' '//nolint' . || { echo 'no linter here reads //nolint: staticcheck takes //lint:ignore CHECK reason'; exit 1; }
	$(GO) run $(STATICCHECK) -checks all ./...

tidy: ## go mod tidy (-e: a test dependency of a dependency is not served here)
	$(GO) mod tidy -e

e2e-n8n: ## opt-in: import and publish integrations/automation/*.json in a real n8n 2.41.1 (first run installs ~3 GB into ~/.cache)
	bash scripts/e2e-n8n.sh

e2e-langgraph: ## opt-in: live (review, resume) and short_drama (a video) through a stock LangGraph server (first run installs ~160 MB into ~/.cache)
	bash scripts/e2e-langgraph.sh

e2e-flowise: ## opt-in: kb_chat and a two-turn /api/ai/chat through a stock Flowise 3.1.4 and its API-made chatflow (first run installs ~3 GB into ~/.cache)
	bash scripts/e2e-flowise.sh

# The real-browser check: headless Chromium (Debian's, installed by scripts/install-browser.sh) on a
# page of another origin plays a voiceover_video from its signed URLs (host/e2e/browser). The host
# runs as `make run` does, on SQLite, or on E2E_DATABASE_URL; the screenshot is bin/e2e-browser.png.
e2e-browser: build ## headless Chromium plays a run's video, cover and captions from another origin (screenshot in bin/)
	bash scripts/install-browser.sh
	$(GO) test -count=1 -timeout 15m -tags=sqlite_fts5,e2ebrowser -v -run TestBrowser ./host/e2e/browser

demo: build ## ingest the demo knowledge base for a demo user (host must be running on :3001)
	bash scripts/demo.sh

clean: ## remove build output
	rm -rf $(BIN)

.PHONY: help build plugins run test tools-run tools-test crash-test fault-test test-short test-pg bench proto verify lint tidy e2e-n8n e2e-langgraph e2e-flowise e2e-browser demo clean
