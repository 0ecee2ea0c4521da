package replay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/results"
	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// envTestMode makes the test binary the fake workload of the fake backend.
const envTestMode = "SHAREBENCH_TEST_MODE"

func TestMain(m *testing.M) {
	if os.Getenv(envTestMode) == "fake-workload" {
		os.Exit(runner.FakeWorkload(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}

// fakeWorld returns a process world of fake workloads (this test binary) that step as prof says.
func fakeWorld(t *testing.T, prof *profile.Table, jobs []trace.Job) func(string) (World, error) {
	return func(steps string) (World, error) {
		cfg := FakeConfig(prof, nil, jobs, profile.Timeslice)
		be := &runner.Fake{Command: []string{os.Args[0]}, Env: map[string]string{envTestMode: "fake-workload"}, Config: cfg}
		return NewProcs(ProcConfig{Backend: be, Device: "cpu", Dir: steps, Grace: 20 * time.Second})
	}
}

func job(id int64, submit time.Duration, model string, iters int64) trace.Job {
	for _, m := range fixtureModels {
		if m.name == model {
			return trace.Job{ID: trace.JobID(id), Submit: submit, GPUs: 1, Model: model, Batch: m.batch, Iters: iters,
				IterTime: profile.Seconds(m.iterMS / 1000)}
		}
	}
	panic(model)
}

// TestFakeReplayEndToEnd replays five jobs on one shared "GPU" with real fake-workload
// processes, simulates the same inputs and compares them. It asserts what a loaded machine
// cannot change: every job ran exactly its trace iterations, the logs hold every step, the
// decisions at time 0 (taken on identical states) equal the simulation's, and every output
// exists; never a duration.
func TestFakeReplayEndToEnd(t *testing.T) {
	prof := fixtureProfile(t)
	jobs := []trace.Job{
		job(1, 0, "vgg16", 30), job(2, 0, "bert", 40), job(3, 0, "a2c", 12),
		job(4, 800*time.Millisecond, "vgg19", 25), job(5, 1500*time.Millisecond, "dqn", 8),
	}
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: prof.GPUMemBytes, MaxShare: 2}
	spec := Spec{Jobs: jobs, TraceName: "five.csv", Shape: shape, Policy: "sjf-bsbf", Profile: prof, ProfileName: "fixture.json",
		Restart: sim.RestartCost{Source: sim.RestartAuto}}
	out := filepath.Join(t.TempDir(), "run")
	if d := os.Getenv("REPLAY_KEEP"); d != "" {
		out = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	oc, err := Execute(ctx, spec, Options{Out: out, NewWorld: fakeWorld(t, prof, jobs), Backend: "fake", Simulate: true, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	checkRunDir(t, out, jobs)
	if oc.Fidelity == nil || len(oc.Fidelity.Jobs) != len(jobs) {
		t.Fatalf("fidelity report: %+v", oc.Fidelity)
	}
	for _, name := range []string{"fidelity.md", "fidelity.csv", "fidelity-jobs.csv", "fidelity.tex", "fidelity-jct.svg", "fidelity-jct-cdf.svg"} {
		if _, err := os.Stat(filepath.Join(out, FidelityDir, name)); err != nil {
			t.Error(err)
		}
	}
	// The first decisions are taken at time 0 on the same state in both runs.
	realLog, _ := results.ReadDecisions(out)
	simLog, _ := results.ReadDecisions(filepath.Join(out, SimDir))
	atZero := func(log []results.Decision) []string {
		var s []string
		for _, d := range log {
			if d.TS == 0 && d.Event == "start" {
				s = append(s, fmt.Sprint(d.Job, d.GPUs, d.SubBatch, d.Partners))
			}
		}
		return s
	}
	if a, b := atZero(realLog), atZero(simLog); len(a) == 0 || strings.Join(a, ";") != strings.Join(b, ";") {
		t.Errorf("starts at time 0: replay %v, simulation %v", a, b)
	}
	if !bytes.Contains(progress.Bytes(), []byte(`"event":"start"`)) {
		t.Errorf("no progress shown:\n%s", progress.String())
	}
	t.Logf("fake replay: %s", strings.Join(oc.Fidelity.Lines(), "\n"))
}

// TestFakeReplayPreemption replays a long job that a short one preempts (SRTF on one GPU, no
// sharing): the long job must run again from its last completed iteration and complete exactly
// its iterations over its two launches.
func TestFakeReplayPreemption(t *testing.T) {
	prof := fixtureProfile(t)
	jobs := []trace.Job{job(1, 0, "bert", 150), job(2, 500*time.Millisecond, "vgg16", 10)}
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: prof.GPUMemBytes, MaxShare: 1}
	spec := Spec{Jobs: jobs, TraceName: "two.csv", Shape: shape, Policy: "sjf", Profile: prof, ProfileName: "fixture.json"}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	oc, err := Execute(ctx, spec, Options{Out: out, NewWorld: fakeWorld(t, prof, jobs), Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	checkRunDir(t, out, jobs)
	if oc.Result.Summary.Preemptions != 1 {
		t.Fatalf("preemptions: %d, want 1", oc.Result.Summary.Preemptions)
	}
	atts, err := results.ReadAttempts(out)
	if err != nil {
		t.Fatal(err)
	}
	var long []results.AttemptRow
	for _, a := range atts {
		if a.JobID == "1" {
			long = append(long, a)
		}
	}
	if len(long) != 2 || !long[0].Stopped || long[1].Stopped || long[1].Iterations != 150-long[0].Steps {
		t.Fatalf("the preempted job's launches: %+v", long)
	}
	if oc.Result.Summary.RestartCost != "measured" {
		t.Errorf("restart cost %q, want measured", oc.Result.Summary.RestartCost)
	}
}

// checkRunDir checks a finished replay directory: the simulator's files with every job, and
// launches whose steps add up to each job's iterations, each step in the raw logs.
func checkRunDir(t *testing.T, out string, jobs []trace.Job) {
	t.Helper()
	run, err := results.LoadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Jobs) != len(jobs) {
		t.Fatalf("jobs.csv has %d jobs, want %d", len(run.Jobs), len(jobs))
	}
	atts, err := results.ReadAttempts(out)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	for _, a := range atts {
		steps[a.JobID] += a.Steps
		n := countLines(t, filepath.Join(out, StepsDir, fmt.Sprintf("job%s-a%d.events.jsonl", a.JobID, a.Attempt)), `"event":"step"`)
		if n != a.Steps {
			t.Errorf("job %s attempt %d: %d step lines, %d steps", a.JobID, a.Attempt, n, a.Steps)
		}
	}
	for _, j := range jobs {
		if got := steps[fmt.Sprint(j.ID)]; got != int(j.Iters) {
			t.Errorf("job %d ran %d iterations, want %d", j.ID, got, j.Iters)
		}
	}
	segs, err := results.ReadSegments(out)
	if err != nil || len(segs) == 0 {
		t.Errorf("segments: %d rows, %v", len(segs), err)
	}
	if _, err := os.Stat(filepath.Join(out, ManifestFile)); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(out, FailureFile)); err == nil {
		t.Error("failure.json written for a replay that succeeded")
	}
}

func countLines(t *testing.T, path, substr string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			n++
		}
	}
	return n
}

// TestFakeReplayFailures: a workload that crashes, or hangs before its first step, ends the
// replay with an error that names the job, and the run directory keeps the logs so far with
// failure.json and no summary.
func TestFakeReplayFailures(t *testing.T) {
	prof := fixtureProfile(t)
	jobs := []trace.Job{job(1, 0, "bert", 20), job(2, 0, "vgg16", 10)}
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: prof.GPUMemBytes, MaxShare: 1}
	for _, c := range []struct{ inject, want string }{{"crash@3", "InjectedCrash"}, {"hang", "no first step within 1s"}} {
		t.Run(c.inject, func(t *testing.T) {
			spec := Spec{Jobs: jobs, TraceName: "two.csv", Shape: shape, Policy: "fifo", Profile: prof}
			out := filepath.Join(t.TempDir(), "run")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			_, err := Execute(ctx, spec, Options{Out: out, Backend: "fake", NewWorld: func(steps string) (World, error) {
				be := &runner.Fake{Command: []string{os.Args[0]}, Env: map[string]string{envTestMode: "fake-workload"}}
				return NewProcs(ProcConfig{Backend: be, Device: "cpu", Dir: steps, Args: []string{"--inject", c.inject}, Ready: time.Second, Grace: time.Second})
			}})
			if err == nil || !strings.Contains(err.Error(), "job 1") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one about job 1 with %q", err, c.want)
			}
			for _, f := range []string{FailureFile, "steps/job1-a1.log", "decisions.jsonl", "attempts.csv"} {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Error(err)
				}
			}
			if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
				t.Error("a failed replay wrote summary.json")
			}
		})
	}
}
