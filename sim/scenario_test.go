package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// cfgSpec is one configuration of a hand-made scenario profile.
type cfgSpec struct {
	sub    int
	iterS  float64
	memGiB float64
}

// scenario builds small hand-made profiles and traces for scenario tests.
type scenario struct {
	t      *testing.T
	tab    profile.Table
	shape  cluster.Shape
	jobs   []trace.Job
	cfg    Config
	events []Event
}

func newScenario(t *testing.T, nodes, gpus int, memGiB float64) *scenario {
	t.Helper()
	return &scenario{t: t,
		tab:   profile.Table{GPU: "scenario GPU", Source: "test", DefaultRestartS: 0},
		shape: cluster.Shape{Nodes: nodes, GPUsPerNode: gpus, GPUMemBytes: int64(memGiB * float64(cluster.GiB)), MaxShare: 2}}
}

// model adds a model at batch 64 with the given configurations (the first is sub-batch 64).
func (s *scenario) model(name string, cfgs ...cfgSpec) *scenario {
	m := profile.Model{Name: name, DefaultBatch: 64}
	for _, c := range cfgs {
		m.Configs = append(m.Configs, profile.Solo{Batch: 64, SubBatch: c.sub, IterS: profile.GPUMap{1: c.iterS},
			MemBytes: int64(c.memGiB * float64(cluster.GiB))})
	}
	s.tab.Models = append(s.tab.Models, m)
	return s
}

// pair sets ξ of a (at sub-batch sa) next to b (at sub-batch sb).
func (s *scenario) pair(a string, sa int, b string, sb int, xi float64) *scenario {
	s.tab.Pairs = append(s.tab.Pairs, profile.Pair{A: profile.Config{Model: a, Batch: 64, SubBatch: sa},
		B: profile.Config{Model: b, Batch: 64, SubBatch: sb}, GPUs: 1, Mode: profile.Timeslice, Xi: xi})
	return s
}

func (s *scenario) job(id int, model string, gpus int, submitS float64, iters int64) *scenario {
	s.jobs = append(s.jobs, trace.Job{ID: trace.JobID(id), Model: model, GPUs: gpus, Batch: 64,
		Submit: profile.Seconds(submitS), Iters: iters, Line: id + 1})
	return s
}

// run simulates the scenario under spec and returns the result; events are kept in s.events.
func (s *scenario) run(spec string) *Result {
	s.t.Helper()
	if err := s.tab.Normalize(); err != nil {
		s.t.Fatal(err)
	}
	p, err := builtin.Registry().New(spec)
	if err != nil {
		s.t.Fatal(err)
	}
	s.events = nil
	cfg := s.cfg
	cfg.Shape, cfg.TraceName = s.shape, "scenario"
	r, err := Run(context.Background(), cfg, s.jobs, p, &s.tab, func(e Event) { s.events = append(s.events, e) })
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

func (s *scenario) jct(r *Result, id int) float64 {
	for _, j := range r.Jobs {
		if j.ID == trace.JobID(id) {
			return j.JCT.Seconds()
		}
	}
	s.t.Fatalf("no job %d", id)
	return 0
}

// log renders the start, preempt and queue events compactly, e.g. "10.000 start 2 [0-0] with [1]".
func (s *scenario) log() string {
	var b strings.Builder
	for _, e := range s.events {
		switch e.Kind {
		case Start:
			fmt.Fprintf(&b, "%.3f start %d %v sub %d with %v\n", e.T.Seconds(), e.Job, e.GPUs, e.SubBatch, e.Partners)
		case Preempt, Demote, Promote:
			fmt.Fprintf(&b, "%.3f %s %d\n", e.T.Seconds(), e.Kind, e.Job)
		}
	}
	return b.String()
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

func TestBSBFSharesWhenItPays(t *testing.T) {
	// Running job 1 (1000 s) and a short newcomer 2 (100 s): case B, t_con = 578.6 < t_seq = 1040.
	s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).model("b", cfgSpec{64, 1, 8}).
		pair("b", 64, "a", 64, 1.3).pair("a", 64, "b", 64, 1.4).
		job(1, "a", 1, 0, 1000).job(2, "b", 1, 10, 100)
	r := s.run("sjf-bsbf")
	if want := "0.000 start 1 [0-0] sub 64 with []\n10.000 start 2 [0-0] sub 64 with [1]\n"; s.log() != want {
		t.Fatalf("log:\n%s\nwant:\n%s", s.log(), want)
	}
	// Job 2 runs at 1/1.3 from 10 s; job 1 does 10 + 130/1.4 iterations by 140 s, the rest alone.
	if !near(s.jct(r, 2), 130) || !near(s.jct(r, 1), 140+1000-10-130/1.4) {
		t.Errorf("JCTs %v %v", s.jct(r, 1), s.jct(r, 2))
	}
	if r.Summary.SharedJobs != 2 {
		t.Errorf("shared jobs %d, want 2", r.Summary.SharedJobs)
	}
}

func TestBSBFWaitsWhereFFSShares(t *testing.T) {
	// Job 1 (100 s) runs; job 2 (1000 s) arrives at 10 s. Case A with ξ = 1.6 ≥ 2ξ/(2ξ−1) ≈ 1.45:
	// waiting is better, and SJF-FFS, which shares anyway, ends up worse on average.
	mk := func() *scenario {
		return newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).model("b", cfgSpec{64, 1, 8}).
			pair("a", 64, "b", 64, 1.6).pair("b", 64, "a", 64, 1.6).
			job(1, "a", 1, 0, 100).job(2, "b", 1, 10, 1000)
	}
	s := mk()
	r := s.run("sjf-bsbf")
	if want := "0.000 start 1 [0-0] sub 64 with []\n100.000 start 2 [0-0] sub 64 with []\n"; s.log() != want {
		t.Fatalf("bsbf log:\n%s", s.log())
	}
	bsbf := r.Summary.AvgJCT
	s = mk()
	r = s.run("sjf-ffs")
	if want := "0.000 start 1 [0-0] sub 64 with []\n10.000 start 2 [0-0] sub 64 with [1]\n"; s.log() != want {
		t.Fatalf("ffs log:\n%s", s.log())
	}
	// FFS: job 1 ends at 10 + 90·1.6 = 154; job 2 has done 144/1.6 = 90 iterations by then.
	if !near(s.jct(r, 1), 154) || !near(s.jct(r, 2), 154+910-10) {
		t.Errorf("ffs JCTs %v %v", s.jct(r, 1), s.jct(r, 2))
	}
	if !(bsbf < r.Summary.AvgJCT) {
		t.Errorf("bsbf avg JCT %v not below ffs %v", bsbf, r.Summary.AvgJCT)
	}
}

func TestIdleGPUsFirst(t *testing.T) {
	for _, spec := range []string{"sjf-bsbf", "sjf-ffs"} {
		s := newScenario(t, 1, 2, 48).model("a", cfgSpec{64, 1, 8}).pair("a", 64, "a", 64, 1.1).
			job(1, "a", 1, 0, 1000).job(2, "a", 1, 5, 1000)
		s.run(spec)
		if want := "0.000 start 1 [0-0] sub 64 with []\n5.000 start 2 [0-1] sub 64 with []\n"; s.log() != want {
			t.Errorf("%s log:\n%s", spec, s.log())
		}
	}
}

func TestBSBFMultiPartner(t *testing.T) {
	// Two long jobs hold the two GPUs; a short 2-GPU job shares with both, best benefit first.
	s := newScenario(t, 1, 2, 48).model("a", cfgSpec{64, 1, 8}).model("b", cfgSpec{64, 1, 8}).model("c", cfgSpec{64, 1, 8}).
		pair("c", 64, "a", 64, 1.2).pair("a", 64, "c", 64, 1.2).pair("c", 64, "b", 64, 1.1).pair("b", 64, "c", 64, 1.1).
		job(1, "a", 1, 0, 5000).job(2, "b", 1, 0, 5000).job(3, "c", 2, 1, 100)
	s.run("sjf-bsbf")
	want := "0.000 start 1 [0-0] sub 64 with []\n0.000 start 2 [0-1] sub 64 with []\n1.000 start 3 [0-0 0-1] sub 64 with [2 1]\n"
	if s.log() != want {
		t.Errorf("log:\n%s\nwant:\n%s", s.log(), want)
	}
}

func TestMissingPairNeverShared(t *testing.T) {
	for _, spec := range []string{"sjf-bsbf", "sjf-ffs"} {
		s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).model("b", cfgSpec{64, 1, 8}).
			pair("a", 64, "b", 64, 1.1). // b next to a is missing
			job(1, "a", 1, 0, 100).job(2, "b", 1, 10, 10)
		r := s.run(spec)
		if want := "0.000 start 1 [0-0] sub 64 with []\n100.000 start 2 [0-0] sub 64 with []\n"; s.log() != want {
			t.Errorf("%s log:\n%s", spec, s.log())
		}
		if r.Summary.MissingPairs != 1 {
			t.Errorf("%s: missing pairs %d, want 1", spec, r.Summary.MissingPairs)
		}
	}
}

func TestSubBatchChoice(t *testing.T) {
	// A 10 GiB GPU holds job 1 at sub-batch 64 (6 GiB). Job 2 of the same model fits next to it
	// only at sub-batch 32 (3 GiB): chosen by sjf-bsbf and sjf-ffs, refused by sjf-bsbf-fixed.
	mk := func() *scenario {
		return newScenario(t, 1, 1, 10).model("a", cfgSpec{64, 1, 6}, cfgSpec{32, 1.1, 3}).
			pair("a", 64, "a", 32, 1.2).pair("a", 32, "a", 64, 1.2).pair("a", 64, "a", 64, 1.2).pair("a", 32, "a", 32, 1.2).
			job(1, "a", 1, 0, 1000).job(2, "a", 1, 10, 50)
	}
	for spec, want := range map[string]string{
		"sjf-bsbf":       "0.000 start 1 [0-0] sub 64 with []\n10.000 start 2 [0-0] sub 32 with [1]\n",
		"sjf-ffs":        "0.000 start 1 [0-0] sub 64 with []\n10.000 start 2 [0-0] sub 32 with [1]\n",
		"sjf-bsbf-fixed": "0.000 start 1 [0-0] sub 64 with []\n1000.000 start 2 [0-0] sub 64 with []\n",
	} {
		s := mk()
		s.run(spec)
		if s.log() != want {
			t.Errorf("%s log:\n%s\nwant:\n%s", spec, s.log(), want)
		}
	}
}

func TestTiresiasDemotionAtThreshold(t *testing.T) {
	s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).
		job(1, "a", 1, 0, 1000).job(2, "a", 1, 50, 1000)
	r := s.run(`tiresias{"limits_s":[100],"service":"time"}`)
	// Job 1 is demoted the instant it has run 100 s; job 2 (queue 0) preempts it; job 2 is demoted
	// at 200 s and job 1, first to enter queue 1, takes the GPU back and finishes.
	want := "0.000 start 1 [0-0] sub 64 with []\n100.000 demote 1\n100.000 preempt 1\n100.000 start 2 [0-0] sub 64 with []\n" +
		"200.000 demote 2\n200.000 preempt 2\n200.000 start 1 [0-0] sub 64 with []\n1100.000 start 2 [0-0] sub 64 with []\n"
	if s.log() != want {
		t.Errorf("log:\n%s\nwant:\n%s", s.log(), want)
	}
	if !near(s.jct(r, 1), 1100) || !near(s.jct(r, 2), 2000-50) {
		t.Errorf("JCTs %v %v", s.jct(r, 1), s.jct(r, 2))
	}
}

func TestTiresiasGPUTimeService(t *testing.T) {
	// With GPU-time service a 2-GPU job crosses a 100 GPU-second limit after 50 s.
	s := newScenario(t, 1, 2, 48).model("a", cfgSpec{64, 1, 8}).job(1, "a", 2, 0, 1000)
	s.run(`tiresias{"limits_s":[100],"service":"gpu-time"}`)
	if want := "0.000 start 1 [0-0 0-1] sub 64 with []\n50.000 demote 1\n"; s.log() != want {
		t.Errorf("log:\n%s", s.log())
	}
}

func TestSJFPreemptionFilter(t *testing.T) {
	// Job 2 (10 s) arrives when job 1 has 500 iterations left: job 1 is preempted. When job 1 has
	// only 95 left it is not (the authors' > 100 iterations rule).
	for _, tc := range []struct {
		at   float64
		want string
	}{
		{500, "0.000 start 1 [0-0] sub 64 with []\n500.000 preempt 1\n500.000 start 2 [0-0] sub 64 with []\n510.000 start 1 [0-0] sub 64 with []\n"},
		{905, "0.000 start 1 [0-0] sub 64 with []\n1000.000 start 2 [0-0] sub 64 with []\n"},
	} {
		s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).job(1, "a", 1, 0, 1000).job(2, "a", 1, tc.at, 10)
		s.run("sjf")
		if s.log() != tc.want {
			t.Errorf("at %v log:\n%s\nwant:\n%s", tc.at, s.log(), tc.want)
		}
	}
}

func TestRestartCost(t *testing.T) {
	// Job 2 preempts job 1 at 500 s; job 1 resumes at 510 s and sits out its restart cost before
	// its last 500 iterations. Model "vgg16" costs 7 s on 1 GPU in the lineage's table, model
	// "a" is outside it (10 s).
	for _, tc := range []struct {
		model, cost string
		profileS    float64
		want        float64
	}{
		{"a", "auto", 3, 3}, {"a", "auto", 0, 10}, {"vgg16", "auto", 0, 7}, {"vgg16", "lineage", 3, 7},
		{"vgg16", "profile", 0, 0}, {"vgg16", "profile", 3, 3}, {"a", "2.5", 3, 2.5}, {"a", "off", 3, 0},
	} {
		s := newScenario(t, 1, 1, 48).model(tc.model, cfgSpec{64, 1, 8}).job(1, tc.model, 1, 0, 1000).job(2, tc.model, 1, 500, 10)
		s.tab.DefaultRestartS = tc.profileS
		var err error
		if s.cfg.Restart, err = ParseRestartCost(tc.cost); err != nil {
			t.Fatal(err)
		}
		r := s.run("sjf")
		if !near(s.jct(r, 1), 510+tc.want+500) {
			t.Errorf("%+v: job 1 JCT %v, want %v", tc, s.jct(r, 1), 510+tc.want+500)
		}
		if r.Summary.Preemptions != 1 || !near(r.Summary.RestartS, tc.want) {
			t.Errorf("%+v: summary preemptions %d, restart %v s", tc, r.Summary.Preemptions, r.Summary.RestartS)
		}
	}
	for _, bad := range []string{"-1", "x", "NaN", "1e300"} {
		if _, err := ParseRestartCost(bad); err == nil {
			t.Errorf("ParseRestartCost(%q) accepted", bad)
		}
	}
}

func TestMemoryFallback(t *testing.T) {
	// The profile knows no memory for model "x". Trace jobs of the authors' dqn (2,230 MiB) and
	// a2c (2,094 MiB) mapped onto it share a 16 GiB GPU under sjf-ffs; jobs of "foo" fill the GPU.
	mk := func(a, b string) *scenario {
		s := newScenario(t, 1, 1, 16).model("x", cfgSpec{64, 1, 0}).pair("x", 64, "x", 64, 1.5)
		s.cfg.ModelMap = &profile.ModelMap{Rules: []profile.MapRule{{TraceModel: a, Model: "x"}, {TraceModel: b, Model: "x"}}}
		return s.job(1, a, 1, 0, 100).job(2, b, 1, 10, 100)
	}
	s := mk("dqn", "a2c")
	r := s.run("sjf-ffs")
	if want := "0.000 start 1 [0-0] sub 64 with []\n10.000 start 2 [0-0] sub 64 with [1]\n"; s.log() != want {
		t.Errorf("dqn and a2c log:\n%s\nwant:\n%s", s.log(), want)
	}
	if notes := strings.Join(r.Summary.Notes, "\n"); !strings.Contains(notes, "authors' 2230 MiB") || !strings.Contains(notes, "authors' 2094 MiB") {
		t.Errorf("notes do not name the fallback:\n%s", notes)
	}
	s = mk("foo", "bar")
	r = s.run("sjf-ffs")
	if want := "0.000 start 1 [0-0] sub 64 with []\n100.000 start 2 [0-0] sub 64 with []\n"; s.log() != want {
		t.Errorf("foo and bar log:\n%s\nwant:\n%s", s.log(), want)
	}
	if notes := strings.Join(r.Summary.Notes, "\n"); !strings.Contains(notes, "no memory figure for foo (profile model x) and the authors' table has none") {
		t.Errorf("notes do not say the jobs fill their GPUs:\n%s", notes)
	}
}

func TestLineageEffects(t *testing.T) {
	// Muri's simulator subtracts a job's overhead (vgg16 on 1 GPU: 7 s) from its progress at every
	// event: at 100 s (7 s lost) and at 103 s (3 s, all it did since). Job 1 ends at 1010 s.
	s := newScenario(t, 1, 1, 48).model("vgg16", cfgSpec{64, 1, 8}).
		job(1, "vgg16", 1, 0, 1000).job(2, "vgg16", 1, 100, 10).job(3, "vgg16", 1, 103, 10)
	s.cfg.OverheadEveryEvent = true
	r := s.run("fifo")
	if !near(s.jct(r, 1), 1010) {
		t.Errorf("job 1 JCT %v, want 1010", s.jct(r, 1))
	}
	// Muri also multiplies every iteration time by 1.015.
	s = newScenario(t, 1, 1, 48).model("vgg16", cfgSpec{64, 1, 8}).job(1, "vgg16", 1, 0, 1000)
	s.cfg.IterScale = 1.015
	if r := s.run("fifo"); !near(s.jct(r, 1), 1015) {
		t.Errorf("job 1 JCT %v with step times ×1.015, want 1015", s.jct(r, 1))
	}
}

func TestIntervalScheduling(t *testing.T) {
	s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).job(1, "a", 1, 10, 100).job(2, "a", 1, 20, 100)
	s.cfg.Interval = 150 * time.Second
	s.run("fifo")
	// Rounds at 150 s and 300 s: job 1 waits for the first round, job 2 for the round after job 1
	// finishes at 250 s.
	if want := "150.000 start 1 [0-0] sub 64 with []\n300.000 start 2 [0-0] sub 64 with []\n"; s.log() != want {
		t.Errorf("log:\n%s", s.log())
	}
}

func TestIllegalInputs(t *testing.T) {
	s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}).job(1, "zzz", 1, 0, 10)
	if err := s.tab.Normalize(); err != nil {
		t.Fatal(err)
	}
	p, _ := builtin.Registry().New("fifo")
	_, err := Run(context.Background(), Config{Shape: s.shape, TraceName: "t.csv"}, s.jobs, p, &s.tab, nil)
	if err == nil || !strings.Contains(err.Error(), `t.csv:2: job 1: unknown model "zzz" (known: a)`) {
		t.Errorf("err = %v", err)
	}
	s = newScenario(t, 1, 1, 4).model("a", cfgSpec{64, 1, 8}).job(1, "a", 1, 0, 10)
	s.tab.Normalize()
	_, err = Run(context.Background(), Config{Shape: s.shape, TraceName: "t.csv"}, s.jobs, p, &s.tab, nil)
	if err == nil || !strings.Contains(err.Error(), "needs 8.0 GiB per GPU") {
		t.Errorf("err = %v", err)
	}
}

func TestSubBatchWaitBaseline(t *testing.T) {
	// Sharing at sub-batch 32 (1.5 s per step, ξ 1.3) gives t_con = 155 s; waiting means running
	// alone later at the faster sub-batch 64, so t_seq = 100 + 100/2 = 150 s and the job waits.
	s := newScenario(t, 1, 1, 48).model("a", cfgSpec{64, 1, 8}, cfgSpec{32, 1.5, 4}).model("b", cfgSpec{64, 1, 8}).
		pair("a", 64, "b", 64, 1.6).pair("b", 64, "a", 64, 1.6).pair("a", 32, "b", 64, 1.3).pair("b", 64, "a", 32, 1.3).
		job(1, "b", 1, 0, 100).job(2, "a", 1, 0, 100)
	r := s.run("sjf-bsbf")
	if want := "0.000 start 1 [0-0] sub 64 with []\n100.000 start 2 [0-0] sub 64 with []\n"; s.log() != want {
		t.Errorf("log:\n%s", s.log())
	}
	if r.Summary.AvgJCT != 150 {
		t.Errorf("avg JCT %v, want 150", r.Summary.AvgJCT)
	}
}

func TestVictimShareCheckedAtNow(t *testing.T) {
	// 1 GPU of 16 GiB. Job 1 ("x", 1,000 iterations) runs at sub-batch 64 (10 GiB). Job 2 ("z",
	// 200 iterations, 8 GiB) arrives at 500 s: it cannot share (memory) and preempts job 1, which
	// the same pass places back next to job 2 at sub-batch 32 (4 GiB), because with its 500
	// iterations left at 500 s (not its 1,000 at its last start) t_con = 420 < t_seq = 450.
	s := newScenario(t, 1, 1, 16).model("x", cfgSpec{64, 1, 10}, cfgSpec{32, 1.2, 4}).model("z", cfgSpec{64, 1, 8}).
		pair("x", 32, "z", 64, 1.1).pair("z", 64, "x", 32, 1.1).pair("x", 64, "z", 64, 1.1).pair("z", 64, "x", 64, 1.1).
		job(1, "x", 1, 0, 1000).job(2, "z", 1, 500, 200)
	s.run("sjf-bsbf-preempt")
	want := "0.000 start 1 [0-0] sub 64 with []\n500.000 preempt 1\n500.000 start 2 [0-0] sub 64 with []\n500.000 start 1 [0-0] sub 32 with [2]\n"
	if s.log() != want {
		t.Errorf("log:\n%s\nwant:\n%s", s.log(), want)
	}
}

func TestNoPreemptionOfAPlannedPartner(t *testing.T) {
	// 1x2 GPUs, sjf-ffs-preempt. Jobs 1 and 2 run; at 100 s job 3 (1 GPU) shares job 1's GPU and
	// job 4 (2 GPUs) finds too little room. Job 1 cannot be preempted for job 4 in the pass that
	// starts job 3 next to it (job 3's start assumes its partner); job 2 is, and, as job 4 still
	// does not fit, is placed back where it was, so nothing is preempted.
	s := newScenario(t, 1, 2, 48).model("a", cfgSpec{64, 1, 8}).pair("a", 64, "a", 64, 1.5).
		job(1, "a", 1, 0, 5000).job(2, "a", 1, 0, 10000).job(3, "a", 1, 100, 100).job(4, "a", 2, 100, 200)
	s.run("sjf-ffs-preempt")
	want := "0.000 start 1 [0-0] sub 64 with []\n0.000 start 2 [0-1] sub 64 with []\n100.000 start 3 [0-0] sub 64 with [1]\n"
	if got := s.log(); !strings.HasPrefix(got, want) || strings.Contains(got, "100.000 preempt") {
		t.Errorf("log:\n%s\nwant it to begin:\n%s", got, want)
	}
}

func TestSharedOnlyThanksToSubBatch(t *testing.T) {
	// 1 GPU of 16 GiB. Job 1 runs at sub-batch 64 (10 GiB); job 2 fits next to it only at
	// sub-batch 32 (4 GiB), and shares there: counted, with the breakdowns by model and size.
	s := newScenario(t, 1, 1, 16).model("a", cfgSpec{64, 1, 10}, cfgSpec{32, 1.2, 4}).
		pair("a", 64, "a", 64, 1.1).pair("a", 32, "a", 64, 1.1).pair("a", 64, "a", 32, 1.1).pair("a", 32, "a", 32, 1.1).
		job(1, "a", 1, 0, 1000).job(2, "a", 1, 10, 50)
	r := s.run("sjf-bsbf")
	if want := "0.000 start 1 [0-0] sub 64 with []\n10.000 start 2 [0-0] sub 32 with [1]\n"; s.log() != want {
		t.Fatalf("log:\n%s\nwant:\n%s", s.log(), want)
	}
	if r.Summary.SubBatchSharedJobs != 1 {
		t.Errorf("subbatch_shared_jobs %d, want 1", r.Summary.SubBatchSharedJobs)
	}
	if len(r.Summary.ByModel) != 1 || r.Summary.ByModel[0].Key != "a" || r.Summary.ByModel[0].Jobs != 2 ||
		len(r.Summary.ByGPUs) != 1 || r.Summary.ByGPUs[0].Key != "1" || !near(r.Summary.ByGPUs[0].AvgJCT, r.Summary.AvgJCT) {
		t.Errorf("breakdowns %+v %+v", r.Summary.ByModel, r.Summary.ByGPUs)
	}
}
