# sharebench — run "make help" for the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin/sharebench
FUZZTIME ?= 30s
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## build bin/sharebench
	$(GO) build -o $(BIN) ./cmd/sharebench

build-nocgo: ## build a static bin/sharebench-nocgo for GPU hosts with an unknown libc
	CGO_ENABLED=0 $(GO) build -o bin/sharebench-nocgo ./cmd/sharebench

test: ## run every test: Go (race detector, shuffled) and the Python workload tests
	$(GO) test -race -shuffle=on -timeout 30m ./...
	$(MAKE) test-workloads

test-workloads: ## run the PyTorch workload scripts' tests (CPU; skip without torch)
	$(PYTHON) -m unittest discover -s workloads -p 'test_*.py'

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench: ## Go benchmarks: the engine, the trace readers, and "simulate" on trace2, the Philly table as E3 runs it and 10^4-10^6 synthetic jobs (long)
	$(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 90m ./sim/ ./trace/ ./cmd/sharebench/

fuzz: ## run every fuzz target for FUZZTIME (default 30s)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

clean: ## remove bin/ and runs/
	rm -rf bin runs

PYTHON ?= /usr/bin/python3

.PHONY: help build build-nocgo test test-workloads lint bench fuzz clean

-include Makefile.runner
-include Makefile.reproduce
-include Makefile.scaleout
