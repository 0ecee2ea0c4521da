package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/walk"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// pairedFirstFit places a job on idle GPUs if there are enough, else also on GPUs that hold one
// job the profile pairs it with and that leave it room, lowest GPU first.
type pairedFirstFit struct{}

func (pairedFirstFit) Place(c *policy.Call, j *policy.Job) (policy.Placement, bool, error) {
	cl, opt := c.Cluster, j.Fast
	var idle, shared []int
	for g := range cl.NumGPUs() {
		switch {
		case cl.Count(g) == 0:
			idle = append(idle, g)
		case cl.Count(g) == 1 && cl.FreeMem(g) >= j.Options[opt].Mem:
			r, err := c.Resident(cl.Jobs(g)[0])
			if err != nil {
				return policy.Placement{}, false, err
			}
			if _, ok := c.Env.Xi(j, opt, r.Job, r.Opt); ok {
				shared = append(shared, g)
			}
		}
	}
	gpus := append(idle, shared...)
	if len(gpus) < j.GPUs {
		return policy.Placement{}, false, nil
	}
	pl := policy.Placement{GPUs: gpus[:j.GPUs], Opt: opt, Reason: "paired first fit"}
	for _, g := range pl.GPUs {
		pl.Partners = append(pl.Partners, cl.Jobs(g)...) // for the decision log
	}
	return pl, true, nil
}

// A policy of the authors' loop, declared: jobs that ask for the fewest GPUs first, sharing a
// GPU with one other job where the profile pairs them, no preemption. walk.Fast carries it out;
// it knows no shortcut for this placement, so it runs it as walk.Reference does.
func ExampleGreedy() {
	fewestGPUs := &policy.Greedy{
		Name:  "fewest-gpus",
		Key:   func(j *policy.Job) policy.Key { return policy.Key{A: float64(j.GPUs)} },
		Order: policy.OrderFixed,
		Place: pairedFirstFit{},
		Mode:  profile.Timeslice,
	}

	// Two models on a GPU of 16 GiB; each slows the other down by a quarter.
	a, b := profile.Config{Model: "a", Batch: 32, SubBatch: 32}, profile.Config{Model: "b", Batch: 32, SubBatch: 32}
	prof := &profile.Table{GPU: "example", Source: "example", Models: []profile.Model{
		{Name: "a", DefaultBatch: 32, Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: 0.1, 2: 0.06}, MemBytes: 6 * cluster.GiB}}},
		{Name: "b", DefaultBatch: 32, Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: 0.2, 2: 0.11}, MemBytes: 8 * cluster.GiB}}},
	}}
	for _, p := range [][2]profile.Config{{a, a}, {a, b}, {b, a}, {b, b}} {
		prof.Pairs = append(prof.Pairs, profile.Pair{A: p[0], B: p[1], GPUs: 1, Mode: profile.Timeslice, Xi: 1.25})
	}
	if err := prof.Normalize(); err != nil {
		panic(err)
	}
	jobs := []trace.Job{
		{ID: 1, Submit: 0, GPUs: 2, Iters: 3000, Model: "a", Batch: 32},
		{ID: 2, Submit: time.Second, GPUs: 2, Iters: 1000, Model: "b", Batch: 32},
		{ID: 3, Submit: time.Second, GPUs: 1, Iters: 2000, Model: "a", Batch: 32},
		{ID: 4, Submit: 2 * time.Second, GPUs: 1, Iters: 500, Model: "b", Batch: 32},
	}
	cfg := sim.Config{Shape: cluster.Shape{Nodes: 1, GPUsPerNode: 2, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}, TraceName: "example"}
	res, err := sim.Run(context.Background(), cfg, jobs, walk.Fast(fewestGPUs), prof, nil)
	if err != nil {
		panic(err)
	}
	for _, j := range res.Jobs {
		fmt.Printf("job %d: started at %.1f s, finished at %.1f s\n", j.ID, j.Start.Seconds(), j.End.Seconds())
	}
	// Output:
	// job 1: started at 0.0 s, finished at 224.8 s
	// job 2: started at 224.8 s, finished at 340.0 s
	// job 3: started at 1.0 s, finished at 251.0 s
	// job 4: started at 2.0 s, finished at 127.0 s
}
