package replay

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// cpuProfile is a fixture for tiny models on a CPU (made-up step times and slowdowns, not a
// measurement): it only has to let the policy share and order the jobs.
func cpuProfile(t *testing.T, models map[string]int) *profile.Table {
	t.Helper()
	tab := &profile.Table{GPU: "CPU (fixture)", GPUMemBytes: 16 * cluster.GiB, Source: "test fixture", DefaultRestartS: 3}
	var cfgs []profile.Config
	for _, name := range []string{"bert", "resnet18", "shufflenet_v2_x1_0", "vgg16"} {
		b := models[name]
		tab.Models = append(tab.Models, profile.Model{Name: name, DefaultBatch: b,
			Configs: []profile.Solo{{Batch: b, SubBatch: b, IterS: profile.GPUMap{1: 0.15}, MemBytes: cluster.GiB}}})
		cfgs = append(cfgs, profile.Config{Model: name, Batch: b, SubBatch: b})
	}
	for _, a := range cfgs {
		for _, b := range cfgs {
			tab.Pairs = append(tab.Pairs, profile.Pair{A: a, B: b, GPUs: 1, Mode: profile.Timeslice, Xi: 1.3})
		}
	}
	if err := tab.Normalize(); err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestTorchReplayCPU replays four jobs of tiny real models with train.py on the CPU through the
// local backend, sharing one "GPU", and compares the run with its simulation. It skips when
// the interpreter ($SHAREBENCH_PYTHON, else python3) cannot import torch, unless
// SHAREBENCH_REQUIRE_TORCH is set. No assertion depends on how fast the machine is.
func TestTorchReplayCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("real-workload replay skipped in -short mode")
	}
	python := os.Getenv(runner.EnvPython)
	if python == "" {
		python = "python3"
	}
	script, err := filepath.Abs(filepath.Join("..", "workloads", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	requireTorch(t, python)
	batches := map[string]int{"bert": 4, "resnet18": 8, "shufflenet_v2_x1_0": 8, "vgg16": 4}
	prof := cpuProfile(t, batches)
	mk := func(id int64, submit time.Duration, model string, iters int64) trace.Job {
		return trace.Job{ID: trace.JobID(id), Submit: submit, GPUs: 1, Model: model, Batch: batches[model], Iters: iters}
	}
	jobs := []trace.Job{mk(1, 0, "resnet18", 8), mk(2, 0, "bert", 10), mk(3, time.Second, "shufflenet_v2_x1_0", 6), mk(4, 2*time.Second, "vgg16", 6)}
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: prof.GPUMemBytes, MaxShare: 2}
	spec := Spec{Jobs: jobs, TraceName: "torch-cpu", Shape: shape, Policy: "sjf-bsbf", Profile: prof, ProfileName: "cpu-fixture.json",
		Restart: sim.RestartCost{Source: sim.RestartAuto}}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	oc, err := Execute(ctx, spec, Options{Out: out, Backend: "local", Simulate: true, NewWorld: func(steps string) (World, error) {
		return NewProcs(ProcConfig{Backend: &runner.Local{}, Program: []string{python, script}, Device: "cpu", Tiny: true, Threads: 1, Dir: steps})
	}})
	if err != nil {
		t.Fatal(err)
	}
	checkRunDir(t, out, jobs)
	if oc.Result.Summary.SharedJobs == 0 {
		t.Error("no job shared the CPU although the profile makes sharing pay")
	}
	t.Logf("torch CPU replay: %s wall; %s", time.Since(start).Round(time.Second), strings.Join(oc.Fidelity.Lines(), "; "))
}

func requireTorch(t *testing.T, python string) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("SHAREBENCH_REQUIRE_TORCH") != "" {
		skip = t.Fatalf
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, python, "-c", "import torch, torchvision").CombinedOutput(); err != nil {
		skip("%s cannot import torch and torchvision (set %s): %v: %s", python, runner.EnvPython, err, lastLines(string(out), 2))
	}
}
