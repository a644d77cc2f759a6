# plugkit-go. `make run` starts the sample deployment; `make test` is what CI runs.
GO      ?= go
BIN     := bin
BENCH   ?= .
COUNT   ?= 1
# The linters, pinned; `go run` fetches them from the module proxy.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The Go modules of the repository: the host's, and the plugin SDK's.
MODULES := . shared

.PHONY: all build plugins run test attack bench bench-peers proto vet lint clean image sandbox-reset

all: build

build: plugins run/sandbox
	$(GO) build -o $(BIN)/host ./cmd/host

# The sample's working folder, copied from the tracked template when it is
# missing: the walkthrough writes and deletes files there, never in tracked
# ones. `make sandbox-reset` starts it over.
run/sandbox:
	@mkdir -p run
	cp -R sandbox.example run/sandbox

# Empties run/sandbox and copies the template in again, keeping the folder
# itself: a running files plugin holds it open, and its sandbox allows that
# folder, not a new one made in its place (which needs `host reload files`).
sandbox-reset:
	@mkdir -p run/sandbox
	find run/sandbox -mindepth 1 -delete
	cp -R sandbox.example/. run/sandbox/

# Every main package directly under plugins/ is a plugin, built as
# bin/plugins/NAME: a new plugins/hello needs no edit here.
plugins:
	@mkdir -p $(BIN)/plugins
	@for d in plugins/*/; do \
		p=$$(basename "$$d"); \
		[ "$$($(GO) list -f '{{.Name}}' "./plugins/$$p" 2>/dev/null)" = main ] || continue; \
		echo "$(GO) build -o $(BIN)/plugins/$$p ./plugins/$$p"; \
		$(GO) build -o "$(BIN)/plugins/$$p" "./plugins/$$p" || exit 1; \
	done

# Builds everything and runs config.hcl in the foreground; use the other
# `bin/host` commands from a second terminal.
run: build
	./$(BIN)/host run -c config.hcl

# The container image, with no base image from a registry: the host and
# every plugin built static, and the sample deployment under /plugkit, as a
# tarball for `podman load -i` or `docker load -i`.
image:
	$(GO) run ./cmd/mkimage -o $(BIN)/plugkit-image.tar

# Through testlines: go test's lines, each package's as soon as it ends
# (plain go test holds them back in the order of the package list).
# The plugin SDK (shared/) is a Go module of its own, which the root's
# ./... does not descend into: every target that lists packages runs in
# both modules (MODULES), and `make test` runs both even when one fails.
test: vet lint
	@st=0; for m in $(MODULES); do \
		echo "$(GO) test -C $$m -json -race -count=1 -timeout 30m ./..."; \
		$(GO) run ./internal/testkit/testlines $(GO) test -C $$m -json -race -count=1 -timeout 30m ./... || st=1; \
	done; exit $$st

# Re-runs the attack scenarios (tests named TestAttack...): bounded,
# loopback only, each stops by itself.
attack:
	@for m in $(MODULES); do $(GO) test -C $$m -race -count=1 -run Attack ./... || exit 1; done

bench:
	@for m in $(MODULES); do $(GO) test -C $$m -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) ./... || exit 1; done

# plugkit beside the MCP proxies people use (npm's supergateway and
# mcp-proxy) and the upstream served directly: installs the pinned peers in
# bench/.peers and prints one table (docs/performance.md). Not run by CI.
bench-peers:
	./bench/peers.sh

proto:
	bash shared/gen.sh

vet:
	@for m in $(MODULES); do echo "$(GO) vet -C $$m ./..."; $(GO) vet -C $$m ./... || exit 1; done

# staticcheck in both modules (a finding that is right to keep carries a
# //lint:ignore with its reason), then the dead-code check: a function no
# binary, test or example of either module reaches fails it.
lint:
	@for m in $(MODULES); do echo "staticcheck ($$m)"; (cd $$m && $(GO) run $(STATICCHECK) ./...) || exit 1; done
	GO=$(GO) ./.ci/deadcode

clean:
	rm -rf $(BIN) run
