package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// runJobs runs jobs under spec on 1x2 GPUs with prof (nil: trace iteration times).
func runJobs(t *testing.T, spec string, cfg Config, jobs []trace.Job, prof *profile.Table) (*Result, error) {
	t.Helper()
	p, err := builtin.Registry().New(spec)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Shape.Nodes == 0 {
		cfg.Shape = cluster.Shape{Nodes: 1, GPUsPerNode: 2, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	}
	cfg.TraceName = "x.csv"
	return Run(context.Background(), cfg, jobs, p, prof, nil)
}

// wantErr checks that err is one line holding every part of want.
func wantErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error of more than one line:\n%s", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

// horizonProfile has one model whose step takes stepS seconds; a and a share at ξ = xi.
func horizonProfile(t *testing.T, stepS, xi float64) *profile.Table {
	t.Helper()
	c := profile.Config{Model: "a", Batch: 32, SubBatch: 32}
	tab := &profile.Table{GPU: "test", Source: "test", Models: []profile.Model{{Name: "a", DefaultBatch: 32,
		Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: stepS}, MemBytes: cluster.GiB}}}},
		Pairs: []profile.Pair{{A: c, B: c, GPUs: 1, Mode: profile.Timeslice, Xi: xi}}}
	if err := tab.Normalize(); err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestHorizonInputs: inputs whose solo run alone passes the horizon are positioned one-line
// errors (they once panicked with "time went backwards" or looped in the utilisation
// accumulator).
func TestHorizonInputs(t *testing.T) {
	prof := horizonProfile(t, 1, 1.5)
	job := func(submit time.Duration, iters int64, iterTime time.Duration) []trace.Job {
		return []trace.Job{{ID: 7, Line: 3, Model: "a", Batch: 32, GPUs: 1, Submit: submit, Iters: iters, IterTime: iterTime}}
	}
	_, err := runJobs(t, "fifo", Config{}, job(0, math.MaxInt64, 0), prof)
	wantErr(t, err, "x.csv:3: job 7: 9223372036854775807 × 1 s per step (a/32/32) ends after more than 292 years, beyond the 100-year horizon")
	_, err = runJobs(t, "fifo", Config{}, job(0, 1e12, 1000*time.Second), nil)
	wantErr(t, err, "x.csv:3: job 7: 1000000000000 × 1000 s per step", "beyond the 100-year horizon")
	_, err = runJobs(t, "fifo", Config{}, job(9223372036*time.Second, 1, time.Second), nil)
	wantErr(t, err, "x.csv:3: job 7: submits after 292.5 years, beyond the 100-year horizon")
	_, err = runJobs(t, "sjf", Config{IterScale: 1e6}, job(0, 1e8, 0), prof)
	wantErr(t, err, "x.csv:3: job 7:", "beyond the 100-year horizon")
	_, err = runJobs(t, "sjf", Config{IterScale: 1e-6}, job(0, 10, time.Nanosecond), nil)
	wantErr(t, err, "x.csv:3: job 7: step time of a/32 (trace) below a nanosecond")
	// At the edge: a job that ends exactly at the horizon runs.
	r, err := runJobs(t, "fifo", Config{}, job(Horizon-time.Hour, 3600, time.Second), nil)
	if err != nil || r.Jobs[0].End != Horizon {
		t.Fatalf("a job ending at the horizon: %v", err)
	}
	if len(r.Util) == 0 || len(r.Util) > maxBuckets {
		t.Errorf("%d utilisation rows", len(r.Util))
	}
}

// TestHorizonSchedule: a schedule that passes the horizon only as it runs (queueing, a slowdown
// of up to simtime.MaxSlowdown) ends with an error naming a job.
func TestHorizonSchedule(t *testing.T) {
	year := 365 * 24 * time.Hour
	// Two 60-year jobs on one GPU, one after the other: the second would end after 120 years.
	jobs := []trace.Job{
		{ID: 1, Line: 2, Model: "a", Batch: 32, GPUs: 2, Iters: 60, IterTime: year},
		{ID: 2, Line: 3, Model: "a", Batch: 32, GPUs: 2, Iters: 60, IterTime: year},
	}
	_, err := runJobs(t, "fifo", Config{}, jobs, nil)
	wantErr(t, err, "x.csv:3: job 2: the schedule of policy fifo runs past the 100-year horizon: the job would end after 120 years")
	// Sharing at ξ = 1000 (the bound) stretches a 1-year job to 1000 years.
	prof := horizonProfile(t, 1, simtime.MaxSlowdown)
	n := int64(year / time.Second)
	share := []trace.Job{
		{ID: 1, Line: 2, Model: "a", Batch: 32, GPUs: 1, Iters: n},
		{ID: 2, Line: 3, Model: "a", Batch: 32, GPUs: 1, Iters: n},
	}
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	_, err = runJobs(t, "sjf-ffs", Config{Shape: shape}, share, prof)
	wantErr(t, err, "the schedule of policy sjf-ffs runs past the 100-year horizon", "beyond the 100-year horizon")
	// With a slowdown that fits, the same jobs finish.
	if _, err := runJobs(t, "sjf-ffs", Config{Shape: shape}, share, horizonProfile(t, 1, 20)); err != nil {
		t.Fatal(err)
	}
	// A restart cost of a year after every preemption, interval rounds at the bounds.
	for _, iv := range []time.Duration{MinInterval, MaxInterval} {
		cfg := Config{Interval: iv, Restart: RestartCost{Source: RestartFixed, Fixed: simtime.MaxRestart}}
		if _, err := runJobs(t, "tiresias", cfg, []trace.Job{{ID: 1, Model: "a", Batch: 32, GPUs: 1, Iters: 10, IterTime: time.Second}}, nil); err != nil {
			t.Errorf("interval %v: %v", iv, err)
		}
	}
	for _, iv := range []time.Duration{-1, time.Microsecond, MaxInterval + 1, simtime.Never} {
		_, err := runJobs(t, "fifo", Config{Interval: iv}, jobs[:1], nil)
		wantErr(t, err, "scheduling interval")
	}
}

// TestUtilAccBounded: the accumulator stays within its buckets and ends for any interval in the
// int64 range (it once doubled its bucket width forever past ~285 years).
func TestUtilAccBounded(t *testing.T) {
	var u utilAcc
	u.init(8)
	u.add(0, time.Second, 8, 0, 1, 0)
	u.add(time.Second, Horizon, 4, 2, 1, 3)
	u.add(Horizon, simtime.Never, 1, 0, 1, 0)
	if len(u.b) > maxBuckets || u.width <= 0 {
		t.Fatalf("%d buckets of %v", len(u.b), u.width)
	}
	if rows := u.rows(simtime.Never); len(rows) == 0 || len(rows) > maxBuckets {
		t.Fatalf("%d rows", len(rows))
	}
}

// TestCancelStopsRun: a cancelled context ends a run at its next step, whatever it is doing
// (here: scheduling rounds every millisecond for a year), without waiting for time.
func TestCancelStopsRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rounds := 0
	p, _ := builtin.Registry().New("fifo")
	counting := countingPolicy{p, func() {
		if rounds++; rounds == 1000 {
			cancel()
		}
	}}
	year := 365 * 24 * time.Hour
	jobs := []trace.Job{
		{ID: 1, Model: "a", Batch: 32, GPUs: 1, Iters: 1, IterTime: year},
		{ID: 2, Model: "a", Batch: 32, GPUs: 1, Iters: 1, IterTime: time.Second},
	}
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: cluster.GiB, MaxShare: 1}
	_, err := Run(ctx, Config{Shape: shape, Interval: time.Millisecond, TraceName: "x"}, jobs, counting, nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rounds > 1000+64 {
		t.Errorf("%d scheduling rounds after the cancellation", rounds-1000)
	}
}

// countingPolicy calls fn at every scheduling pass.
type countingPolicy struct {
	policy.Policy
	fn func()
}

func (c countingPolicy) Key(j *policy.Job) policy.Key {
	if k, ok := c.Policy.(policy.Keyer); ok {
		return k.Key(j)
	}
	return policy.Key{} // the engine's order for a policy that is not a Keyer
}

func (c countingPolicy) Schedule(s *policy.State) (policy.Plan, error) {
	c.fn()
	return c.Policy.Schedule(s)
}

// TestProgress checks that Config.Progress hears of every finished job, in order, with the
// number of the run's jobs (some of which have not arrived yet), and that listening changes
// nothing.
func TestProgress(t *testing.T) {
	t.Parallel()
	jobs := make([]trace.Job, 6)
	for i := range jobs {
		// Two at once on 1x2 GPUs, each running 10 s; the last ones arrive after the first finish.
		jobs[i] = trace.Job{ID: trace.JobID(i + 1), Model: "a", GPUs: 1, Submit: time.Duration(5*i) * time.Second,
			Iters: 10, IterTime: time.Second}
	}
	var heard [][2]int
	cfg := Config{Progress: func(done, total int) { heard = append(heard, [2]int{done, total}) }}
	with, err := runJobs(t, "fifo", cfg, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{1, 6}, {2, 6}, {3, 6}, {4, 6}, {5, 6}, {6, 6}}; !slices.Equal(heard, want) {
		t.Errorf("heard %v, want %v", heard, want)
	}
	without, err := runJobs(t, "fifo", Config{}, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(with, without) {
		t.Errorf("with progress %+v, without %+v", with, without)
	}
}
