package walk_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/walk"
	"github.com/sharebench/sharebench/sim"
)

// TestMovedLogCompaction runs SJF-FFS and SJF-BSBF, which keep failures across calls, with a
// log of changed GPUs bounded at a few entries, so that it drops its older entries often, and
// requires the decisions of runs that keep no failure.
func TestMovedLogCompaction(t *testing.T) {
	t.Parallel()
	prof := gavelProfile(t)
	models := []string{"resnet18", "resnet50", "lm", "a3c", "transformer", "cyclegan", "recommendation"}
	compactions := map[string]int{}
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 33))
		shape := cluster.Shape{Nodes: 2 + rng.IntN(3), GPUsPerNode: 4, GPUMemBytes: 32 * cluster.GiB, MaxShare: 2}
		jobs := burstyJobs(rng, 200, []int{1, 1, 2, 3, 4, 4, 8}, models, shape.GPUs())
		cfg := sim.Config{Shape: shape, TraceName: fmt.Sprintf("seed %d", seed),
			Restart: sim.RestartCost{Source: []sim.RestartSource{sim.RestartOff, sim.RestartAuto, sim.RestartLineage}[seed%3]}}
		for _, spec := range []string{"sjf-ffs", "sjf-bsbf"} {
			st, kept := decide(t, cfg, jobs, prof, spec, walk.WithMovedCap(walk.MaxMoved+8))
			_, none := decide(t, cfg, jobs, prof, spec, walk.NoKeptFailures())
			compactions[spec] += st.Compactions
			if !bytes.Equal(kept, none) {
				t.Errorf("seed %d %s: kept failures with a short log decide differently\n%s", seed, spec, firstDiff(kept, none))
			}
		}
	}
	for spec, n := range compactions {
		if n < 50 {
			t.Errorf("%s: the log dropped its older entries %d times: the traces do not exercise it", spec, n)
		}
	}
	t.Logf("compactions: %v", compactions)
}
