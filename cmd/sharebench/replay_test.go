package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
)

// fastFixture writes a profile of two models with 10 and 20 ms steps (a fixture, not a
// measurement) and a four-job trace on one GPU.
func fastFixture(t *testing.T) (prof, tr string) {
	t.Helper()
	dir := t.TempDir()
	tab := &profile.Table{GPU: "test GPU", GPUMemBytes: 16 * cluster.GiB, Source: "test", DefaultRestartS: 1,
		Models: []profile.Model{
			{Name: "a", DefaultBatch: 32, Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: 0.01}, MemBytes: 4 * cluster.GiB}}},
			{Name: "b", DefaultBatch: 32, Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: 0.02}, MemBytes: 4 * cluster.GiB}}},
		}}
	for _, p := range [][3]any{{"a", "a", 1.3}, {"a", "b", 1.5}, {"b", "a", 1.2}, {"b", "b", 1.4}} {
		tab.Pairs = append(tab.Pairs, profile.Pair{A: profile.Config{Model: p[0].(string), Batch: 32, SubBatch: 32},
			B: profile.Config{Model: p[1].(string), Batch: 32, SubBatch: 32}, GPUs: 1, Mode: profile.Timeslice, Xi: p[2].(float64)})
	}
	prof = filepath.Join(dir, "profile.json")
	if err := tab.WriteFile(prof); err != nil {
		t.Fatal(err)
	}
	tr = filepath.Join(dir, "four.csv")
	csv := "job_id,submit_s,num_gpu,model,batch_size,iterations\n1,0,1,a,32,60\n2,0,1,b,32,30\n3,0.4,1,a,32,20\n4,0.8,1,b,32,25\n"
	if err := os.WriteFile(tr, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	return prof, tr
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplayVirtualEqualsSimulation: the virtual backend's replay is its simulation.
func TestReplayVirtualEqualsSimulation(t *testing.T) {
	dir, prof, tr := fixture(t, smallTrace)
	out := filepath.Join(dir, "r")
	stdout, _, err := cli(t, "replay", "--trace", tr, "--profile", prof, "--policy", "sjf-bsbf", "--backend", "virtual",
		"--gpus", "4", "--out", out, "--simulate", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "fidelity: the decisions agree") || !strings.Contains(stdout, "(0.0%)") {
		t.Errorf("stdout:\n%s", stdout)
	}
	for _, f := range []string{"decisions.jsonl", "jobs.csv"} {
		if !bytes.Equal(readFile(t, filepath.Join(out, f)), readFile(t, filepath.Join(out, "sim", f))) {
			t.Errorf("%s differs from the simulation's", f)
		}
	}
	// The replay directory is its own: a rerun replaces it, simulate refuses it.
	if _, _, err := cli(t, "replay", "--trace", tr, "--profile", prof, "--policy", "fifo", "--backend", "virtual", "--gpus", "4", "--out", out, "--quiet"); err != nil {
		t.Errorf("rerun into a replay directory: %v", err)
	}
	if _, _, err := cli(t, "simulate", "--trace", tr, "--profile", prof, "--policy", "fifo", "--cluster", "1x4", "--out", out); err == nil {
		t.Error("simulate wrote into a replay directory")
	}
}

// TestReplayFakeCLI replays four jobs with fake workloads (this test binary as sharebench,
// see TestMain), then reads the result with "sharebench fidelity".
func TestReplayFakeCLI(t *testing.T) {
	t.Setenv("SHAREBENCH_TEST_AS_MAIN", "1") // the fake workloads are this binary as sharebench
	prof, tr := fastFixture(t)
	out := filepath.Join(t.TempDir(), "r")
	stdout, stderr, err := cli(t, "replay", "--trace", tr, "--profile", prof, "--policy", "sjf-bsbf", "--backend", "fake",
		"--out", out, "--simulate", "--time-scale", "0.5")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "fidelity: average JCT") || !strings.Contains(stderr, `"event":"start"`) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	for _, f := range []string{"summary.json", "jobs.csv", "util.csv", "decisions.jsonl", "segments.csv", "attempts.csv", "replay.json",
		"steps/job1-a1.events.jsonl", "sim/summary.json", "fidelity/fidelity.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	md, _, err := cli(t, "fidelity", out, filepath.Join(out, "sim"), "--format", "md")
	if err != nil || !strings.Contains(md, "| average JCT (s) |") || !strings.Contains(md, "Per-job JCT") {
		t.Errorf("fidelity --format md: %v\n%s", err, md)
	}
	fout := filepath.Join(t.TempDir(), "fid")
	csv, _, err := cli(t, "fidelity", out, filepath.Join(out, "sim"), "--format", "csv", "--out", fout)
	if err != nil || !strings.HasPrefix(csv, "metric,simulated,measured,error (%)\n") {
		t.Errorf("fidelity --format csv: %v\n%s", err, csv)
	}
	if _, err := os.Stat(filepath.Join(fout, "fidelity-jct.svg")); err != nil {
		t.Error(err)
	}
}

func TestReplayBadInput(t *testing.T) {
	dir, prof, tr := fixture(t, smallTrace)
	base := []string{"replay", "--trace", tr, "--profile", prof, "--policy", "fifo", "--out", filepath.Join(dir, "r")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "nope", "--gpus", "4"}, `--backend "nope"`},
		{[]string{"--gpus", "0"}, "--gpus 0"},
		{[]string{"--gpus", "2", "--backend", "virtual"}, "needs 4 GPUs"},
		{[]string{"--gpus", "4", "--time-scale", "-1"}, "--time-scale"},
		{[]string{"--gpus", "4", "--backend", "container"}, "needs --image"},
		{[]string{"--gpus", "4", "--device", "tpu"}, "--device"},
		{[]string{"--gpus", "4", "--backend", "virtual", "--policy", "external:foo"}, "external policies"},
	} {
		_, _, err := cli(t, append(slices.Clone(base), c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	// A directory sharebench did not write is refused, and left alone.
	foreign := filepath.Join(dir, "mine")
	os.MkdirAll(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("keep"), 0o644)
	if _, _, err := cli(t, "replay", "--trace", tr, "--profile", prof, "--policy", "fifo", "--backend", "virtual", "--gpus", "4", "--out", foreign); err == nil {
		t.Error("replay wrote into a foreign directory")
	}
	if _, _, err := cli(t, "fidelity", dir); err == nil {
		t.Error("fidelity with one argument accepted")
	}
}
