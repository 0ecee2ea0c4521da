package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteTaskCampaignRoundTrip(t *testing.T) {
	t.Parallel()
	// Zero warm-up seconds and window trim differ from DefaultCampaign: a copy that dropped
	// them would change every cell ID.
	c := mustParse(t, `
name: rt
backend: fake
warmup: {steps: 0, seconds: 0}
window: {min_steps: 4, min_seconds: 0, floor_steps: 2, trim: 0, max_seconds: 9}
models: [{name: a, batches: [64, 32], sub_batches: [16]}, {name: bert, batches: [8], seq_len: 64, args: [--x, "y z"]}]
pair_grid: matched
workload: {env: {A: "1"}, args: [--flag]}
fake: {step_ms: {a: 3}, slowdown: {a+bert: 1.4}}
slurm: {partition: gpu, poll: 2s}
kubernetes: {namespace: lab}
`)
	path := filepath.Join(t.TempDir(), "campaign.json")
	if err := WriteTaskCampaign(path, c); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCampaign(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c.Cells(), back.Cells()); d != "" {
		t.Errorf("cells differ after the round trip:\n%s", d)
	}
	if back.Slurm.Partition != "gpu" || back.Slurm.Poll.D() != 2*time.Second || back.Kubernetes.Namespace != "lab" {
		t.Errorf("engine sections lost: %+v %+v", back.Slurm, back.Kubernetes)
	}
}

func TestCampaignEngineValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"slurm: {partition: \"gpu a\"}", "slurm.partition"},
		{"slurm: {account: -x}", "slurm.account"},
		{"slurm: {extra_args: [qos]}", "slurm.extra_args[0]"},
		{"slurm: {sharebench: bin/sharebench}", "slurm.sharebench"},
		{"kubernetes: {namespace: Lab}", "kubernetes.namespace"},
		{"kubernetes: {image: \"a b\"}", "kubernetes.image"},
		{"kubernetes: {memory: lots}", "kubernetes.memory"},
	} {
		_, err := ParseCampaign([]byte("name: v\nmodels: [{name: a, batches: [8]}]\n"+tc.yaml+"\n"), "v.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
}

// scriptedDispatcher answers from the test: Harvest returns harvest, Dispatch returns a
// result per cell made by result and records the cells of each call.
type scriptedDispatcher struct {
	harvest []Result
	result  func(Cell) Result
	calls   [][]int
}

func (s *scriptedDispatcher) Name() string                { return "scripted" }
func (s *scriptedDispatcher) Probe(context.Context) error { return nil }
func (s *scriptedDispatcher) Harvest(context.Context, Work) ([]Result, error) {
	return s.harvest, nil
}

func (s *scriptedDispatcher) Dispatch(_ context.Context, w Work, sink func(Result) error) error {
	var idx []int
	for _, c := range w.Cells {
		idx = append(idx, c.Index)
		w.Track([]string{"job"}, []TaskStatus{{Index: c.Index, CellID: c.ID, Task: "job_" + c.ID[:4], State: "COMPLETED"}})
		if err := sink(s.result(c)); err != nil {
			return err
		}
	}
	s.calls = append(s.calls, idx)
	return nil
}

// scriptedResult is a record of cell with status; ok records carry the step times a valid
// record has (10 ms alone, 15 ms in a pair).
func scriptedResult(c *Campaign, cell Cell, status Status, at int64) Result {
	r := Result{Record: RecordCell, Version: ResultVersion, Campaign: c.Name, Cell: cell, Status: status, Mode: cellMode(cell),
		Backend: c.Backend, Started: time.Unix(at, 0).UTC(), Finished: time.Unix(at+1, 0).UTC(), Repeats: 1}
	if status != StatusOK {
		return r
	}
	est := func(ms float64) *Estimate {
		return &Estimate{Median: ms, CI: [2]float64{ms, ms}, Method: CINone, N: 1, Values: []float64{ms}}
	}
	r.A = &Side{Member: cell.A, SoloMs: est(10)}
	if cell.B != nil {
		r.A = &Side{Member: cell.A, PairMs: est(15)}
		r.B = &Side{Member: *cell.B, PairMs: est(15)}
	}
	return r
}

// TestDispatchJournal checks the journal rules Dispatch shares with Run: done cells are not
// dispatched, a harvested record already in the journal is not appended twice, attempts are
// numbered, failed cells rerun only with RetryFailed, and with reuse_solo pair cells go after
// the solo cells.
func TestDispatchJournal(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
name: dj
backend: fake
reuse_solo: true
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}]
pairs: [[a, b]]
`)
	cells := c.Cells() // a, b, c, a+b
	out := t.TempDir()
	j, err := OpenJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	old := scriptedResult(c, cells[0], StatusOK, 10)
	old.Attempt = 1
	if err := j.Append(old); err != nil {
		t.Fatal(err)
	}
	j.Close()
	clock := int64(100)
	d := &scriptedDispatcher{
		harvest: []Result{old, scriptedResult(c, cells[1], StatusOK, 20)}, // old is in the journal already
		result: func(cell Cell) Result {
			clock += 10
			if cell.Index == 2 {
				return scriptedResult(c, cell, StatusFailed, clock)
			}
			return scriptedResult(c, cell, StatusOK, clock)
		},
	}
	sum, err := Dispatch(context.Background(), c, DispatchOptions{OutDir: out, Dispatcher: d})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([][]int{{2}, {3}}, d.calls); d != "" {
		t.Errorf("dispatched cells per phase (-want +got):\n%s", d)
	}
	if sum.Ran != 3 || sum.Skipped != 2 || sum.Cells.OK != 3 || sum.Cells.Failed != 1 {
		t.Errorf("summary %+v", sum)
	}
	// Second dispatch: nothing to do; with RetryFailed, the failed cell again (attempt 2).
	d.calls = nil
	if _, err := Dispatch(context.Background(), c, DispatchOptions{OutDir: out, Dispatcher: d}); err != nil {
		t.Fatal(err)
	}
	d.harvest = nil
	if _, err := Dispatch(context.Background(), c, DispatchOptions{OutDir: out, Dispatcher: d, RetryFailed: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]int{{2}}, d.calls); diff != "" {
		t.Errorf("redispatched cells (-want +got):\n%s", diff)
	}
	records, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range records {
		got = append(got, r.Cell.Label+" "+string(r.Status)+" "+time.Duration(r.Attempt).String())
	}
	want := []string{"a/8/8 ok 1ns", "b/8/8 ok 1ns", "c/8/8 failed 1ns", "a/8/8+b/8/8 ok 1ns", "c/8/8 failed 2ns"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	for _, f := range []string{ProfileFile, CellsFile, ManifestFile, DispatchFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	var m Manifest
	b, _ := os.ReadFile(filepath.Join(out, ManifestFile))
	if err := json.Unmarshal(b, &m); err != nil || m.Backend != "scripted/fake" {
		t.Errorf("manifest backend %q (%v)", m.Backend, err)
	}
}

func TestCampaignStatus(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
name: st
backend: fake
solo_only: true
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}, {name: d, batches: [8]}, {name: e, batches: [8]}, {name: f, batches: [8]}]
`)
	cells := c.Cells()
	out := t.TempDir()
	j, err := OpenJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	ok := scriptedResult(c, cells[0], StatusOK, 1)
	ok.Env.Hostname = "node7"
	failed := scriptedResult(c, cells[1], StatusFailed, 2)
	failed.Reason = "slurm: task 5_1 TIMEOUT: the task reached its time limit (--time)"
	retried := scriptedResult(c, cells[4], StatusFailed, 3)
	for _, r := range []Result{ok, failed, retried} {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	state := DispatchState{Engine: EngineSlurm, Campaign: c.Name, Active: true, Jobs: []string{"5", "6"}, Tasks: []TaskStatus{
		{Index: 0, CellID: cells[0].ID, Task: "5_0", State: "COMPLETED"},
		{Index: 1, CellID: cells[1].ID, Task: "5_1", State: "TIMEOUT"},
		{Index: 2, CellID: cells[2].ID, Task: "5_2", State: "RUNNING"},
		{Index: 4, CellID: cells[4].ID, Task: "6_0", State: "PENDING", Reason: "Resources"},
	}}
	b, _ := marshalIndent(state)
	if err := os.WriteFile(filepath.Join(out, DispatchFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "cells", cells[3].Dir()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, SlurmDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteTaskCampaign(filepath.Join(out, SlurmDir, "campaign.json"), c); err != nil {
		t.Fatal(err)
	}
	rep, err := CampaignStatus(out, nil) // the campaign comes from slurm/campaign.json
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rep.Cells {
		got = append(got, strings.TrimSpace(s.Status+" "+s.Where+" "+s.Reason))
	}
	want := []string{
		"ok slurm 5_0 node7",
		"failed slurm 5_1 " + failed.Reason,
		"running slurm 5_2",
		"started",
		"queued slurm 6_0 Resources",
		"pending",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	wantCounts := StatusCounts{Total: 6, OK: 1, Failed: 1, Running: 1, Started: 1, Queued: 1, Pending: 1}
	if rep.Counts != wantCounts || rep.Campaign != "st" || !rep.EngineActive {
		t.Errorf("counts %+v, campaign %q", rep.Counts, rep.Campaign)
	}
}

func TestLastResult(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "name: lr\nmodels: [{name: a, batches: [8]}]\n")
	r := scriptedResult(c, c.Cells()[0], StatusOK, 1)
	line, _ := MarshalResult(r)
	task := `{"record":"task","engine":"slurm"}` + "\n"
	for _, tc := range []struct {
		name, out string
		ok        bool
	}{
		{"complete", task + string(line), true},
		{"no trailing newline", task + strings.TrimSuffix(string(line), "\n"), true},
		{"cut short", task + string(line[:len(line)/2]), false},
		{"log line after the record", task + string(line) + "level=INFO msg=late\n", false},
		{"only the task record", task, false},
		{"empty", "", false},
	} {
		if _, ok := lastResult([]byte(tc.out), r.Cell.ID); ok != tc.ok {
			t.Errorf("%s: complete = %v, want %v", tc.name, ok, tc.ok)
		}
	}
	if _, ok := lastResult([]byte(task+string(line)), "other-id"); ok {
		t.Error("a result of another cell counts as complete")
	}
}

// TestProfileCellCLI runs "sharebench profile cell" (the unit of work of every cluster task)
// with the fake backend: it prints the result record and, with --out, journals it unless
// --journal=false; --index-map picks the cell through a line of a file.
func TestProfileCellCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sharebench")
	}
	bin := buildSharebench(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "c.yaml")
	y := `name: cellcli
backend: fake
repeats: 1
max_repeats: 1
warmup: {steps: 1, seconds: 0}
window: {min_steps: 3, min_seconds: 0, floor_steps: 2, trim: 0, max_seconds: 10}
telemetry: none
models: [{name: a, batches: [8]}, {name: b, batches: [8]}]
fake: {default_step_ms: 2}
`
	if err := os.WriteFile(spec, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, y)
	out := filepath.Join(dir, "out")
	runCLI := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		return string(b)
	}
	stdout := runCLI("profile", "cell", "--campaign", spec, "--index", "1", "--out", out)
	r, ok := lastResult([]byte(stdout), c.Cells()[1].ID)
	if !ok || r.Status != StatusOK || r.Cell.Label != "b/8/8" {
		t.Fatalf("profile cell printed %q", stdout)
	}
	records, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	if len(records) != 1 {
		t.Errorf("journal has %d records, want 1", len(records))
	}
	idx := filepath.Join(dir, "cells.txt")
	os.WriteFile(idx, []byte("1\n0\n"), 0o644)
	stdout = runCLI("profile", "cell", "--campaign", spec, "--index-map", idx, "--index", "1", "--out", out, "--journal=false")
	if r, ok := lastResult([]byte(stdout), c.Cells()[0].ID); !ok || r.Attempt != 1 {
		t.Errorf("--index-map: printed %q", stdout)
	}
	records, _, _ = ReadJournal(filepath.Join(out, JournalFile))
	if len(records) != 1 {
		t.Errorf("--journal=false appended: %d records", len(records))
	}
	status := runCLI("profile", "status", out, "--spec", spec)
	if !strings.Contains(status, "5 cells: 1 ok") || !strings.Contains(status, "1      ok       1         b/8/8") {
		t.Errorf("profile status:\n%s", status)
	}
}
