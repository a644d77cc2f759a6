# plugkit-go. `make test` is what CI runs; `make bench` measures.
GO      ?= go
BIN     := bin
BENCH   ?= .
COUNT   ?= 1

.PHONY: all build test bench proto vet clean

all: build

build:
	$(GO) build ./...

test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) ./...

proto:
	bash shared/gen.sh

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
