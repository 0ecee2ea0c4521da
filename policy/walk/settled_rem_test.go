package walk_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestRemSettledShortcut runs sjf with the fast executor and the reference, which never takes the settled shortcut
// of remaining-time keys (settled_rem.go), on random saturated traces: arrivals in bursts and
// alone, jobs of up to two nodes and of every length, jobs too short to be preempted, with and
// without restart costs (whose overheads hold keys still and so reorder the packing), the
// lineage's per-event overhead and scheduling rounds. The decision logs must be equal, the
// shortcut must answer at least 300 calls and leave as many jobs of packings in place, and the
// traces must reorder packings.
func TestRemSettledShortcut(t *testing.T) {
	t.Parallel()
	prof := gavelProfile(t)
	models := []string{"resnet18", "lm", "a3c", "transformer", "cyclegan"}
	const spec = "sjf"
	skips, reordered, packed := 0, 0, 0
	for seed := range uint64(24) {
		rng := rand.New(rand.NewPCG(seed, 13))
		shape := cluster.Shape{Nodes: 2 + rng.IntN(3), GPUsPerNode: []int{2, 4, 8}[rng.IntN(3)], GPUMemBytes: 48 * cluster.GiB, MaxShare: 1}
		var jobs []trace.Job
		at := time.Duration(0)
		for id := 0; id < 400; {
			for range 1 + rng.IntN(2)*rng.IntN(4) {
				gpus := []int{1, 1, 1, 2, shape.GPUsPerNode, shape.GPUsPerNode, 2 * shape.GPUsPerNode, shape.GPUsPerNode + 1 + rng.IntN(shape.GPUsPerNode)}[rng.IntN(8)]
				iters := int64([]int{50, 100, 101, 300, 1000, 3000 + rng.IntN(3000), 9000 + rng.IntN(9000), 30000}[rng.IntN(8)])
				jobs = append(jobs, trace.Job{ID: trace.JobID(id), Submit: at, GPUs: min(gpus, shape.GPUs()), Iters: iters, Model: models[rng.IntN(len(models))]})
				id++
			}
			at += time.Duration(rng.IntN(40)) * 5 * time.Second
		}
		restart := []sim.RestartCost{{}, {Source: sim.RestartAuto}, {Source: sim.RestartLineage},
			{Source: sim.RestartFixed, Fixed: time.Duration(300+rng.IntN(1500)) * time.Second}}[seed%4]
		cfg := sim.Config{Shape: shape, TraceName: fmt.Sprintf("seed %d", seed), Restart: restart, OverheadEveryEvent: seed%8 == 1}
		if seed%5 == 2 {
			cfg.Interval = 150 * time.Second
		}
		st, logs := decideBoth(t, cfg, jobs, prof, spec)
		skips += st.Settled
		reordered += st.Reordered
		packed += st.Packed
		if !bytes.Equal(logs[0], logs[1]) {
			t.Errorf("seed %d: the shortcut and the reference decide differently\n%s", seed, firstDiff(logs[0], logs[1]))
		}
	}
	t.Logf("calls answered by the shortcut: %d, walked as their packing reordered: %d; jobs of packings left in place: %d", skips, reordered, packed)
	if skips < 300 || reordered < 10 || packed < 300 {
		t.Errorf("the shortcut answered %d calls, %d walked as their packing reordered, %d jobs of packings left in place: the traces do not exercise it", skips, reordered, packed)
	}
}

// TestRemKeyForm pins the checks of sjf's settled shortcut on a change of a key's form: a job
// the walk started ranks by its key as a waiting job, and next as a running job, which is the
// same time rounded to a nanosecond and may rank it a hair lower. Jobs 0 and 1, twins that job 2
// preempts together, wait with equal keys (0 ahead by ID). When 2 ends, 3 starts and 0 restarts;
// the restart overhead holds its key still. Then an arrival fits on the idle GPU: a quiet call.
// When 0's key as a running job ranks it below 1, the walk takes 0 (for W, job 4 of the whole
// node, 0 then being below 1; or for W = 1 itself) and 1 takes its GPUs. Across arrival times
// that must happen, the shortcut must see it, and the decisions must be the reference's.
func TestRemKeyForm(t *testing.T) {
	t.Parallel()
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 1}
	cfg := sim.Config{Shape: shape, Restart: sim.RestartCost{Source: sim.RestartFixed, Fixed: 1000 * time.Second}}
	for _, withW := range []bool{true, false} {
		rounded, skips := 0, 0
		for k := range 40 {
			t1 := 100*time.Second + time.Duration(k)*time.Millisecond + time.Duration(k*7919)
			long, short := 123456789*time.Nanosecond, 100*time.Millisecond
			jobs := []trace.Job{
				{ID: 0, Submit: 0, GPUs: 2, Iters: 20000, Model: "m", Batch: 32, IterTime: long},
				{ID: 1, Submit: 0, GPUs: 2, Iters: 20000, Model: "m", Batch: 32, IterTime: long},
				{ID: 2, Submit: t1, GPUs: 4, Iters: 150, Model: "s", Batch: 32, IterTime: short},
				{ID: 3, Submit: t1 + time.Second, GPUs: 1, Iters: 200, Model: "r", Batch: 32, IterTime: short},
				{ID: 5, Submit: t1 + 30*time.Second, GPUs: 1, Iters: 101, Model: "a", Batch: 32, IterTime: short},
			}
			if withW {
				jobs = append(jobs, trace.Job{ID: 4, Submit: t1 + time.Second, GPUs: 4, Iters: 1000, Model: "w", Batch: 32, IterTime: short})
			}
			cfg.TraceName = fmt.Sprintf("W %v, arrival %v", withW, t1)
			st, logs := decideBoth(t, cfg, jobs, nil, "sjf")
			if !bytes.Equal(logs[0], logs[1]) {
				t.Errorf("%s: the shortcut and the reference decide differently\n%s", cfg.TraceName, firstDiff(logs[0], logs[1]))
			}
			rounded += st.Rounded
			skips += st.Settled
		}
		if rounded == 0 || skips == 0 {
			t.Errorf("W %v: %d calls walked as a key changed its form, %d answered by the shortcut: the traces do not exercise them", withW, rounded, skips)
		}
	}
}

// TestRemSettledTies is TestRemSettledShortcut on small traces full of exact ties of remaining
// times (iteration times 100 ms, 200 ms, 123456789 ns and twice that, a few iteration counts),
// with restart overheads longer than the scheduling rounds: keys held still by an overhead then
// tie with the keys of waiting jobs, where the form of a key (waiting or running, rounded to a
// nanosecond) decides. Such traces can make sjf preempt back and forth for ever (two jobs of tied
// remaining time, each ranking above the other while it waits and the other runs), so each run
// stops after two simulated days, more than the others need; both walks stop at the same event
// when they decide alike.
func TestRemSettledTies(t *testing.T) {
	t.Parallel()
	its := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 123456789, 246913578}
	skips, rounded, cut := 0, 0, 0
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 77))
		per := []int{2, 4}[rng.IntN(2)]
		shape := cluster.Shape{Nodes: 1 + rng.IntN(3), GPUsPerNode: per, GPUMemBytes: 16 * cluster.GiB, MaxShare: 1}
		var jobs []trace.Job
		at := time.Duration(0)
		for id := 0; id < 40; {
			for range 1 + rng.IntN(4) {
				it := its[rng.IntN(len(its))]
				jobs = append(jobs, trace.Job{ID: trace.JobID(id), Submit: at, GPUs: min([]int{1, 1, 2, per, shape.Nodes * per}[rng.IntN(5)], shape.GPUs()),
					Iters: int64([]int{150, 300, 600, 1200, 2400, 4800}[rng.IntN(6)]), Model: "m" + it.String(), Batch: 32, IterTime: it})
				id++
			}
			at += time.Duration(rng.IntN(4)) * 10 * time.Second
		}
		cfg := sim.Config{Shape: shape, TraceName: fmt.Sprintf("seed %d", seed),
			Restart: sim.RestartCost{Source: sim.RestartFixed, Fixed: time.Duration(1+rng.IntN(3)) * 100 * time.Second}}
		if rng.IntN(3) == 0 {
			cfg.Interval = 10 * time.Second
		}
		st, a, stopped := decideUntil(t, cfg, jobs, nil, "sjf", 48*time.Hour)
		_, b, _ := decideWith(t, builtin.Registry(builtin.Reference()), cfg, jobs, nil, "sjf", 48*time.Hour)
		if !bytes.Equal(a, b) {
			t.Errorf("seed %d: the shortcut and the reference decide differently\n%s", seed, firstDiff(a, b))
		}
		skips += st.Settled
		rounded += st.Rounded
		if stopped {
			cut++
		}
	}
	t.Logf("calls answered by the shortcut: %d, walked as a key changed its form: %d; runs stopped at two days: %d", skips, rounded, cut)
	if skips < 10_000 || rounded < 10 {
		t.Errorf("the shortcut answered %d calls, %d walked as a key changed its form: the traces do not exercise them", skips, rounded)
	}
}
