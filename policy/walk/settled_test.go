package walk_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestSettledShortcut runs the policies whose walks leave the cluster settled (settled.go) and
// the reference executor, which never takes the shortcut, on random saturated traces: bursts of
// arrivals, jobs of up to two nodes, jobs too short to be preempted, with and without restart
// costs, the lineage's per-event overhead (which gives progress back) and scheduling rounds. The
// decision logs must be equal, the shortcut must answer a good share of the calls, and calls
// with finished jobs must leave a good share of the running jobs in place (fixEarly), which
// attempts then pass in bulk (earlySkip).
func TestSettledShortcut(t *testing.T) {
	t.Parallel()
	prof := gavelProfile(t)
	models := []string{"resnet18", "lm", "a3c", "transformer", "cyclegan"}
	specs := []string{"fifo", "tiresias-entry-order", "tiresias-testbed", "tiresias-authors"}
	skips, fixed, bulk := map[string]int{}, map[string]int{}, map[string]int{}
	for seed := range uint64(24) {
		rng := rand.New(rand.NewPCG(seed, 11))
		shape := cluster.Shape{Nodes: 2 + rng.IntN(3), GPUsPerNode: []int{2, 4, 8}[rng.IntN(3)], GPUMemBytes: 48 * cluster.GiB, MaxShare: 1}
		var jobs []trace.Job
		at := time.Duration(0)
		for id := 0; id < 150; {
			for range 1 + rng.IntN(4) {
				gpus := []int{1, 1, 2, 4, shape.GPUsPerNode, shape.GPUsPerNode + 1 + rng.IntN(shape.GPUsPerNode)}[rng.IntN(6)]
				iters := int64([]int{50, 100, 101, 400, 2000, 8000}[rng.IntN(6)])
				jobs = append(jobs, trace.Job{ID: trace.JobID(id), Submit: at, GPUs: min(gpus, shape.GPUs()), Iters: iters, Model: models[rng.IntN(len(models))]})
				id++
			}
			at += time.Duration(rng.IntN(40)) * 5 * time.Second
		}
		cfg := sim.Config{Shape: shape, TraceName: fmt.Sprintf("seed %d", seed),
			Restart:            sim.RestartCost{Source: []sim.RestartSource{sim.RestartOff, sim.RestartAuto, sim.RestartLineage}[seed%3]},
			OverheadEveryEvent: seed%4 == 1}
		if seed%5 == 2 {
			cfg.Interval = 150 * time.Second
		}
		for _, spec := range specs {
			st, logs := decideBoth(t, cfg, jobs, prof, spec)
			skips[spec] += st.Settled
			fixed[spec] += st.EarlyFixed
			bulk[spec] += st.EarlySkipped
			if !bytes.Equal(logs[0], logs[1]) {
				t.Errorf("seed %d %s: the shortcut and the reference decide differently\n%s", seed, spec, firstDiff(logs[0], logs[1]))
			}
		}
	}
	t.Logf("calls answered by the shortcut: %v; running jobs left in place: %v, passed in bulk: %v", skips, fixed, bulk)
	for _, spec := range specs {
		if skips[spec] < 300 {
			t.Errorf("%s: the shortcut answered %d calls: the traces do not exercise it", spec, skips[spec])
		}
		if fixed[spec] < 100 {
			t.Errorf("%s: fixEarly left %d running jobs in place: the traces do not exercise it", spec, fixed[spec])
		}
		if bulk[spec] < 100 {
			t.Errorf("%s: attempts passed %d running jobs of fixEarly's ranges in bulk: the traces do not exercise it", spec, bulk[spec])
		}
	}
}
