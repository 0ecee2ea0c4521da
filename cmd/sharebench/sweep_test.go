package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestSweepEndToEnd runs a tiny spec with paths relative to the spec file: a grid of two
// memory sizes × two policies × two seeds, then again (every run is skipped), then with
// --rerun; the tables and figures the spec asks for are written.
func TestSweepEndToEnd(t *testing.T) {
	dir, _, _ := fixture(t, smallTrace)
	spec := `name: tiny
title: a tiny sweep
profiles:
  test: {file: profile.json}
traces:
  small: {file: trace.csv}
cluster: {nodes: 1, gpus_per_node: 4, gpu_mem_gib: 16}
grid:
  trace: [small]
  gpu_mem_gib: [8, 16]
setting_name: "small-mem{gpu_mem_gib}"
policies: [sjf-ffs, sjf-bsbf]
seeds: [1, 2]
baselines: [sjf-ffs]
analysis: {bars: true, curve_x: gpu_mem_gib}
`
	specPath := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, err := cli(t, "sweep", specPath, "--out", out, "--jobs", "2")
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "8 runs of tiny") {
		t.Errorf("stdout: %s", stdout)
	}
	for _, f := range []string{"tiny/small-mem8/sjf-bsbf/seed-2/summary.json", "tiny/tables/summary.md", "tiny/tables/summary.csv",
		"tiny/figures/avg-jct-vs-sjf-ffs.svg", "README.md", ".sharebench"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	summary, err := os.ReadFile(filepath.Join(out, "tiny", "tables", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, err = cli(t, "sweep", specPath, "--out", out)
	if err != nil || !strings.Contains(stderr, "8 of 8 runs already done") {
		t.Fatalf("resumed sweep: %v\n%s", err, stderr)
	}
	_, stderr, err = cli(t, "sweep", specPath, "--out", out, "--rerun")
	if err != nil || strings.Contains(stderr, "already done") {
		t.Fatalf("rerun: %v\n%s", err, stderr)
	}
	again, _ := os.ReadFile(filepath.Join(out, "tiny", "tables", "summary.md"))
	if string(again) != string(summary) {
		t.Error("a rerun changed the tables")
	}
	if _, _, err := cli(t, "sweep", specPath, "--out", dir); err == nil {
		t.Error("sweep wrote into the directory holding its spec")
	}
	stdout, _, err = cli(t, "sweep", specPath, "--list")
	if err != nil || len(strings.Split(strings.TrimSpace(stdout), "\n")) != 8 {
		t.Errorf("--list: %v\n%s", err, stdout)
	}
}

// TestSweepOutSafety: sweep refuses a directory it did not write (keeping what is there) and,
// even with --force, the directory holding its inputs.
func TestSweepOutSafety(t *testing.T) {
	dir, _, _ := fixture(t, smallTrace)
	spec := `name: one
profiles:
  test: {file: profile.json}
traces:
  small: {file: trace.csv}
cluster: {nodes: 1, gpus_per_node: 4, gpu_mem_gib: 16}
grid: {trace: [small]}
policies: [sjf]
seeds: [1]
`
	specPath := filepath.Join(dir, "one.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := t.TempDir()
	mine := filepath.Join(foreign, "thesis.tex")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cli(t, "sweep", specPath, "--out", foreign); err == nil || !strings.Contains(err.Error(), "sharebench did not write") {
		t.Errorf("foreign --out: err = %v", err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine" {
		t.Errorf("the foreign file was touched: %q, %v", b, err)
	}
	if _, _, err := cli(t, "sweep", specPath, "--out", dir, "--force"); err == nil || !strings.Contains(err.Error(), "holds the input") {
		t.Errorf("--out holding the spec, --force: err = %v", err)
	}
	if !exists(specPath) || !exists(filepath.Join(dir, "trace.csv")) {
		t.Error("an input was removed")
	}
}

// TestBatchGC: a sweep collects at GOGC=400 under a 2 GiB soft limit unless the user set GOGC or
// GOMEMLIMIT, and puts the settings back when it ends.
func TestBatchGC(t *testing.T) {
	read := func() (int, int64) {
		gc := debug.SetGCPercent(-1)
		debug.SetGCPercent(gc)
		return gc, debug.SetMemoryLimit(-1)
	}
	gc0, lim0 := read()
	for _, c := range []struct {
		gogc, memlimit string
		gc             int
		limit          int64
	}{
		{"", "", 400, 2 << 30},
		{"150", "", gc0, 2 << 30},
		{"", "1GiB", 400, lim0},
	} {
		t.Setenv("GOGC", c.gogc)
		t.Setenv("GOMEMLIMIT", c.memlimit)
		restore := batchGC()
		gc, limit := read()
		restore()
		if gc != c.gc || limit != c.limit {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: GOGC %d, limit %d; want %d, %d", c.gogc, c.memlimit, gc, limit, c.gc, c.limit)
		}
		if gc, limit := read(); gc != gc0 || limit != lim0 {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: settings not restored: %d, %d", c.gogc, c.memlimit, gc, limit)
		}
	}
}

// TestSmallRunGC: simulate collects at GOGC=400 unless the user set GOGC, and goes back to the
// default; docs/simulator.md gives its bound on the trace's size.
func TestSmallRunGC(t *testing.T) {
	read := func() int {
		gc := debug.SetGCPercent(-1)
		debug.SetGCPercent(gc)
		return gc
	}
	gc0 := read()
	defer debug.SetGCPercent(gc0)
	for _, c := range []struct {
		gogc          string
		during, after int
	}{{"", 400, 100}, {"150", gc0, gc0}} {
		t.Setenv("GOGC", c.gogc)
		restore := smallRunGC()
		during := read()
		restore()
		if after := read(); during != c.during || after != c.after {
			t.Errorf("GOGC=%q: GOGC %d during the run and %d after, want %d and %d", c.gogc, during, after, c.during, c.after)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "simulator.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := strconv.Itoa(smallRunJobs)
	for i := len(n) - 3; i > 0; i -= 3 {
		n = n[:i] + "," + n[i:]
	}
	if want := "at most " + n + " jobs (`smallRunJobs`)"; !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), want) {
		t.Errorf("docs/simulator.md does not say %q", want)
	}
}
