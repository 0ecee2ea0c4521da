package replay

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/trace"
)

func TestSrunArgv(t *testing.T) {
	s := &Srun{Args: []string{"--cpus-per-task=4"}}
	got := s.Argv(runner.Spec{Name: "sbr-job1-a1-x", Program: []string{"python3", "train.py"}, Args: []string{"--model", "vgg16"}, GPUs: []string{"2", "3"}})
	want := []string{"srun", "--overlap", "--nodes=1", "--ntasks=1", "--kill-on-bad-exit=1", "--export=ALL", "--job-name=sbr-job1-a1-x",
		"--cpus-per-task=4", "--", "env", "CUDA_VISIBLE_DEVICES=2,3", "python3", "train.py", "--model", "vgg16"}
	if !slices.Equal(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
	s.Getenv = func(string) string { return "" }
	if err := s.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "SLURM_JOB_ID") {
		t.Errorf("probe outside an allocation: %v", err)
	}
}

// TestSrunReplay replays two jobs through a stand-in srun that runs the command after "--",
// as srun runs a job step: the workloads (the fake, from this test binary) see the process
// protocol through it and finish their iterations.
func TestSrunReplay(t *testing.T) {
	dir := t.TempDir()
	srun := filepath.Join(dir, "srun")
	script := "#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift\nexec \"$@\"\n"
	if err := os.WriteFile(srun, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	prof := fixtureProfile(t)
	jobs := []trace.Job{job(1, 0, "bert", 12), job(2, 300*time.Millisecond, "vgg16", 10)}
	spec := Spec{Jobs: jobs, TraceName: "two.csv", Shape: cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: prof.GPUMemBytes, MaxShare: 2},
		Policy: "fifo", Profile: prof}
	out := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	be := &Srun{Srun: srun, Getenv: func(k string) string { return map[string]string{"SLURM_JOB_ID": "42"}[k] }}
	_, err := Execute(ctx, spec, Options{Out: out, Backend: "slurm", NewWorld: func(steps string) (World, error) {
		return NewProcs(ProcConfig{Backend: be, Program: []string{os.Args[0]}, Env: map[string]string{envTestMode: "fake-workload"},
			Device: "cpu", Dir: steps})
	}})
	if err != nil {
		t.Fatal(err)
	}
	checkRunDir(t, out, jobs)
}

func TestDeviceList(t *testing.T) {
	if d, err := DeviceList(nil, 2, ""); err != nil || !slices.Equal(d, []string{"0", "1"}) {
		t.Errorf("default devices: %v %v", d, err)
	}
	if d, err := DeviceList(nil, 2, "4,6"); err != nil || !slices.Equal(d, []string{"4", "6"}) {
		t.Errorf("within CUDA_VISIBLE_DEVICES: %v %v", d, err)
	}
	if _, err := DeviceList([]string{"0"}, 2, ""); err == nil {
		t.Error("one id for two GPUs accepted")
	}
	if _, err := DeviceList(nil, 3, "4,6"); err == nil {
		t.Error("three GPUs out of two visible accepted")
	}
}
