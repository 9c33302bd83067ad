# agentbridge — the commands a newcomer needs. `make help` lists them.
GO      ?= go
BIN     := bin/agentbridge
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
FUZZTIME ?= 10m
SOAKTIME ?= 10m

.PHONY: help build run test lint gotest nodetest live live-latest bench demo soak fuzz man clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

build: ## build bin/agentbridge
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentbridge

run: build ## serve on 127.0.0.1:7391, watching the default agent homes
	./$(BIN) serve

demo: build ## replay bundled journals so sessions move without any agent installed
	./$(BIN) demo

test: lint gotest nodetest ## everything CI runs: vet, gofmt, go test -race (fuzz seeds, browser test), node tests

lint: ## gofmt, go vet, and no tracked file over 1 MiB
	@.ci/large-files
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

gotest:
	$(GO) test -race -count=1 -timeout 10m ./...

nodetest: build
	AGENTBRIDGE_BIN=$(abspath $(BIN)) node --test web/test/
	cd extensions/terminay && AGENTBRIDGE_BIN=$(abspath $(BIN)) node --test

live: ## the real agent CLIs (pinned, from npm, cached) offline against a scripted model server, in tmux; prints scenarios × agents
	cd e2e/live && AGENTBRIDGE_LIVE=1 $(GO) test -count=1 -timeout 40m

live-latest: ## the live suite against the newest version of each CLI on npm (not CI's gate); writes docs/live-latest.md
	cd e2e/live && AGENTBRIDGE_LIVE=1 AGENTBRIDGE_LIVE_LATEST=1 AGENTBRIDGE_LIVE_REPORT=$(abspath docs/live-latest.md) $(GO) test -count=1 -timeout 30m; \
	status=$$?; echo "live-latest: results in docs/live-latest.md"; exit $$status

bench: ## benchmarks and the end-to-end bench, each next to a baseline measured in the same run (~5-8 min)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./cmd/agentbridge-bench

soak: ## many sessions and flapping clients for SOAKTIME (default 10m); checks state and memory at the end
	$(GO) run ./cmd/agentbridge-soak -duration $(SOAKTIME) -sessions 100 -clients 30

fuzz: ## run every fuzz target for FUZZTIME (default 10m) each
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

man: build ## man pages for every subcommand in bin/man (not committed): man -l bin/man/agentbridge.1
	./$(BIN) man bin/man

clean:
	rm -rf bin artifacts
