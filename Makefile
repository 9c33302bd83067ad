# agentbridge — the commands a newcomer needs. `make help` lists them.
GO      ?= go
BIN     := bin/agentbridge
# Releases are tagged v0.MINOR.PATCH; between tags, `git describe` says how
# far past the last one this is (v0.4.0-3-g0df3eff), and without a tag
# the version is v0.0.0-dev. The commit and build date print beside it.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
PREFIX  ?= $(HOME)/.local
# GoReleaser from the Go module proxy, pinned; `go run` caches its build.
GORELEASER ?= $(GO) run github.com/goreleaser/goreleaser/v2@v2.17.0
FUZZTIME ?= 10m
SOAKTIME ?= 10m

.PHONY: help build manifest install uninstall install-check run test lint crosscheck gotest nodetest live live-latest bench demo soak fuzz man release release-snapshot release-one release-check clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

build: ## build bin/agentbridge
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentbridge

manifest: ## write the Terminay manifest's harnesses and variables from the source registry (after adding an agent)
	$(GO) generate ./sources/all

install: build man ## install agentbridge, its man pages and shell completions under PREFIX (default ~/.local)
	install -Dm755 $(BIN) $(DESTDIR)$(PREFIX)/bin/agentbridge
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m644 bin/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	./$(BIN) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/agentbridge
	./$(BIN) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_agentbridge
	./$(BIN) completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/agentbridge.fish
	@echo "installed $(PREFIX)/bin/agentbridge; to run it at login: $(PREFIX)/bin/agentbridge service install"

uninstall: ## remove what make install installed (run `agentbridge service uninstall` first)
	rm -f $(DESTDIR)$(PREFIX)/bin/agentbridge $(DESTDIR)$(PREFIX)/share/man/man1/agentbridge*.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/agentbridge \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_agentbridge \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/agentbridge.fish

run: build ## serve on 127.0.0.1:7391, watching the default agent homes
	./$(BIN) serve

demo: build ## replay bundled journals so sessions move without any agent installed
	./$(BIN) demo

test: lint gotest nodetest ## everything CI runs: vet, gofmt, go test -race (fuzz seeds, browser test), node tests

lint: crosscheck ## gofmt, go vet, go mod tidy, the macOS and Windows builds, and no tracked file over 1 MiB
	@.ci/large-files
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# macOS: build both architectures, vet every package with its tests (the
# live suite too: it compiles there, it runs on Linux; no file of ours
# differs between amd64 and arm64, so one vet covers both), and link the
# tests of the packages with platform code (they run on Linux only).
# Windows: the command and every package build (serve says to use WSL;
# the bench harness reads /proc and getrusage, Linux only); not vetted,
# as the tests make FIFOs and the like.
crosscheck: ## the macOS (amd64, arm64) and Windows builds, go vet for macOS
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/agentbridge
	GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null ./cmd/agentbridge
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	for p in ./proc ./sources ./notify ./service ./cmd/agentbridge; do GOOS=darwin GOARCH=arm64 $(GO) test -c -o /dev/null $$p || exit 1; done
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null ./cmd/agentbridge
	GOOS=windows GOARCH=amd64 $(GO) build $$($(GO) list ./... | grep -v /cmd/agentbridge-bench)

install-check: ## a new user's install end to end in a temporary home (make install, service, hooks, make clean)
	.ci/install-check

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

bench: ## benchmarks and the end-to-end bench, each next to a baseline measured in the same run, the bridge with its history against it off (~7-9 min)
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

release-check: ## check the GoReleaser configuration
	$(GORELEASER) check

release-snapshot: ## release archives (linux, darwin × amd64, arm64), a .deb and checksums in dist/, published nowhere
	AGENTBRIDGE_COMMIT=$(COMMIT) $(GORELEASER) release --snapshot --clean

release: ## the release of the v0.x.y tag at HEAD (a clean tree) into dist/: what release-snapshot builds, published nowhere
	AGENTBRIDGE_COMMIT=$(COMMIT) $(GORELEASER) release --clean

release-one: ## release-snapshot for linux/amd64 only (the archive, the .deb and checksums; what CI builds)
	@mkdir -p bin
	sed -e 's/^    goos: .*/    goos: [linux]/' -e 's/^    goarch: .*/    goarch: [amd64]/' .goreleaser.yaml > bin/goreleaser-one.yaml
	AGENTBRIDGE_COMMIT=$(COMMIT) $(GORELEASER) release --snapshot --clean --config bin/goreleaser-one.yaml

clean:
	rm -rf bin artifacts dist
