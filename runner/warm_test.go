package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner/gpu"
)

// warmFake is a warm-worker campaign on the fake backend: two models, each alone and with the
// other and itself, at two sub-batch levels, with reported step times that do not depend on
// how busy the machine is (drawn_times).
const warmFake = `
name: warm
workers: warm
order: levels
sub_batch_levels: 2
pair_grid: matched
repeats: 1
max_repeats: 1
reuse_solo: true
models:
  - {name: a, batches: [8], min_sub_batch: 4}
  - {name: b, batches: [8], min_sub_batch: 4}
warmup: {steps: 2, seconds: 0}
window: {min_steps: 8, min_seconds: 100, floor_steps: 5, trim: 1, max_seconds: 30}
timeouts: {ready: 30s, stall: 10s, grace: 2s}
telemetry: none
fake:
  step_ms: {a: 3, b: 4}
  jitter: 0.01
  drawn_times: true
  slowdown: {a+b: 1.5, b+a: 1.25, a+a: 2, b+b: 2}
`

// workerLaunches reads the fake launch log: for each worker run id, how often it started
// and became ready.
func workerLaunches(t *testing.T, path string) (starts map[string]int, order []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	starts = map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "start" {
			starts[fields[0]]++
			order = append(order, fields[0])
		}
	}
	return starts, order
}

// journalRecords returns the workers records of a journal.
func workersRecords(t *testing.T, path string) []WorkersRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []WorkersRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r WorkersRecord
		if json.Unmarshal([]byte(line), &r) == nil && r.Record == RecordWorkers {
			out = append(out, r)
		}
	}
	return out
}

// TestWarmWorkers: with workers: warm every configuration's process starts once per level (a
// second one for the pair with itself), serves every cell that needs it, and the cells measure
// what fresh processes measure: the fake's slowdown as ξ, from each run's own raw files.
func TestWarmWorkers(t *testing.T) {
	t.Parallel()
	c, logPath := fakeCampaign(t, warmFake)
	out := t.TempDir()
	sum, err := runCampaign(t, context.Background(), c, out, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Per level: 2 solo cells, pairs a+a, a+b, b+b.
	if sum.Cells.OK != 10 || sum.Cells.Total != 10 {
		t.Fatalf("cells: %+v", sum.Cells)
	}
	starts, _ := workerLaunches(t, logPath)
	if len(starts) != 8 {
		t.Errorf("%d worker processes, want 8 (a, a#1, b, b#1 at each of two levels): %v", len(starts), starts)
	}
	for id, n := range starts {
		if n != 1 {
			t.Errorf("worker %s started %d times", id, n)
		}
	}
	recs, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"a+b": 1.5, "b+a": 1.25, "a+a": 2, "b+b": 2}
	for _, r := range recs {
		if r.Status != StatusOK {
			t.Errorf("%s: %s %s\n%s", r.Cell.Label, r.Status, r.Reason, r.StderrTail)
			continue
		}
		if r.Cell.Kind != KindPair {
			continue
		}
		for _, s := range []struct {
			side       *Side
			self, peer string
		}{{r.A, r.Cell.A.Model, r.Cell.B.Model}, {r.B, r.Cell.B.Model, r.Cell.A.Model}} {
			xi, w := s.side.Xi.Median, want[s.self+"+"+s.peer]
			if xi < 0.9*w || xi > 1.1*w {
				t.Errorf("%s: ξ of %s = %.3f, want about %.2f", r.Cell.Label, s.self, xi, w)
			}
		}
		for _, run := range r.Runs {
			for _, f := range run.Files {
				if strings.HasSuffix(f, ".events.jsonl") {
					checkWindowStream(t, filepath.Join(out, f))
				}
			}
		}
	}
	ws := workersRecords(t, filepath.Join(out, JournalFile))
	var groups []string
	for _, w := range ws {
		groups = append(groups, w.Group)
		if len(w.Workers) != 4 {
			t.Errorf("group %s: %d workers, want 4", w.Group, len(w.Workers))
		}
		for _, x := range w.Workers {
			if x.Status != StatusOK || x.WarmupSteps < 2 || x.WarmupStepMs <= 0 || x.LoadS <= 0 {
				t.Errorf("group %s: worker %+v", w.Group, x)
			}
		}
	}
	if d := cmp.Diff([]string{"timeslice level 0", "timeslice level 1"}, groups); d != "" {
		t.Errorf("worker groups (-want +got):\n%s", d)
	}
	if len(ws) == 2 && ws[1].Retired != 4 {
		t.Errorf("level 1 retired %d workers of level 0, want 4", ws[1].Retired)
	}
	entries, err := os.ReadDir(filepath.Join(out, WorkersDir))
	if err != nil || len(entries) != 16 {
		t.Errorf("workers/: %d files (%v), want an events file and a log per worker", len(entries), err)
	}
	if _, err := os.Stat(filepath.Join(out, ProfileFile)); err != nil {
		t.Error(err)
	}
}

// checkWindowStream checks a run's raw stream from a warm worker: steps counted from 0, then
// mem and idle, nothing else.
func checkWindowStream(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	next := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		e, err := NewParser(strings.NewReader(line)).Next()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Event == EventStep {
			if e.I != next {
				t.Errorf("%s: step %d, want %d", path, e.I, next)
			}
			next++
		}
		if len(names) == 0 || names[len(names)-1] != e.Event {
			names = append(names, e.Event)
		}
	}
	if d := cmp.Diff([]string{EventStep, EventMem, EventIdle}, names); d != "" {
		t.Errorf("%s: events (-want +got):\n%s", path, d)
	}
}

// TestWarmWorkerFailures: a worker that runs out of memory while warming up makes its cells
// infeasible without retries; one that crashes in a window fails that run and is replaced for
// the next cell; one that hangs is killed after the stall timeout; the other cells are
// measured.
func TestWarmWorkerFailures(t *testing.T) {
	t.Parallel()
	c, logPath := fakeCampaign(t, `
name: warm-failures
workers: warm
repeats: 1
max_repeats: 1
reuse_solo: true
models:
  - {name: ok, batches: [8]}
  - {name: oom, batches: [8], args: [--inject, oom@warmup]}
  - {name: crash, batches: [8], args: [--inject, crash@2]}
  - {name: hang, batches: [8], args: [--inject, hang]}
pairs: [[ok, oom], [ok, crash], [crash, crash]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 6, min_seconds: 100, floor_steps: 5, trim: 1, max_seconds: 30}
timeouts: {ready: 20s, stall: 1s, grace: 1s}
telemetry: none
fake: {default_step_ms: 2}
`)
	out := t.TempDir()
	if _, err := runCampaign(t, context.Background(), c, out, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.Cell.Label] = string(r.Status)
		switch r.Status {
		case StatusFailed:
			if !strings.Contains(r.Reason, "exited during the window") && !strings.Contains(r.Reason, "hang:") {
				t.Errorf("%s: reason %q", r.Cell.Label, r.Reason)
			}
		case StatusInfeasible:
			if !strings.Contains(r.Reason, "out of memory") {
				t.Errorf("%s: reason %q", r.Cell.Label, r.Reason)
			}
		}
	}
	want := map[string]string{
		"ok/8/8": "ok", "oom/8/8": "infeasible", "crash/8/8": "failed", "hang/8/8": "failed",
		"ok/8/8+oom/8/8": "infeasible", "ok/8/8+crash/8/8": "failed", "crash/8/8+crash/8/8": "failed",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	starts, _ := workerLaunches(t, logPath)
	var crashStarts, oomStarts int
	for id, n := range starts {
		switch {
		case strings.Contains(id, "-crash_8_8-0"):
			crashStarts += n
		case strings.Contains(id, "-oom_"):
			oomStarts += n
		}
	}
	// crash #0: started with the group, replaced for its pair with ok and for the self-pair.
	if crashStarts != 3 || oomStarts != 1 {
		t.Errorf("crash worker started %d times (want 3: replaced after each crash), oom worker %d (want 1: not retried)\n%v", crashStarts, oomStarts, starts)
	}
}

// TestWarmWorkerStartsBounded: a configuration whose worker dies in every window is started at
// most maxWorkerStarts times; its later cells fail at once with the reason.
func TestWarmWorkerStartsBounded(t *testing.T) {
	t.Parallel()
	c, logPath := fakeCampaign(t, `
name: warm-bounded
workers: warm
repeats: 1
max_repeats: 1
reuse_solo: true
models:
  - {name: ok, batches: [8]}
  - {name: ok2, batches: [8]}
  - {name: ok3, batches: [8]}
  - {name: crash, batches: [8], args: [--inject, crash@1]}
pairs: [[ok, crash], [ok2, crash], [ok3, crash]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 6, min_seconds: 100, floor_steps: 5, trim: 1, max_seconds: 30}
timeouts: {ready: 20s, stall: 5s, grace: 1s}
telemetry: none
fake: {default_step_ms: 2}
`)
	out := t.TempDir()
	if _, err := runCampaign(t, context.Background(), c, out, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, r := range recs {
		reasons[r.Cell.Label] = r.Reason
	}
	if r := reasons["ok3/8/8+crash/8/8"]; !strings.Contains(r, "not started again") {
		t.Errorf("the cell after the last start: reason %q, want the bound", r)
	}
	starts, _ := workerLaunches(t, logPath)
	n := 0
	for id, k := range starts {
		if strings.Contains(id, "-crash_8_8-0") {
			n += k
		}
	}
	if n != maxWorkerStarts {
		t.Errorf("crash worker started %d times, want %d\n%v", n, maxWorkerStarts, starts)
	}
}

// TestWarmWorkersMPS: the MPS pairs come after the time-slicing levels with workers of their
// own, connected to the MPS daemon, once the time-slicing workers are retired; without a
// daemon they are unavailable and no worker starts for them.
func TestWarmWorkersMPS(t *testing.T) {
	y := `
name: warm-mps
workers: warm
order: levels
modes: [timeslice, mps]
repeats: 1
max_repeats: 1
reuse_solo: true
models: [{name: a, batches: [8]}, {name: b, batches: [8]}]
pairs: [[a, b]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 6, min_seconds: 100, floor_steps: 5, trim: 1, max_seconds: 30}
timeouts: {ready: 30s, stall: 10s, grace: 2s}
telemetry: fake
fake: {default_step_ms: 2}
`
	t.Run("daemon", func(t *testing.T) {
		bin := fakeMPSControl(t)
		t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
		c, logPath := fakeCampaign(t, y)
		s := gpu.NewFake(1)
		s.MPSProcs = 1
		out := t.TempDir()
		sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake), Sampler: s, ProcRoot: t.TempDir()})
		if err != nil || sum.Cells.OK != 4 {
			t.Fatalf("%v %+v", err, sum.Cells)
		}
		var groups []string
		for _, w := range workersRecords(t, filepath.Join(out, JournalFile)) {
			groups = append(groups, fmt.Sprintf("%s: %d started, %d retired", w.Group, len(w.Workers), w.Retired))
		}
		if d := cmp.Diff([]string{"timeslice level 0: 2 started, 0 retired", "mps level 0: 2 started, 2 retired"}, groups); d != "" {
			t.Errorf("groups (-want +got):\n%s", d)
		}
		b, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			if len(f) < 6 || f[2] != "start" {
				continue
			}
			if mps := strings.Contains(f[0], "-mps-"); mps != strings.HasSuffix(f[5], "/pipe") {
				t.Errorf("worker %s got CUDA_MPS_PIPE_DIRECTORY %s", f[0], f[5])
			}
		}
	})
	t.Run("no daemon", func(t *testing.T) {
		t.Setenv("PATH", "/nonexistent")
		c, logPath := fakeCampaign(t, strings.Replace(y, "telemetry: fake", "telemetry: none", 1))
		out := t.TempDir()
		sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake), ProcRoot: t.TempDir()})
		if err != nil || sum.Cells.OK != 3 || sum.Cells.Unavailable != 1 {
			t.Fatalf("%v %+v", err, sum.Cells)
		}
		starts, _ := workerLaunches(t, logPath)
		for id := range starts {
			if strings.Contains(id, "-mps-") {
				t.Errorf("an MPS worker started without a daemon: %s", id)
			}
		}
	})
}

// TestWarmWorkersCampaignRules: workers must be fresh or warm, and warm workers need one GPU
// and jobs of one GPU; cell IDs of campaigns with fresh processes do not change, warm ones
// have their own.
func TestWarmWorkersCampaignRules(t *testing.T) {
	t.Parallel()
	base := "name: w\nmodels: [{name: a, batches: [8]}]\n"
	for y, want := range map[string]string{
		base + "workers: lukewarm\n":                                                `workers: "lukewarm": want fresh or warm`,
		base + "workers: warm\ngpus: [\"0\", \"1\"]\n":                              "workers: warm needs one GPU",
		"name: w\nworkers: warm\nmodels: [{name: a, batches: [8], gpus: [1, 2]}]\n": "workers: warm runs jobs of one GPU",
	} {
		if _, err := ParseCampaign([]byte(y), "c.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", y, err, want)
		}
	}
	if _, err := ParseCampaign([]byte(base+"workers: warm\ngpus: [\"0\", \"1\"]\nworkload: {device: cpu}\n"), "c.yaml"); err != nil {
		t.Errorf("device cpu ignores gpus: %v", err)
	}
	ids := func(y string) []string {
		var out []string
		for _, cell := range mustParse(t, y).Cells() {
			out = append(out, cell.ID)
		}
		return out
	}
	if !slices.Equal(ids(base), ids(base+"workers: fresh\n")) {
		t.Error("workers: fresh changed the cell IDs")
	}
	if slices.Equal(ids(base), ids(base+"workers: warm\n")) {
		t.Error("workers: warm kept the cell IDs of fresh processes")
	}
}

// TestOrderLevelsModes: with order levels and MPS, the time-slicing levels come first and the
// MPS pairs follow level by level, so a budget that runs out leaves the time-slicing profile
// whole.
func TestOrderLevelsModes(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "name: m\norder: levels\nsub_batch_levels: 2\npair_grid: matched\nmodes: [timeslice, mps]\n"+
		"models: [{name: a, batches: [16]}, {name: b, batches: [16]}]\npairs: [[a, b]]\n")
	var got []string
	for _, cell := range c.Cells() {
		got = append(got, cell.Label)
	}
	want := []string{"a/16/16", "b/16/16", "a/16/16+b/16/16", "a/16/8", "b/16/8", "a/16/8+b/16/8",
		"a/16/16+b/16/16@mps", "a/16/8+b/16/8@mps"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	var groups []string
	for _, p := range phases(c, c.Cells()) {
		groups = append(groups, workerGroup(c, p[0])+" "+p[0].Kind)
	}
	want = []string{"timeslice level 0 solo", "timeslice level 0 pair", "timeslice level 1 solo", "timeslice level 1 pair",
		"mps level 0 pair", "mps level 1 pair"}
	if d := cmp.Diff(want, groups); d != "" {
		t.Errorf("phases (-want +got):\n%s", d)
	}
}

// TestWarmWorkersReal runs a warm-worker campaign with the real workload on CPU (tiny
// models): every configuration's process serves its solo and pair cells.
func TestWarmWorkersReal(t *testing.T) {
	if testing.Short() {
		t.Skip("real-workload campaign skipped in -short mode")
	}
	c := smokeCampaign(t)
	c.Name = "warm-smoke"
	c.Workers = WorkersWarm
	c.Order = OrderLevels
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sum, err := Run(ctx, c, RunOptions{OutDir: out, Backend: &Local{}})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	for _, r := range recs {
		if r.Status != StatusOK {
			t.Errorf("%s: %s: %s\n%s", r.Cell.Label, r.Status, r.Reason, r.StderrTail)
		}
	}
	ws := workersRecords(t, filepath.Join(out, JournalFile))
	n := 0
	for _, w := range ws {
		n += len(w.Workers)
		for _, x := range w.Workers {
			if x.Status != StatusOK || x.BuildS <= 0 || x.WarmupStepMs <= 0 {
				t.Errorf("%s: %+v", w.Group, x)
			}
		}
	}
	if sum.Cells.OK != sum.Cells.Total || n != 4 {
		t.Errorf("cells %+v, %d workers (want 4: two models at two levels)", sum.Cells, n)
	}
	if _, err := profile.LoadFile(filepath.Join(out, ProfileFile)); err != nil {
		t.Error(err)
	}
}
