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
	SHAREBENCH_PYTHON="$${SHAREBENCH_PYTHON:-$(PYTHON)}" $(GO) test -race -shuffle=on -timeout 30m ./...
	$(MAKE) test-workloads

test-stress: ## run "make test" 3 times in a row while two busy loops load both cores; prints the time of each pass
	@pids=""; trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	for i in 1 2; do ( while :; do :; done ) & pids="$$pids $$!"; done; \
	for n in 1 2 3; do \
	  start=$$SECONDS; echo "== test-stress: make test, pass $$n of 3, with two busy loops"; \
	  $(MAKE) --no-print-directory test || { echo "== test-stress: pass $$n failed after $$((SECONDS-start)) s"; exit 1; }; \
	  echo "== test-stress: pass $$n passed in $$((SECONDS-start)) s"; \
	done; echo "== test-stress: 3 of 3 passes in $$SECONDS s"

test-workloads: ## run the PyTorch workload scripts' tests (CPU; skip without torch)
	$(PYTHON) -m unittest discover -s workloads -p 'test_*.py'

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench: ## Go benchmarks: the engine (trace2 per policy, Muri-S and Muri-L on trace4), the blossom matching, the trace readers, an external policy's cost per decision, and "simulate" on trace2, the Philly table as E3 runs it and 10^4-10^6 synthetic jobs (long)
	$(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 90m ./sim/ ./trace/ ./policy/external/ ./policy/schedulers/ ./cmd/sharebench/

pgo: ## regenerate cmd/sharebench/default.pgo, the CPU profile "go build" optimizes sharebench with: trace2 per policy, the Philly table as E3 runs it, 10^5 synthetic jobs at load 0.9 (a few minutes)
	mkdir -p bin
	$(GO) test -run '^$$' -bench 'Trace2$$|PhillyE3$$|Synthetic$$/jobs=100000/load=0.9' -benchtime 2x -count 1 \
	  -outputdir $(CURDIR)/bin -cpuprofile pgo.prof ./cmd/sharebench/
	mv bin/pgo.prof cmd/sharebench/default.pgo
	rm -f bin/sharebench.test

fuzz: ## run every fuzz target for FUZZTIME (default 30s)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

clean: ## remove bin/ and runs/
	rm -rf bin runs

PYTHON ?= /usr/bin/python3

.PHONY: help build build-nocgo test test-stress test-workloads lint bench pgo fuzz clean

-include Makefile.runner
-include Makefile.reproduce
-include Makefile.scaleout
