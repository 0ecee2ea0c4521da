package walk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/policy/walk"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestMergedWalk runs the fast and the reference executors on random saturated
// traces with many families (models × GPU counts) and long queues, where the walk merges the
// families (next) and prunes the merge's heap instead of scanning State.Pending. The decision
// logs must be equal, and the traces must make the walks merge, both ways, and prune.
func TestMergedWalk(t *testing.T) {
	t.Parallel()
	prof := gavelProfile(t)
	models := []string{"resnet18", "resnet50", "lm", "a3c", "transformer", "cyclegan", "recommendation"}
	specs := []string{"fifo", "sjf", "tiresias-entry-order", "tiresias-testbed", "sjf-ffs-preempt", "sjf-bsbf"}
	merges, soon, pruned := map[string]int{}, map[string]int{}, map[string]int{}
	for seed := range uint64(16) {
		rng := rand.New(rand.NewPCG(seed, 21))
		shape := cluster.Shape{Nodes: 2 + rng.IntN(3), GPUsPerNode: 4, GPUMemBytes: 32 * cluster.GiB, MaxShare: 2}
		// Mostly jobs of a node or more, so that a few idle GPUs leave long runs of waiting
		// jobs that do not fit.
		jobs := burstyJobs(rng, 260, []int{1, 2, 3, 4, 4, 4, 5, 8, 8, 6}, models, shape.GPUs())
		cfg := sim.Config{Shape: shape, TraceName: fmt.Sprintf("seed %d", seed),
			Restart: sim.RestartCost{Source: []sim.RestartSource{sim.RestartOff, sim.RestartAuto, sim.RestartLineage}[seed%3]}}
		for _, spec := range specs {
			st, logs := decideBoth(t, cfg, jobs, prof, spec)
			if !bytes.Equal(logs[0], logs[1]) {
				t.Errorf("seed %d %s: the merged walk and the reference decide differently\n%s", seed, spec, firstDiff(logs[0], logs[1]))
			}
			merges[spec] += st.Merges
			soon[spec] += st.SoonMerges
			pruned[spec] += st.Pruned
		}
	}
	t.Logf("walks that merged: %v, at their first skip: %v; families pruned: %v", merges, soon, pruned)
	for _, spec := range specs {
		// sjf-ffs-preempt's walks rarely leave phase 1, and it fails no family by size.
		// Both ways into the merge: after scanSkips skipped jobs, and at the first skip of
		// a walk that soon follows such a one.
		if merges[spec]-soon[spec] < 30 || soon[spec] < 100 || pruned[spec] < 100 && spec != "sjf-ffs-preempt" {
			t.Errorf("%s: %d merged walks (%d at their first skip), %d families pruned: the traces do not exercise them",
				spec, merges[spec], soon[spec], pruned[spec])
		}
	}
}

// decideBoth runs spec with the fast executor and with the reference one, and returns the fast
// one's counts of its shortcuts and the two decision logs.
func decideBoth(t *testing.T, cfg sim.Config, jobs []trace.Job, prof *profile.Table, spec string) (*walk.Stats, [2][]byte) {
	t.Helper()
	st, a := decide(t, cfg, jobs, prof, spec)
	_, b, _ := decideWith(t, builtin.Registry(builtin.Reference()), cfg, jobs, prof, spec, 0)
	return st, [2][]byte{a, b}
}

// decide runs spec with the fast executor (with opts) on jobs and returns the counts of its
// shortcuts and its decision log.
func decide(t *testing.T, cfg sim.Config, jobs []trace.Job, prof *profile.Table, spec string, opts ...walk.Option) (*walk.Stats, []byte) {
	t.Helper()
	st, log, _ := decideUntil(t, cfg, jobs, prof, spec, 0, opts...)
	return st, log
}

// decideUntil is decide stopped at the first event past limit of simulated time (0: none); it
// also reports whether it stopped.
func decideUntil(t *testing.T, cfg sim.Config, jobs []trace.Job, prof *profile.Table, spec string, limit time.Duration, opts ...walk.Option) (*walk.Stats, []byte, bool) {
	t.Helper()
	st := &walk.Stats{}
	log, stopped := decideIn(t, builtin.Registry(builtin.Fast(append(opts, walk.WithStats(st))...)), cfg, jobs, prof, spec, limit)
	return st, log, stopped
}

// decideWith is decideUntil with the policies of registry r.
func decideWith(t *testing.T, r *policy.Registry, cfg sim.Config, jobs []trace.Job, prof *profile.Table, spec string, limit time.Duration) (*walk.Stats, []byte, bool) {
	t.Helper()
	log, stopped := decideIn(t, r, cfg, jobs, prof, spec, limit)
	return nil, log, stopped
}

func decideIn(t *testing.T, r *policy.Registry, cfg sim.Config, jobs []trace.Job, prof *profile.Table, spec string, limit time.Duration) ([]byte, bool) {
	t.Helper()
	p, err := r.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	obs, flush := sim.JSONLWriter(&buf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = sim.Run(ctx, cfg, jobs, p, prof, func(ev sim.Event) {
		if limit > 0 && ev.T > limit {
			cancel()
			return
		}
		obs(ev)
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("%s %s: %v", cfg.TraceName, spec, err)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), err != nil
}

// burstyJobs draws n jobs in bursts of 1 to 6 arrivals, 0 to 145 s apart, each with a GPU
// count from gpus (at most maxGPUs), 50 to 30,000 iterations and a model from models.
func burstyJobs(rng *rand.Rand, n int, gpus []int, models []string, maxGPUs int) []trace.Job {
	var jobs []trace.Job
	at := time.Duration(0)
	for id := 0; id < n; {
		for range 1 + rng.IntN(6) {
			g := gpus[rng.IntN(len(gpus))]
			iters := int64([]int{50, 400, 2000, 8000, 30000}[rng.IntN(5)])
			jobs = append(jobs, trace.Job{ID: trace.JobID(id), Submit: at, GPUs: min(g, maxGPUs), Iters: iters, Model: models[rng.IntN(len(models))]})
			id++
		}
		at += time.Duration(rng.IntN(30)) * 5 * time.Second
	}
	return jobs
}

// gavelProfile loads the shipped Gavel V100 profile.
func gavelProfile(t *testing.T) *profile.Table {
	t.Helper()
	prof, err := profile.LoadFile(filepath.Join("..", "..", "results", "profiles", "gavel-v100.json"))
	if err != nil {
		t.Fatal(err)
	}
	return prof
}
