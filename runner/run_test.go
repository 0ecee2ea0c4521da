package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner/gpu"
)

// launch is one line of the fake workloads' launch log.
type launch struct {
	cell, run, role, model, what string
	mono                         int64
	gpus, mps                    string
}

func readLaunches(t *testing.T, path string) []launch {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []launch
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		id := strings.SplitN(f[0], "-", 4) // cell8-rN-kind-role
		mono, _ := strconv.ParseInt(f[3], 10, 64)
		l := launch{cell: id[0], run: id[1] + "-" + id[2], role: id[3], model: f[1], what: f[2], mono: mono}
		if len(f) > 5 {
			l.gpus, l.mps = strings.Trim(f[4], "-"), strings.Trim(f[5], "-")
		}
		out = append(out, l)
	}
	return out
}

func starts(ls []launch) []launch {
	var out []launch
	for _, l := range ls {
		if l.what == "start" {
			out = append(out, l)
		}
	}
	return out
}

// fakeCampaign parses y and points its fake launch log into a temporary directory.
func fakeCampaign(t *testing.T, y string) (*Campaign, string) {
	t.Helper()
	c := mustParse(t, y)
	c.Backend = BackendFake
	c.Fake.LaunchLog = filepath.Join(t.TempDir(), "launches.log")
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	return c, c.Fake.LaunchLog
}

func runCampaign(t *testing.T, ctx context.Context, c *Campaign, out string, opt RunOptions) (Summary, error) {
	t.Helper()
	opt.OutDir = out
	if opt.Backend == nil {
		opt.Backend = fakeBackend(c.Fake)
	}
	return Run(ctx, c, opt)
}

const fakeABCampaign = `
name: fake-ab
repeats: 3
max_repeats: 3
models:
  - {name: a, batches: [8]}
  - {name: b, batches: [4]}
pairs: [[a, b]]
warmup: {steps: 2, seconds: 0.01}
window: {min_steps: 15, min_seconds: 10, floor_steps: 5, max_seconds: 15}
timeouts: {ready: 20s, stall: 5s, grace: 2s}
telemetry: fake
fake:
  step_ms: {a: 4, b: 6}
  jitter: 0.01
  slowdown: {a+b: 1.6, b+a: 1.4}
`

func TestCampaignFake(t *testing.T) {
	t.Parallel()
	c, logPath := fakeCampaign(t, fakeABCampaign)
	out := t.TempDir()
	sum, err := runCampaign(t, context.Background(), c, out, RunOptions{Sampler: gpu.NewFake(1), Command: "sharebench profile run --spec fake-ab.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cells.OK != 3 || sum.Ran != 3 {
		t.Fatalf("summary %+v", sum)
	}
	cells := c.Cells()
	byID := map[string]Cell{}
	for _, cell := range cells {
		byID[cell.ID[:8]] = cell
	}

	// ABBA order of the launches, and cells in order.
	var got []string
	for _, l := range starts(readLaunches(t, logPath)) {
		got = append(got, strconv.Itoa(byID[l.cell].Index)+":"+l.run+"-"+l.role)
	}
	want := []string{
		"0:r0-solo-A", "0:r1-solo-A", "0:r2-solo-A", "1:r0-solo-A", "1:r1-solo-A", "1:r2-solo-A",
		"2:r0-soloA-A", "2:r0-soloB-B", "2:r0-pair-A", "2:r0-pair-B",
		"2:r1-pair-A", "2:r1-pair-B", "2:r1-soloB-B", "2:r1-soloA-A",
		"2:r2-soloA-A", "2:r2-soloB-B", "2:r2-pair-A", "2:r2-pair-B",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("launch order (-want +got):\n%s", diff)
	}

	// Sequential warm-up: B starts only after A is ready.
	ls := readLaunches(t, logPath)
	at := func(run, role, what string) int64 {
		for _, l := range ls {
			if l.cell == cells[2].ID[:8] && l.run == run && l.role == role && l.what == what {
				return l.mono
			}
		}
		t.Fatalf("no %s %s %s in the launch log", run, role, what)
		return 0
	}
	recs, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	pair := Latest(recs)[cells[2].ID]
	for _, run := range pair.Runs {
		if run.Kind != KindPair {
			continue
		}
		readyA, startB, readyB := at(run.Run, "A", "ready"), at(run.Run, "B", "start"), at(run.Run, "B", "ready")
		if !(readyA < startB) {
			t.Errorf("%s: B started before A was ready", run.Run)
		}
		// Barrier: both released after B's warm-up, close together.
		for _, m := range run.Members {
			if m.FirstT0Ns < readyB {
				t.Errorf("%s: %s stepped before the barrier", run.Run, m.Role)
			}
		}
		if run.StartSkewMs > 50 {
			t.Errorf("%s: first steps %.1f ms apart, want the barrier to release them together", run.Run, run.StartSkewMs)
		}
		if run.Telemetry == nil || run.Telemetry.Samples == 0 || run.Telemetry.Source != "fake" {
			t.Errorf("%s: telemetry %+v", run.Run, run.Telemetry)
		}
	}

	// ξ reflects the configured slowdowns (loosely: sleeps on a loaded CI machine are noisy).
	if pair.A.Xi == nil || pair.B.Xi == nil || pair.A.Xi.N != 3 {
		t.Fatalf("pair sides %+v %+v", pair.A, pair.B)
	}
	if xa, xb := pair.A.Xi.Median, pair.B.Xi.Median; xa < 1.2 || xa > 2.0 || xb < 1.1 || xb > 1.9 {
		t.Errorf("ξ_a = %.3f (configured 1.6), ξ_b = %.3f (configured 1.4)", xa, xb)
	}
	if !(pair.A.Xi.CI[0] <= pair.A.Xi.Median && pair.A.Xi.Median <= pair.A.Xi.CI[1]) {
		t.Errorf("ξ_a CI %v does not contain its median", pair.A.Xi.CI)
	}

	// Outputs.
	tab, err := profile.LoadFile(filepath.Join(out, ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Source != "measured" || tab.GPU != "Fake GPU" || tab.Provenance.Host["hostname"] == "" || len(tab.Models) != 2 || len(tab.Pairs) != 2 {
		t.Errorf("profile: %+v", tab)
	}
	ca, cb := profile.Config{Model: "a", Batch: 8, SubBatch: 8}, profile.Config{Model: "b", Batch: 4, SubBatch: 4}
	if xi, ok := tab.Slowdown(ca, cb, 1, profile.Timeslice); !ok || xi != round(pair.A.Xi.Median, 6) {
		t.Errorf("profile ξ(a|b) = %v %v, want %v", xi, ok, pair.A.Xi.Median)
	}
	if xi, ok := tab.Slowdown(cb, ca, 1, profile.Timeslice); !ok || xi != round(pair.B.Xi.Median, 6) {
		t.Errorf("profile ξ(b|a) = %v %v, want %v", xi, ok, pair.B.Xi.Median)
	}
	if mem, est, ok := tab.Mem(ca); !ok || est || mem != 1<<30 {
		t.Errorf("mem(a) = %d %v %v, want 1 GiB measured", mem, est, ok)
	}
	if it, ok := tab.IterTime(ca, 1); !ok || it < 3500*time.Microsecond || it > 8*time.Millisecond {
		t.Errorf("iter time(a) = %v, want about 4ms", it)
	}
	rows := readCSV(t, filepath.Join(out, CellsFile))
	if len(rows) != 4 || rows[3][4] != "ok" || rows[0][24] != "xi_a" || rows[3][24] == "" {
		t.Errorf("cells.csv:\n%v", rows)
	}
	var man Manifest
	readJSON(t, filepath.Join(out, ManifestFile), &man)
	if man.Backend != "fake" || man.Telemetry != "fake" || man.Campaign.Name != "fake-ab" || man.SharingMode != "timeslice: 1 pair cells" || man.Precision["mode"] != "default" ||
		man.Cells.OK != 3 || man.Software["torch"] != "fake" || man.Impl["a"] != "fake" || man.SMClockMedianMHz != 1980 || man.Revision == "" {
		t.Errorf("manifest: %+v", man)
	}
	// profile.json is a pure function of the journal.
	again, err := BuildProfile(c, Latest(recs), "sharebench profile run --spec fake-ab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := again.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if disk, _ := os.ReadFile(filepath.Join(out, ProfileFile)); !bytes.Equal(disk, buf.Bytes()) {
		t.Error("profile.json differs when rebuilt from the journal")
	}
	// Raw files exist for every run.
	for _, run := range pair.Runs {
		for _, f := range run.Files {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Error(err)
			}
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func TestCampaignFailuresAreResults(t *testing.T) {
	t.Parallel()
	c, _ := fakeCampaign(t, `
name: failures
repeats: 1
max_repeats: 1
models:
  - {name: ok, batches: [8]}
  - {name: big, batches: [8]}
  - {name: crashy, batches: [8], args: [--inject, crash@3]}
  - {name: hangy, batches: [8], args: [--inject, hang]}
  - {name: garbagey, batches: [8], args: [--inject, garbage@2]}
  - {name: oomy, batches: [8], args: [--inject, oom@build]}
pairs: [[big, big], [ok, crashy]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 10, min_seconds: 10, floor_steps: 5, max_seconds: 10}
timeouts: {ready: 30s, stall: 2s, grace: 1s}
telemetry: none
fake:
  default_step_ms: 3
  mem_bytes: {big: 2147483648}
  gpu_mem_bytes: 3221225472
`)
	out := t.TempDir()
	sum, err := runCampaign(t, context.Background(), c, out, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	latest := Latest(recs)
	want := map[string]struct {
		status       Status
		reason, tail string
	}{
		"ok/8/8":            {StatusOK, "", ""},
		"big/8/8":           {StatusOK, "", ""},
		"crashy/8/8":        {StatusFailed, "during measurement: exit code 1", "InjectedCrash: injected crash at step 3"},
		"hangy/8/8":         {StatusFailed, "made no step for 2s", "injected hang"},
		"garbagey/8/8":      {StatusFailed, "malformed protocol stream", ""},
		"oomy/8/8":          {StatusInfeasible, "out of memory in build", "OutOfMemoryError"},
		"big/8/8+big/8/8":   {StatusInfeasible, "out of memory in warmup", "fake GPU"},
		"ok/8/8+crashy/8/8": {StatusFailed, "r0-soloB: crashy/8/8 exited during measurement", "InjectedCrash"},
	}
	for _, cell := range c.Cells() {
		r, ok := latest[cell.ID]
		w := want[cell.Label]
		if !ok {
			t.Errorf("%s: no record: the campaign stopped", cell.Label)
			continue
		}
		if r.Status != w.status || !strings.Contains(r.Reason, w.reason) || !strings.Contains(r.StderrTail, w.tail) {
			t.Errorf("%s: %s (%q, tail %q), want %s (%q, tail containing %q)", cell.Label, r.Status, r.Reason, r.StderrTail, w.status, w.reason, w.tail)
		}
	}
	if sum.Cells.OK != 2 || sum.Cells.Failed != 4 || sum.Cells.Infeasible != 2 {
		t.Errorf("counts %+v", sum.Cells)
	}
	tab, err := profile.LoadFile(filepath.Join(out, ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.ModelNames(); !slices.Equal(got, []string{"big", "ok"}) || len(tab.Pairs) != 0 {
		t.Errorf("profile models %v, pairs %v", got, tab.Pairs)
	}
	notes := strings.Join(tab.Notes, "\n")
	for _, s := range []string{"cell big/8/8+big/8/8: infeasible", "cell crashy/8/8: failed"} {
		if !strings.Contains(notes, s) {
			t.Errorf("profile notes lack %q:\n%s", s, notes)
		}
	}
}

// cancelAfter is a slog handler that cancels a context after n "cell done" records.
type cancelAfter struct {
	slog.Handler
	n      int32
	seen   *atomic.Int32
	cancel context.CancelFunc
}

func (h cancelAfter) Enabled(context.Context, slog.Level) bool { return true }

func (h cancelAfter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "cell done" && h.seen.Add(1) == h.n {
		h.cancel()
	}
	return nil
}

func TestCampaignResume(t *testing.T) {
	t.Parallel()
	c, logPath := fakeCampaign(t, `
name: resume
repeats: 2
max_repeats: 2
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}]
pairs: [[a, b], [b, c]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 10, min_seconds: 10, floor_steps: 5, max_seconds: 10}
timeouts: {ready: 10s, stall: 5s, grace: 500ms}
telemetry: none
fake: {default_step_ms: 3}
`)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen atomic.Int32
	log := slog.New(cancelAfter{Handler: slog.DiscardHandler, n: 2, seen: &seen, cancel: cancel})
	_, err := runCampaign(t, ctx, c, out, RunOptions{Logger: log})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: err = %v, want context.Canceled", err)
	}
	recs, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("journal after the interruption has %d records, want 2", len(recs))
	}
	for _, f := range []string{ProfileFile, CellsFile, ManifestFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("after the interruption: %v", err)
		}
	}
	done := map[string]bool{}
	for _, r := range recs {
		done[r.Cell.ID[:8]] = true
	}
	firstLaunches := len(starts(readLaunches(t, logPath)))

	sum, err := runCampaign(t, context.Background(), c, out, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 2 || sum.Ran != 3 || sum.Cells.OK != 5 {
		t.Errorf("resume summary %+v", sum)
	}
	second := starts(readLaunches(t, logPath))[firstLaunches:]
	for _, l := range second {
		if done[l.cell] {
			t.Errorf("completed cell %s was launched again (%s-%s)", l.cell, l.run, l.role)
		}
	}
	// The three remaining cells: solo c (2 runs), a+b and b+c (2 repeats × (2 solos + 2 pair members)).
	if len(second) != 2+8+8 {
		t.Errorf("resume launched %d processes, want 18", len(second))
	}
	recs, _, _ = ReadJournal(filepath.Join(out, JournalFile))
	if len(recs) != 5 || len(Latest(recs)) != 5 {
		t.Errorf("journal has %d records for %d cells, want 5", len(recs), len(Latest(recs)))
	}
	// A third run has nothing to do.
	sum, err = runCampaign(t, context.Background(), c, out, RunOptions{})
	if err != nil || sum.Ran != 0 || sum.Skipped != 5 {
		t.Errorf("third run: %+v, %v", sum, err)
	}
}

func TestReuseSoloAndMemoryPrediction(t *testing.T) {
	t.Parallel()
	c, logPath := fakeCampaign(t, `
name: reuse
repeats: 2
max_repeats: 2
reuse_solo: true
gpu_mem_bytes: 5000000000
mem_margin_bytes: 1
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: big, batches: [8]}]
pairs: [[a, b], [a, big]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 10, min_seconds: 10, floor_steps: 5, max_seconds: 10}
timeouts: {ready: 10s, stall: 5s, grace: 500ms}
telemetry: none
fake: {default_step_ms: 3, mem_bytes: {big: 4500000000}}
`)
	out := t.TempDir()
	if _, err := runCampaign(t, context.Background(), c, out, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	cells := c.Cells() // a, b, big, a+b, a+big
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	latest := Latest(recs)
	ab, abig := latest[cells[3].ID], latest[cells[4].ID]
	if ab.Status != StatusOK || ab.A.SoloMs != nil || ab.A.Xi == nil || len(ab.Runs) != 2 {
		t.Errorf("reused-solo pair: status %s, runs %d, side %+v", ab.Status, len(ab.Runs), ab.A)
	}
	if abig.Status != StatusInfeasiblePredicted || !strings.Contains(abig.Reason, "predicted not to fit") || len(abig.Runs) != 0 {
		t.Errorf("a+big: %s %q (%d runs)", abig.Status, abig.Reason, len(abig.Runs))
	}
	for _, l := range starts(readLaunches(t, logPath)) {
		if l.cell == cells[4].ID[:8] {
			t.Errorf("a predicted-infeasible pair was launched: %+v", l)
		}
		if l.cell == cells[3].ID[:8] && !strings.HasSuffix(l.run, "pair") {
			t.Errorf("reuse_solo pair cell ran a solo run: %+v", l)
		}
	}
	tab, err := profile.LoadFile(filepath.Join(out, ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tab.Slowdown(cells[3].A.Config(), cells[3].B.Config(), 1, profile.Timeslice); !ok {
		t.Error("profile lacks ξ(a|b) computed from the solo cells")
	}
}

func TestRunCellRecord(t *testing.T) {
	t.Parallel()
	c, _ := fakeCampaign(t, fakeABCampaign)
	c.Repeats, c.MaxRepeats = 1, 1
	c.Telemetry = "none"
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res, err := RunCell(context.Background(), c, 2, fakeBackend(c.Fake), CellOptions{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusOK || res.Cell.Index != 2 || res.Cell.Kind != KindPair || res.Record != "cell" || res.Version != 1 || res.Backend != "fake" {
		t.Fatalf("record %+v", res)
	}
	line, err := MarshalResult(res)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Errorf("result is not one JSON line")
	}
	// What "sharebench profile cell" prints is what the journal stores: mixing it with other
	// task output still decodes.
	back, problems, err := DecodeResults(bytes.NewReader(append([]byte("slurm: task 2 started\n"), line...)))
	if err != nil || len(problems) != 1 || len(back) != 1 {
		t.Fatalf("decode: %d records, problems %q, %v", len(back), problems, err)
	}
	again, _ := MarshalResult(back[0])
	if !bytes.Equal(line, again) {
		t.Errorf("record does not round-trip:\n%s%s", line, again)
	}
	if _, err := RunCell(context.Background(), c, 99, fakeBackend(c.Fake), CellOptions{OutDir: out}); err == nil {
		t.Error("RunCell with an index out of range succeeded")
	}
}

func TestCampaignGPUsInParallel(t *testing.T) {
	t.Parallel()
	c, logPath := fakeCampaign(t, `
name: gpus
repeats: 1
max_repeats: 1
gpus: ["0", "1"]
models: [{name: a, batches: [8]}, {name: b, batches: [8]}]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 10, min_seconds: 10, floor_steps: 5, max_seconds: 10}
timeouts: {ready: 10s, stall: 5s, grace: 500ms}
telemetry: none
fake: {default_step_ms: 3}
`)
	if _, err := runCampaign(t, context.Background(), c, t.TempDir(), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	pairGPU := map[string]string{}
	for _, l := range starts(readLaunches(t, logPath)) {
		used[l.gpus] = true
		if strings.HasSuffix(l.run, "pair") {
			if g, ok := pairGPU[l.cell+l.run]; ok && g != l.gpus {
				t.Errorf("pair %s members on GPUs %s and %s", l.cell, g, l.gpus)
			}
			pairGPU[l.cell+l.run] = l.gpus
		}
	}
	for g := range used {
		if g != "0" && g != "1" {
			t.Errorf("process pinned to %q", g)
		}
	}
}
