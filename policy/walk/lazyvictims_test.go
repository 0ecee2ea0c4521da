package walk_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/walk"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestLazyVictims runs sjf with the fast and the reference executors on random
// saturated traces (lazyTrace) where jobs of a node or more arrive among long small jobs that
// fill the cluster: their attempts preempt every job below them and mostly fail, as at 10^6
// synthetic jobs. The decision logs must be equal; lazy victims must go back without a release,
// and be released for real for each cause a walk meets (the preempting job may fit, a victim may
// not go back exactly, a placement may take a victim's node).
func TestLazyVictims(t *testing.T) {
	t.Parallel()
	prof := gavelProfile(t)
	backs, mats := 0, [3]int{}
	for seed := range uint64(40) {
		cfg, jobs := lazyTrace(seed)
		st, logs := decideBoth(t, cfg, jobs, prof, "sjf")
		if !bytes.Equal(logs[0], logs[1]) {
			t.Errorf("seed %d: lazy victims and the reference decide differently\n%s", seed, firstDiff(logs[0], logs[1]))
		}
		backs += st.LazyBacks
		for i, m := range st.LazyReleases {
			mats[i] += m
		}
	}
	t.Logf("lazy victims back without a release: %d; released for real as the job may fit: %d, as a victim may move: %d, for a placement: %d",
		backs, mats[0], mats[1], mats[2])
	if backs < 1000 || mats[0] < 20 || mats[1] < 20 || mats[2] < 5 {
		t.Errorf("lazy victims back %d, released for real %v: the traces do not exercise them", backs, mats)
	}
}

// TestLazyVictimsSets runs sjf on a few of TestLazyVictims' traces while every change of the lazy
// victims checks the sets of nodes by GPUs idle in T against the cluster (it panics if one is
// off). Sets that miss a node would change decisions, which TestLazyVictims sees; sets that keep
// a stale node would only release victims for nothing.
func TestLazyVictimsSets(t *testing.T) {
	t.Parallel()
	prof := gavelProfile(t)
	backs := 0
	for seed := range uint64(8) {
		cfg, jobs := lazyTrace(seed)
		st, _ := decide(t, cfg, jobs, prof, "sjf", walk.WithLazyChecks())
		backs += st.LazyBacks
	}
	if backs < 100 {
		t.Errorf("%d lazy victims back without a release: the traces do not exercise them", backs)
	}
}

// lazyTrace returns a random saturated trace on 2 to 6 nodes (every eighth one on more than 64
// nodes of 2 GPUs, whose sets of nodes take more than a word): long jobs of one and two GPUs,
// and short jobs of a node, of more than a node, and too short to preempt; with and without
// restart costs, the lineage's per-event overhead and rounds.
func lazyTrace(seed uint64) (sim.Config, []trace.Job) {
	models := []string{"resnet18", "lm", "a3c", "transformer", "cyclegan"}
	rng := rand.New(rand.NewPCG(seed, 29))
	shape := cluster.Shape{Nodes: 2 + rng.IntN(5), GPUsPerNode: []int{2, 4, 8}[rng.IntN(3)], GPUMemBytes: 48 * cluster.GiB, MaxShare: 1}
	n, gap := 300, 60
	if seed%8 == 7 {
		shape.Nodes, shape.GPUsPerNode, n, gap = 65+rng.IntN(16), 2, 600, 4
	}
	per := shape.GPUsPerNode
	var jobs []trace.Job
	at := time.Duration(0)
	for id := range n {
		gpus, iters := 1+rng.IntN(2), int64(20000+rng.IntN(40000)) // long and small: the victims
		switch rng.IntN(10) {
		case 0, 1:
			gpus, iters = per, int64(200+rng.IntN(3000))
		case 2:
			gpus, iters = per+1+rng.IntN(per), int64(200+rng.IntN(3000))
		case 3:
			gpus, iters = 1+rng.IntN(per), int64([]int{50, 100, 101, 500}[rng.IntN(4)])
		}
		jobs = append(jobs, trace.Job{ID: trace.JobID(id), Submit: at, GPUs: min(gpus, shape.GPUs()), Iters: iters, Model: models[rng.IntN(len(models))]})
		at += time.Duration(rng.IntN(gap)) * time.Second
	}
	restart := []sim.RestartCost{{}, {Source: sim.RestartAuto}, {Source: sim.RestartLineage},
		{Source: sim.RestartFixed, Fixed: time.Duration(60+rng.IntN(600)) * time.Second}}[seed%4]
	cfg := sim.Config{Shape: shape, TraceName: fmt.Sprintf("seed %d", seed), Restart: restart, OverheadEveryEvent: seed%8 == 1}
	if seed%5 == 3 {
		cfg.Interval = 120 * time.Second
	}
	return cfg, jobs
}
