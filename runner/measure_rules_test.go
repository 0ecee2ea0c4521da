package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner/gpu"
)

const quickFake = `
warmup: {steps: 1, seconds: 0}
window: {min_steps: 6, min_seconds: 100, floor_steps: 5, trim: 1, max_seconds: 30}
telemetry: none
fake: {default_step_ms: 2}
`

// TestInvalidJournalRecordsRerun: records that decode but are not measurements (an ok cell
// with a median of 0 or below) and lines that do not decode are reported and left out, so
// their cells run again instead of poisoning every later profile.
func TestInvalidJournalRecordsRerun(t *testing.T) {
	t.Parallel()
	c, _ := fakeCampaign(t, "name: bad\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}]\n"+quickFake)
	cells := c.Cells()
	out := t.TempDir()
	var lines []string
	for i, ms := range []float64{0, -5, 10} {
		r := scriptedResult(c, cells[i], StatusOK, int64(i))
		r.A.SoloMs.Median = ms
		b, _ := MarshalResult(r)
		lines = append(lines, string(b))
	}
	lines = append(lines, `{"record":"cell","cell":{"id":`+"\n", `{"record":"cell","cell":{"id":"x"},"status":"lost"}`+"\n")
	if err := os.WriteFile(filepath.Join(out, JournalFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, problems, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil || len(recs) != 1 || len(problems) != 4 {
		t.Fatalf("%d records, problems %q, %v", len(recs), problems, err)
	}
	for i, want := range []string{"line 1: cell a/8/8: ok with a/8/8 solo_ms median 0", "line 2: cell b/8/8: ok with b/8/8 solo_ms median -5", "line 4: not a JSON record", `line 5: cell x: unknown status "lost"`} {
		if !strings.HasPrefix(problems[i], want) {
			t.Errorf("problem %d: %q, want %q…", i, problems[i], want)
		}
	}
	sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 2 || sum.Skipped != 1 || sum.Cells.OK != 3 {
		t.Errorf("summary %+v: want the two invalid cells run again", sum)
	}
}

// TestJournalRejectsNegativeThroughput: an ok record whose throughput is negative (written by
// a runner that took a workload's negative sample count) is reported and left out.
func TestJournalRejectsNegativeThroughput(t *testing.T) {
	t.Parallel()
	c, _ := fakeCampaign(t, "name: neg\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8]}]\n"+quickFake)
	r := scriptedResult(c, c.Cells()[0], StatusOK, 1)
	r.A.SamplesPerS = -4000
	line, err := MarshalResult(r)
	if err != nil {
		t.Fatal(err)
	}
	recs, problems, err := DecodeResults(strings.NewReader(string(line)))
	if err != nil || len(recs) != 0 || len(problems) != 1 || !strings.Contains(problems[0], "samples_per_s -4000: not a measurement") {
		t.Errorf("records %d, problems %q, %v", len(recs), problems, err)
	}
}

// TestRepeatsUntilTheCIIsTight checks the stopping rule on its two ends, which do not depend
// on the machine: a loose target stops at repeats, noise far above the target runs to
// max_repeats (with a note saying so). The fakes report their drawn step times: on a loaded
// machine real sleeps stretch to the scheduler's tick, and two repeats' medians of a
// jittered 2 ms step then agree to 0.1%.
func TestRepeatsUntilTheCIIsTight(t *testing.T) {
	t.Parallel()
	base := "name: adapt\nmodels: [{name: a, batches: [8]}]\npairs: [[a, a]]\nreuse_solo: true\n" + quickFake
	for _, tc := range []struct {
		name   string
		extra  string
		repeat int
	}{
		// Three repeats meet a 99% target unless the step times vary by 40% of their median.
		{"loose target", "repeats: 3\nmax_repeats: 5\nci_target: 0.99\nfake: {default_step_ms: 2, drawn_times: true}\n", 3},
		{"noisy", "repeats: 2\nmax_repeats: 4\nci_target: 0.001\nfake: {default_step_ms: 2, jitter: 0.5, drawn_times: true}\n", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			y := base + tc.extra
			if strings.Contains(tc.extra, "fake:") {
				y = strings.Replace(base, "fake: {default_step_ms: 2}\n", "", 1) + tc.extra
			}
			c, _ := fakeCampaign(t, y)
			out := t.TempDir()
			if _, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)}); err != nil {
				t.Fatal(err)
			}
			recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
			for _, r := range recs {
				if r.Repeats != tc.repeat || r.Status != StatusOK {
					t.Errorf("%s: %s, %d repeats, want %d", r.Cell.Label, r.Status, r.Repeats, tc.repeat)
				}
				if tc.repeat == 4 && !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "> target 0.1%") }) {
					t.Errorf("%s: notes %q lack the unmet target", r.Cell.Label, r.Notes)
				}
				for _, s := range []*Side{r.A, r.B} {
					if s != nil && s.Xi != nil && s.Xi.Method != CIStudentT {
						t.Errorf("%s: ξ CI method %s with %d repeats", r.Cell.Label, s.Xi.Method, s.Xi.N)
					}
				}
			}
		})
	}
}

func TestResolveGPUs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ids       []string
		inherited string
		want      []string
		err       string
	}{
		{[]string{"0", "1"}, "", []string{"0", "1"}, ""},
		{[]string{"0"}, "3", []string{"3"}, ""},
		{[]string{"1", "0"}, "5,GPU-aa", []string{"GPU-aa", "5"}, ""},
		{[]string{"GPU-aa"}, "5,GPU-aa", []string{"GPU-aa"}, ""},
		{[]string{"1"}, "3", nil, "CUDA_VISIBLE_DEVICES=3 makes 1 device(s) visible"},
		{[]string{"GPU-bb"}, "5,GPU-aa", nil, "not among CUDA_VISIBLE_DEVICES"},
	} {
		got, err := ResolveGPUs(tc.ids, tc.inherited)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v under %q: err %v, want %q", tc.ids, tc.inherited, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%v under %q = %v, %v; want %v", tc.ids, tc.inherited, got, err, tc.want)
		}
	}
}

// TestInheritedVisibleDevices: a runner started with CUDA_VISIBLE_DEVICES (a Slurm
// allocation) hands its workloads the inherited devices, never the campaign's raw indices.
func TestInheritedVisibleDevices(t *testing.T) {
	t.Parallel()
	c, launches := fakeCampaign(t, "name: cvd\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\ngpus: ['0', '1']\nmodels: [{name: a, batches: [8]}, {name: b, batches: [8]}]\n"+quickFake)
	getenv := func(k string) string {
		if k == "CUDA_VISIBLE_DEVICES" {
			return "6,7"
		}
		return ""
	}
	if _, err := Run(context.Background(), c, RunOptions{OutDir: t.TempDir(), Backend: fakeBackend(c.Fake), Getenv: getenv}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range starts(readLaunches(t, launches)) {
		got = append(got, l.gpus)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"6", "7"}) {
		t.Errorf("workloads got CUDA_VISIBLE_DEVICES %v, want 6 and 7", got)
	}
}

// TestMultiGPUCells: a model measured on 1 and 2 GPUs; pairs co-locate jobs of the same GPU
// count on the same GPUs; a cell needing more GPUs than the campaign has is unavailable.
func TestMultiGPUCells(t *testing.T) {
	t.Parallel()
	c, launches := fakeCampaign(t, "name: multi\nrepeats: 1\nmax_repeats: 1\nreuse_solo: true\ngpus: ['0', '1']\nmodels: [{name: a, batches: [8], gpus: [1, 2, 4]}]\npairs: [[a, a]]\n"+quickFake)
	var labels []string
	for _, cell := range c.Cells() {
		labels = append(labels, cell.Label)
	}
	if d := cmp.Diff([]string{"a/8/8", "a/8/8x2", "a/8/8x4", "a/8/8+a/8/8", "a/8/8x2+a/8/8x2", "a/8/8x4+a/8/8x4"}, labels); d != "" {
		t.Fatalf("cells (-want +got):\n%s", d)
	}
	out := t.TempDir()
	sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cells.OK != 4 || sum.Cells.Unavailable != 2 {
		t.Errorf("counts %+v: want the 4-GPU cells unavailable", sum.Cells)
	}
	if !slices.ContainsFunc(starts(readLaunches(t, launches)), func(l launch) bool {
		return strings.Contains(l.run, "pair") && l.gpus == "0,1" || strings.Contains(l.run, "pair") && l.gpus == "1,0"
	}) {
		t.Error("no 2-GPU pair run on both GPUs")
	}
	tab, err := profile.LoadFile(filepath.Join(out, ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	if it := tab.Models[0].Configs[0].IterS; it[1] <= 0 || it[2] <= 0 {
		t.Errorf("iter_s by GPU count %v", it)
	}
	if !slices.ContainsFunc(tab.Pairs, func(p profile.Pair) bool { return p.GPUs == 2 }) {
		t.Errorf("no 2-GPU pair in %+v", tab.Pairs)
	}
}

// fakeMPSControl installs a stand-in nvidia-cuda-mps-control on PATH: "-d" creates the control
// pipe in $CUDA_MPS_PIPE_DIRECTORY, "quit" on stdin removes it; calls are logged.
func fakeMPSControl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
echo "$* $(cat 2>/dev/null)" >>` + dir + `/calls
if [ "$1" = "-d" ]; then mkfifo "$CUDA_MPS_PIPE_DIRECTORY/control"; else rm -f "$CUDA_MPS_PIPE_DIRECTORY/control"; fi
`
	if err := os.WriteFile(filepath.Join(dir, MPSControl), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMPSPairs measures pairs under MPS with a stand-in daemon: the workloads of mps cells
// get its pipe directory, those of timeslice cells a private empty one; the mode in effect
// comes from telemetry (MPS confirmed, or not), and without a daemon mps cells are
// unavailable while time-slicing cells run.
func TestMPSPairs(t *testing.T) {
	base := "name: mps\nrepeats: 1\nmax_repeats: 1\nreuse_solo: true\nmodels: [{name: a, batches: [8]}, {name: b, batches: [8]}]\npairs: [[a, b]]\n" + strings.Replace(quickFake, "telemetry: none\n", "", 1)
	t.Run("daemon", func(t *testing.T) {
		bin := fakeMPSControl(t)
		t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
		for _, mpsProcs := range []int{1, 0} {
			c, launches := fakeCampaign(t, base+"modes: [mps]\ntelemetry: fake\n")
			s := gpu.NewFake(1)
			s.MPSProcs = mpsProcs
			out := t.TempDir()
			sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake), Sampler: s, ProcRoot: t.TempDir()})
			if err != nil || sum.Cells.OK != 3 {
				t.Fatalf("%v %+v", err, sum.Cells)
			}
			recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
			pair := recs[len(recs)-1]
			want := map[int]string{1: string(profile.MPS), 0: ModeMPSUnconfirmed}[mpsProcs]
			if pair.Mode != want {
				t.Errorf("MPS procs %d: mode %s, want %s", mpsProcs, pair.Mode, want)
			}
			tab, _ := profile.LoadFile(filepath.Join(out, ProfileFile))
			if n := len(tab.Pairs); (mpsProcs == 1) != (n == 2) || n > 0 && tab.Pairs[0].Mode != profile.MPS {
				t.Errorf("MPS procs %d: profile pairs %+v", mpsProcs, tab.Pairs)
			}
			for _, l := range starts(readLaunches(t, launches)) {
				if strings.Contains(l.run, "pair") && !strings.HasSuffix(l.mps, "/pipe") {
					t.Errorf("pair workload got CUDA_MPS_PIPE_DIRECTORY %q", l.mps)
				}
			}
		}
		calls, _ := os.ReadFile(filepath.Join(bin, "calls"))
		if strings.Count(string(calls), "-d") != 2 || strings.Count(string(calls), "quit") != 2 {
			t.Errorf("daemon not started and stopped once per campaign:\n%s", calls)
		}
	})
	t.Run("no daemon", func(t *testing.T) {
		t.Setenv("PATH", "/nonexistent")
		c, _ := fakeCampaign(t, base+"modes: [timeslice, mps]\ntelemetry: none\n")
		out := t.TempDir()
		sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake), ProcRoot: t.TempDir()})
		if err != nil || sum.Cells.OK != 3 || sum.Cells.Unavailable != 1 {
			t.Fatalf("%v %+v", err, sum.Cells)
		}
		var man Manifest
		readJSON(t, filepath.Join(out, ManifestFile), &man)
		if !strings.Contains(man.MPSUnavailable, MPSControl+" not found") || man.PairModes["timeslice"] != 1 {
			t.Errorf("manifest: mps %q, modes %v", man.MPSUnavailable, man.PairModes)
		}
		again, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake), ProcRoot: t.TempDir()})
		if err != nil || again.Ran != 1 {
			t.Errorf("unavailable cells must run again: %+v %v", again, err)
		}
	})
}

// TestForeignProcessesNoted: a compute process that is not the runner's holds the GPU; the
// cell waits (foreign_wait), then runs with a note.
func TestForeignProcessesNoted(t *testing.T) {
	t.Parallel()
	c, _ := fakeCampaign(t, "name: foreign\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nforeign_wait: 50ms\nmodels: [{name: a, batches: [8]}]\n"+strings.Replace(quickFake, "telemetry: none", "telemetry: fake", 1))
	s := gpu.NewFake(1)
	s.Procs = []gpu.Proc{{PID: 4242, Name: "python3", UsedBytes: 3 << 30}}
	out := t.TempDir()
	if _, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake), Sampler: s}); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	if len(recs) != 1 || !slices.ContainsFunc(recs[0].Notes, func(n string) bool {
		return strings.Contains(n, "foreign compute processes held the GPU") && strings.Contains(n, "pid 4242 python3 (3072 MiB)")
	}) {
		t.Errorf("records %+v", recs)
	}
}

// TestBudgetLeavesCellsPending: cells the budget cannot hold stay pending (no record) and run
// on the next invocation.
func TestBudgetLeavesCellsPending(t *testing.T) {
	t.Parallel()
	y := "name: budget\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}]\n" + quickFake
	c, _ := fakeCampaign(t, y+"budget: 1ns\n")
	out := t.TempDir()
	sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)})
	if err != nil || sum.OverBudget == 0 || sum.Cells.Pending != sum.OverBudget {
		t.Fatalf("%v %+v", err, sum)
	}
	c2, _ := fakeCampaign(t, y)
	sum, err = Run(context.Background(), c2, RunOptions{OutDir: out, Backend: fakeBackend(c2.Fake)})
	if err != nil || sum.Cells.OK != 3 {
		t.Fatalf("%v %+v", err, sum)
	}
}

// TestOrderLevels: with order levels, every cell of sub-batch level 0 (solo, then pairs) comes
// before level 1; cell IDs do not depend on the order.
func TestOrderLevels(t *testing.T) {
	t.Parallel()
	y := "name: levels\nsub_batch_levels: 2\npair_grid: matched\nmodels: [{name: a, batches: [16]}, {name: b, batches: [16]}]\npairs: [[a, b]]\n"
	byCampaign := mustParse(t, y).Cells()
	byLevel := mustParse(t, y+"order: levels\n").Cells()
	var got []string
	for _, cell := range byLevel {
		got = append(got, fmt.Sprintf("%d %s", cell.Level, cell.Label))
	}
	want := []string{"0 a/16/16", "0 b/16/16", "0 a/16/16+b/16/16", "1 a/16/8", "1 b/16/8", "1 a/16/8+b/16/8"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("order levels (-want +got):\n%s", d)
	}
	ids := map[string]bool{}
	for _, cell := range byCampaign {
		ids[cell.ID] = true
	}
	for _, cell := range byLevel {
		if !ids[cell.ID] {
			t.Errorf("cell %s changed its ID with the order", cell.Label)
		}
	}
	b, _ := json.Marshal(byLevel[3])
	if !strings.Contains(string(b), `"level":1`) {
		t.Errorf("the level is not recorded: %s", b)
	}
}
