package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/trace"
)

// TestSimulatePhillyAsE3 requires simulate, given the Philly job table and a profile, to run
// the jobs E3 runs (the authors' models at the profile's step times), not the table's durations:
// the same jobs as E3's inputs, and the GPU-seconds E3's committed run.json records.
func TestSimulatePhillyAsE3(t *testing.T) {
	const id = "E3/philly/sjf-bsbf/seed-2"
	r, err := bench.Find(bench.Plan("paper"), id)
	if err != nil {
		t.Fatal(err)
	}
	env, err := bench.FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	in := bench.NewInputs(env)
	mm, err := in.ModelMap(r.Profile.ModelMap)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := in.Profile(r.Profile)
	if err != nil {
		t.Fatal(err)
	}
	shape := r.Cluster.Shape()
	want, err := in.Jobs(r.Trace, r.Seed, prof, mm, shape.GPUs(), shape.GPUMemBytes)
	if err != nil {
		t.Fatal(err)
	}

	root := filepath.Join("..", "..")
	var got []trace.Job
	// Named, the table is read after the profile; detected, while the profile is decoded.
	for _, f := range []trace.Format{trace.FormatPhilly, trace.FormatAuto} {
		_, _, got, err = loadSimInputs(filepath.Join(root, "data", "traces", "pollux-philly-jobs", "philly.csv"), f,
			filepath.Join(root, "results", "profiles", "gavel-v100.json"), filepath.Join(root, "bench", "modelmaps", "gavel.csv"), r.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("format %v: simulate reads %d jobs, E3 runs %d", f, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("format %v: job %d: simulate reads %+v, E3 runs %+v", f, i, got[i], want[i])
			}
		}
	}

	stats, err := bench.Stats(got, prof, mm, shape.GPUMemBytes)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "results", "paper", filepath.FromSlash(id), "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		TraceStats struct {
			GPUSeconds float64 `json:"gpu_seconds"`
		} `json:"trace_stats"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if stats.GPUSeconds != rec.TraceStats.GPUSeconds {
		t.Errorf("simulate's jobs carry %.6g GPU-seconds, E3's run.json %.6g", stats.GPUSeconds, rec.TraceStats.GPUSeconds)
	}
}

// TestLoadSimInputsErrorOrder requires the profile's error before the trace's when both fail,
// though the trace is read while the profile is decoded.
func TestLoadSimInputsErrorOrder(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.json")
	if err := os.WriteFile(prof, []byte("{\"format\": 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := loadSimInputs(filepath.Join(dir, "missing.csv"), trace.FormatAuto, prof, "", 1)
	if err == nil || !strings.Contains(err.Error(), "p.json") {
		t.Fatalf("err = %v, want the profile's error", err)
	}
	good := filepath.Join("..", "..", "results", "profiles", "gavel-v100.json")
	_, _, _, err = loadSimInputs(filepath.Join(dir, "missing.csv"), trace.FormatAuto, good, filepath.Join(dir, "missing-map.csv"), 1)
	if err == nil || !strings.Contains(err.Error(), "missing-map.csv") {
		t.Fatalf("err = %v, want the model map's error", err)
	}
	_, _, _, err = loadSimInputs(filepath.Join(dir, "missing.csv"), trace.FormatAuto, good, "", 1)
	if err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Fatalf("err = %v, want the trace's error", err)
	}
}
