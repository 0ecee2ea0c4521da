package policy_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestMovedLogCompaction runs SJF-FFS and SJF-BSBF, which keep failures across calls, with a
// log of changed GPUs bounded at a few entries, so that it drops its older entries often, and
// requires the decisions of runs that keep no failure. (Not parallel: it sets movedCap.)
func TestMovedLogCompaction(t *testing.T) {
	defer policy.SetMovedCap(policy.MaxMoved + 8)()
	prof := gavelProfile(t)
	models := []string{"resnet18", "resnet50", "lm", "a3c", "transformer", "cyclegan", "recommendation"}
	compactions := map[string]int{}
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 33))
		shape := cluster.Shape{Nodes: 2 + rng.IntN(3), GPUsPerNode: 4, GPUMemBytes: 32 * cluster.GiB, MaxShare: 2}
		var jobs []trace.Job
		at := time.Duration(0)
		for id := 0; id < 200; {
			for range 1 + rng.IntN(6) {
				gpus := []int{1, 1, 2, 3, 4, 4, 8}[rng.IntN(7)]
				iters := int64([]int{50, 400, 2000, 8000, 30000}[rng.IntN(5)])
				jobs = append(jobs, trace.Job{ID: trace.JobID(id), Submit: at, GPUs: min(gpus, shape.GPUs()), Iters: iters, Model: models[rng.IntN(len(models))]})
				id++
			}
			at += time.Duration(rng.IntN(30)) * 5 * time.Second
		}
		cfg := sim.Config{Shape: shape, TraceName: fmt.Sprintf("seed %d", seed),
			Restart: sim.RestartCost{Source: []sim.RestartSource{sim.RestartOff, sim.RestartAuto, sim.RestartLineage}[seed%3]}}
		for _, spec := range []string{"sjf-ffs", "sjf-bsbf"} {
			var logs [2][]byte
			for k, s := range []string{spec, spec + `{"no_kept_fails":true}`} {
				p, err := policy.Builtin().New(s)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				obs, flush := sim.JSONLWriter(&buf)
				if _, err := sim.Run(context.Background(), cfg, jobs, p, prof, obs); err != nil {
					t.Fatalf("%s %s: %v", cfg.TraceName, s, err)
				}
				if err := flush(); err != nil {
					t.Fatal(err)
				}
				logs[k] = buf.Bytes()
				if k == 0 {
					compactions[spec] += policy.MovedCompactions(p)
				}
			}
			if !bytes.Equal(logs[0], logs[1]) {
				t.Errorf("seed %d %s: kept failures with a short log decide differently\n%s", seed, spec, firstDiff(logs[0], logs[1]))
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
