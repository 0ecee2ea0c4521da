package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// failingTable is a small experiment table with one run that works and two that fail: an
// unknown policy and a missing trace file.
func failingTable() []Experiment {
	testbed := TraceSpec{Name: "testbed61", File: TraceTestbed61, Format: "muri"}
	gavel := ProfileSpec{File: ProfileGavelV100, ModelMap: ModelMapGavel}
	c := ClusterSpec{Nodes: 4, GPUsPerNode: 8, MemGiB: 48}
	return []Experiment{{
		Name: "F", Title: "failure handling", Seeds: []uint64{1},
		Settings: []Setting{
			{Name: "ok", Trace: testbed, Profile: gavel, Cluster: c},
			{Name: "nofile", Trace: TraceSpec{Name: "nofile", File: "bench/traces/no-such-trace.csv"}, Profile: gavel, Cluster: c},
		},
		Series:   []Series{{Name: "sjf-bsbf", Policy: "sjf-bsbf"}, {Name: "bogus", Policy: "no-such-policy", Variant: true}},
		Analysis: Analysis{Baselines: []string{"sjf-bsbf"}, Bars: true},
	}}
}

// TestFailureIsAResult checks that failing runs do not stop the sweep, are recorded in their
// directories and in failures.{json,md}, and that a planned run without output is "missing".
func TestFailureIsAResult(t *testing.T) {
	env := testEnv(t)
	table := failingTable()
	plan, err := expand(table)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	outcomes, err := Sweep(context.Background(), NewInputs(env), plan, out, SweepOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(outcomes) != 4 {
		t.Fatalf("%d outcomes, want 4", len(outcomes))
	}
	for _, o := range outcomes {
		dir := o.Run.Dir(out)
		_, sumErr := os.Stat(filepath.Join(dir, sim.SummaryFile))
		_, failErr := os.Stat(filepath.Join(dir, FailureFile))
		if o.Run.ID == "F/ok/sjf-bsbf/seed-1" {
			if o.Err != nil || sumErr != nil || failErr == nil {
				t.Errorf("%s: err %v, summary %v, failure record %v", o.Run.ID, o.Err, sumErr, failErr)
			}
			continue
		}
		if o.Err == nil || sumErr == nil || failErr != nil {
			t.Errorf("%s: err %v, summary %v, failure record %v", o.Run.ID, o.Err, sumErr, failErr)
		}
	}
	// A planned run that never ran is reported as missing.
	extra := plan[0]
	extra.ID, extra.Index = "F/never-ran/sjf-bsbf/seed-1", len(plan)
	plan = append(plan, extra)
	failures, err := aggregate(env, out, plan, table, AggregateOptions{Label: "t", Whole: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range failures {
		got[f.ID] = f.Error
	}
	for id, frag := range map[string]string{
		"F/ok/bogus/seed-1":           "unknown policy",
		"F/nofile/sjf-bsbf/seed-1":    "no-such-trace.csv",
		"F/nofile/bogus/seed-1":       "no-such-trace.csv",
		"F/never-ran/sjf-bsbf/seed-1": "missing",
	} {
		if !strings.Contains(got[id], frag) {
			t.Errorf("failure of %s = %q, want it to mention %q", id, got[id], frag)
		}
	}
	if len(failures) != 4 {
		t.Errorf("%d failures, want 4: %v", len(failures), failures)
	}
	data, err := os.ReadFile(filepath.Join(out, "failures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []Failure
	if err := json.Unmarshal(data, &listed); err != nil || len(listed) != 4 {
		t.Errorf("failures.json: %v, %d entries", err, len(listed))
	}
	md, err := os.ReadFile(filepath.Join(out, "failures.md"))
	if err != nil || !strings.Contains(string(md), "F/ok/bogus/seed-1") {
		t.Errorf("failures.md: %v\n%s", err, md)
	}
	// The working run's tables exist despite the failures.
	if _, err := os.Stat(filepath.Join(out, "F", tablesDir, "summary.md")); err != nil {
		t.Error(err)
	}
	// A successful rerun replaces the failure record.
	fixed := plan[1] // F/ok/bogus
	fixed.Policy = "sjf-bsbf"
	if err := fixed.RunWith(context.Background(), NewInputs(env), out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fixed.Dir(out), FailureFile)); err == nil {
		t.Error("failure.json survived a successful rerun")
	}
}

// TestRunTimeout checks that a run exceeding its time limit is recorded as failed.
func TestRunTimeout(t *testing.T) {
	env := testEnv(t)
	plan, err := expand(failingTable())
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	outcomes, err := Sweep(context.Background(), NewInputs(env), plan[:1], out, SweepOptions{RunTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomes[0]; o.Err == nil || !strings.Contains(o.Err.Error(), "time limit") {
		t.Fatalf("outcome %v", o.Err)
	}
	if _, err := os.Stat(filepath.Join(plan[0].Dir(out), FailureFile)); err != nil {
		t.Error(err)
	}
}

// TestSweepCancel checks that cancelling the context stops the sweep with an error and
// records no failure.
func TestSweepCancel(t *testing.T) {
	env := testEnv(t)
	plan, err := expand(failingTable())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := t.TempDir()
	if _, err := Sweep(ctx, NewInputs(env), plan, out, SweepOptions{Jobs: 1}); err == nil {
		t.Fatal("no error after cancellation")
	}
	if _, err := os.Stat(filepath.Join(plan[0].Dir(out), FailureFile)); err == nil {
		t.Error("a cancelled run was recorded as failed")
	}
}

// TestStartOrder checks that a sweep starts the runs of the largest traces first, in plan order
// among equals: trace files by their size, generated traces by their jobs.
func TestStartOrder(t *testing.T) {
	env := testEnv(t)
	needData(t, env)
	in := NewInputs(env)
	runs := []RunSpec{
		{Trace: TraceSpec{Gen: &GenSpec{Jobs: 10}}},
		{Trace: TraceSpec{File: "data:traces/muri-philly/trace3.csv"}},
		{Trace: TraceSpec{Gen: &GenSpec{Jobs: 500}}},
		{Trace: TraceSpec{File: "data:traces/muri-philly/trace2.csv"}},
		{Trace: TraceSpec{Gen: &GenSpec{Jobs: 10}}},
		{Trace: TraceSpec{File: "data:traces/none-such.csv"}},
	}
	// trace2 (374 kB) > trace3 (64 kB) > 500 generated jobs (50 kB) > 10 > a missing file.
	want := []int{3, 1, 2, 0, 4, 5}
	if got := startOrder(in, runs); !slices.Equal(got, want) {
		t.Errorf("start order %v, want %v", got, want)
	}
}

// TestPrune checks that run directories outside the plan and temporary leftovers are removed,
// and planned runs kept.
func TestPrune(t *testing.T) {
	out := t.TempDir()
	plan, err := expand(failingTable())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(rel, file string) {
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if file != "" {
			if err := os.WriteFile(filepath.Join(p, file), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk(plan[0].ID, sim.SummaryFile)
	mk("F/ok/old-series/seed-1", sim.SummaryFile)
	mk("F/gone/sjf-bsbf/seed-1", FailureFile)
	mk("F/ok/sjf-bsbf/.seed-2.tmp-123", "")
	mk("F/tables", "")
	removed, err := Prune(out, plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"F/gone/sjf-bsbf/seed-1", "F/ok/old-series/seed-1", "F/ok/sjf-bsbf/.seed-2.tmp-123"}
	for i := range removed {
		removed[i] = filepath.ToSlash(removed[i])
	}
	if strings.Join(removed, ",") != strings.Join(want, ",") {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if _, err := os.Stat(filepath.Join(plan[0].Dir(out), sim.SummaryFile)); err != nil {
		t.Error("a planned run was removed")
	}
}

// TestCoarsenUtil checks that merged buckets are the time-weighted averages, including the
// last, narrower bucket.
func TestCoarsenUtil(t *testing.T) {
	var rows []sim.UtilRow
	for i := range 10 {
		rows = append(rows, sim.UtilRow{T: time.Duration(i) * 10 * time.Second, Busy: float64(i), Pending: 1})
	}
	// Makespan 95 s: the last bucket [90, 95) is 5 s wide.
	got := coarsenUtil(rows, 95, 4)
	if len(got) != 4 {
		t.Fatalf("%d rows, want 4 (k = 3)", len(got))
	}
	want := []float64{1, 4, 7, 9}
	for i, r := range got {
		if math.Abs(r.Busy-want[i]) > 1e-12 || r.Pending != 1 || r.T != rows[3*i].T {
			t.Errorf("row %d = %+v, want busy %v at %v", i, r, want[i], rows[3*i].T)
		}
	}
	// Buckets 6..8 are [60,90): mean of 6, 7, 8 = 7; bucket 9 alone.
	if same := coarsenUtil(rows, 95, 0); len(same) != 10 {
		t.Error("maxRows 0 changed the rows")
	}
	rows2 := []sim.UtilRow{{T: 0, Busy: 2}, {T: 10 * time.Second, Busy: 4}}
	if got := coarsenUtil(rows2, 12, 1); len(got) != 1 || math.Abs(got[0].Busy-(2*10+4*2)/12.0) > 1e-12 {
		t.Errorf("partial last bucket: %+v", got)
	}
}

// TestKeepSample checks the jobs.csv sample.
func TestKeepSample(t *testing.T) {
	for _, c := range []struct{ rows, n, every int }{{0, 100, 1}, {50, 50, 1}, {50, 51, 2}, {1000, 82247, 83}, {50, 1000, 20}} {
		if got := (Keep{JobRows: c.rows}).jobsEvery(c.n); got != c.every {
			t.Errorf("JobRows %d, %d jobs: every %d, want %d", c.rows, c.n, got, c.every)
		}
	}
	jobs := make([]sim.JobResult, 10)
	for i := range jobs {
		jobs[i].ID = trace.JobID(i)
	}
	got := sampleJobs(jobs, 3)
	if len(got) != 4 || got[1].ID != 3 || got[3].ID != 9 {
		t.Errorf("sample %v", got)
	}
}

// TestScaleXi checks the interference transformation.
func TestScaleXi(t *testing.T) {
	env := testEnv(t)
	base, err := NewInputs(env).Profile(ProfileSpec{File: ProfileGavelV100})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []float64{0, 0.8, 1, 1.5} {
		st, err := ScaleXi(base, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Pairs) != len(base.Pairs) {
			t.Fatalf("scale %v: %d pairs, want %d", s, len(st.Pairs), len(base.Pairs))
		}
		for i, p := range st.Pairs {
			want := 1 + (math.Max(base.Pairs[i].Xi, 1)-1)*s
			if p.Xi < 1 || math.Abs(p.Xi-want) > 1e-8 || p.A != base.Pairs[i].A || p.B != base.Pairs[i].B {
				t.Fatalf("scale %v: pair %d: ξ %v, want %v", s, i, p.Xi, want)
			}
		}
	}
	if _, err := ScaleXi(base, -1); err == nil {
		t.Error("negative scale accepted")
	}
	for _, n := range base.Notes {
		if strings.Contains(n, "SCALED") || base.Source != "gavel" {
			t.Fatal("the base profile was modified")
		}
	}
}

// TestDeriveSubBatches checks the derived accumulation configurations against the stated
// model on Gavel's ResNet-50.
func TestDeriveSubBatches(t *testing.T) {
	env := testEnv(t)
	base, err := NewInputs(env).Profile(ProfileSpec{File: ProfileGavelV100})
	if err != nil {
		t.Fatal(err)
	}
	d, err := DeriveSubBatches(base, ProfileGavelV100)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.SubBatches("resnet50", 64); len(got) != 3 || got[0] != 64 || got[1] != 32 || got[2] != 16 {
		t.Fatalf("resnet50/64 sub-batches %v, want [64 32 16]", got)
	}
	for _, g := range []int{1, 2, 4, 8} {
		micro := profile.Config{Model: "resnet50", Batch: 16, SubBatch: 16}
		t1, _ := base.IterTime(micro, 1)
		tg, _ := base.IterTime(micro, g)
		got, ok := d.IterTime(profile.Config{Model: "resnet50", Batch: 64, SubBatch: 16}, g)
		want := tg + 3*min(t1, tg)
		full, _ := base.IterTime(profile.Config{Model: "resnet50", Batch: 64, SubBatch: 64}, g)
		want = max(want, full)
		if !ok || math.Abs(got.Seconds()-want.Seconds()) > 1e-6 {
			t.Errorf("resnet50 64/16 on %d GPUs: %v, want %v", g, got, want)
		}
	}
	// k micro-steps never beat one full-batch step (ResNet-50 at 64 with µ-batch 32 on 4 GPUs
	// would otherwise take 419.0 ms against 423.2 ms).
	for _, m := range d.Models {
		for _, c := range m.Configs {
			full, ok := base.Solo(profile.Config{Model: m.Name, Batch: c.Batch, SubBatch: c.Batch})
			if !ok || c.SubBatch == c.Batch {
				continue
			}
			for g, v := range c.IterS {
				if f, _ := full.IterS.At(g); v < f {
					t.Errorf("%s %d/%d on %d GPUs: %v s, faster than the full batch's %v s", m.Name, c.Batch, c.SubBatch, g, v, f)
				}
			}
		}
	}
	memDerived, est, _ := d.Mem(profile.Config{Model: "resnet50", Batch: 64, SubBatch: 32})
	memMicro, _, _ := base.Mem(profile.Config{Model: "resnet50", Batch: 32, SubBatch: 32})
	if memDerived != memMicro || !est {
		t.Errorf("derived memory %d (estimated %v), want %d", memDerived, est, memMicro)
	}
	a := profile.Config{Model: "resnet50", Batch: 64, SubBatch: 32}
	b := profile.Config{Model: "transformer", Batch: 128, SubBatch: 16}
	xi, ok := d.Slowdown(a, b, 1, profile.Timeslice)
	want, wantOK := base.Slowdown(profile.Config{Model: "resnet50", Batch: 32, SubBatch: 32}, profile.Config{Model: "transformer", Batch: 16, SubBatch: 16}, 1, profile.Timeslice)
	if ok != wantOK || xi != want {
		t.Errorf("derived ξ %v (%v), want %v (%v)", xi, ok, want, wantOK)
	}
	// The measured pairs are unchanged.
	for _, p := range base.Pairs {
		if got, ok := d.Slowdown(p.A, p.B, p.GPUs, p.Mode); !ok || got != p.Xi {
			t.Fatalf("measured pair %v|%v changed: %v", p.A, p.B, got)
		}
	}
	if d.Source != "derived" {
		t.Errorf("source %q", d.Source)
	}
}

// TestOfferedLoad checks the trace statistics on a hand-made trace.
func TestOfferedLoad(t *testing.T) {
	jobs := []trace.Job{
		{ID: 1, Submit: 0, GPUs: 2, Iters: 100, Model: "x", IterTime: time.Second},
		{ID: 2, Submit: 50 * time.Second, GPUs: 1, Iters: 10, Model: "x", IterTime: 2 * time.Second},
	}
	s, err := Stats(jobs, nil, nil, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if s.GPUSeconds != 220 || s.SpanS != 50 || s.MaxGPUs != 2 || s.MeanDurationS != 60 {
		t.Errorf("stats %+v", s)
	}
	if got := s.OfferedLoad(4); math.Abs(got-1.1) > 1e-12 {
		t.Errorf("offered load %v, want 1.1", got)
	}
}

// TestGeneratedLoad checks that a generated trace meets its target offered load under the
// profile, and is the same trace (up to arrival times) at every load.
func TestGeneratedLoad(t *testing.T) {
	env := testEnv(t)
	in := NewInputs(env)
	gavel := ProfileSpec{File: ProfileGavelV100, ModelMap: ModelMapGavel}
	prof, err := in.Profile(gavel)
	if err != nil {
		t.Fatal(err)
	}
	mm, err := in.ModelMap(ModelMapGavel)
	if err != nil {
		t.Fatal(err)
	}
	var first []trace.Job
	for _, load := range []float64{0.5, 2} {
		ts := TraceSpec{Name: "g", Gen: &GenSpec{Jobs: 200, Load: load, Pool: TraceTestbed61}}
		jobs, err := in.Jobs(ts, 7, prof, mm, 32, 48<<30)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Stats(jobs, prof, mm, 48<<30)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.OfferedLoad(32); math.Abs(got-load)/load > 1e-6 {
			t.Errorf("load %v: offered load %v", load, got)
		}
		if first == nil {
			first = jobs
			continue
		}
		for i := range jobs {
			if jobs[i].GPUs != first[i].GPUs || jobs[i].Iters != first[i].Iters || jobs[i].Model != first[i].Model {
				t.Fatalf("job %d differs between loads", i)
			}
		}
	}
}

// TestPermuteModels: a draw of a trace file keeps every job's arrival, GPU count and solo time
// and the trace's model mix, changes which job trains which model, and is the same for the
// same seed only.
func TestPermuteModels(t *testing.T) {
	env := testEnv(t)
	in := NewInputs(env)
	gavel := ProfileSpec{File: ProfileGavelV100, ModelMap: ModelMapGavel}
	prof, err := in.Profile(gavel)
	if err != nil {
		t.Fatal(err)
	}
	mm, err := in.ModelMap(ModelMapGavel)
	if err != nil {
		t.Fatal(err)
	}
	plain := TraceSpec{Name: "testbed61", File: TraceTestbed61, Format: "muri"}
	orig, err := in.Jobs(plain, 1, prof, mm, 32, 48<<30)
	if err != nil {
		t.Fatal(err)
	}
	perm := plain
	perm.PermuteModels = true
	draw := func(seed uint64) []trace.Job {
		jobs, err := in.Jobs(perm, seed, prof, mm, 32, 48<<30)
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	solo := func(j trace.Job) float64 {
		s, err := soloStep(j, prof, mm, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		return float64(j.Iters) * s.Seconds()
	}
	a, b := draw(1), draw(2)
	mix := func(jobs []trace.Job) map[string]int {
		m := map[string]int{}
		for _, j := range jobs {
			m[j.Model+"/"+strconv.Itoa(j.Batch)]++
		}
		return m
	}
	moved := 0
	for i := range orig {
		o, x := orig[i], a[i]
		if o.ID != x.ID || o.Submit != x.Submit || o.GPUs != x.GPUs {
			t.Fatalf("job %d: arrival or size changed: %+v → %+v", o.ID, o, x)
		}
		// The rounding of iterations moves the solo time by at most one step.
		if d := math.Abs(solo(x) - solo(o)); d > solo(x)/float64(x.Iters)+1e-6 {
			t.Errorf("job %d: solo time %v → %v", o.ID, solo(o), solo(x))
		}
		if o.Model != x.Model {
			moved++
		}
	}
	if moved == 0 || !reflect.DeepEqual(mix(orig), mix(a)) {
		t.Errorf("%d jobs changed models; mix %v → %v", moved, mix(orig), mix(a))
	}
	if !reflect.DeepEqual(a, draw(1)) || reflect.DeepEqual(a, b) {
		t.Error("a draw is not a function of its seed")
	}
}

// TestRunMetrics checks the metrics summary.json carries beyond the simulator's on a result
// of three jobs.
func TestRunMetrics(t *testing.T) {
	s := time.Second
	res := &sim.Result{Summary: sim.Summary{GPUs: 4}, Jobs: []sim.JobResult{
		{GPUs: 2, Batch: 64, SubBatch: 64, JCT: 10 * s, Solo: 10 * s, End: 10 * s},
		{GPUs: 1, Batch: 64, SubBatch: 32, JCT: 20 * s, Solo: 10 * s, End: 20 * s},
		{GPUs: 1, Batch: 64, SubBatch: 64, JCT: 40 * s, Solo: 10 * s, End: 40 * s},
	}}
	m := ComputeMetrics(res)
	// Slowdowns 1, 2, 4: mean 7/3; p95 and p99 the largest; Jain 49 / (3 · 21).
	want := RunMetrics{SlowdownMean: round6(7.0 / 3), SlowdownP95: 4, SlowdownP99: 4, SlowdownFairness: round6(49.0 / 63),
		EffectiveGPUUtil: round6(40.0 / (4 * 40)), SubBatchJobs: 1}
	if m != want {
		t.Errorf("metrics %+v, want %+v", m, want)
	}
	var buf bytes.Buffer
	if err := writeSummary(&buf, res, "ξ scaled ×0.5"); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["gpus"] != 4.0 || got["slowdown_p99"] != 4.0 || got["counterfactual"] != "ξ scaled ×0.5" {
		t.Errorf("summary.json %v", got)
	}
}
