package walk_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/policy/walk"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// pairProfile is one model at one batch on one GPU that shares with itself at slowdown 1.2.
func pairProfile(t *testing.T) *profile.Table {
	t.Helper()
	c := profile.Config{Model: "m", Batch: 32, SubBatch: 32}
	tab := &profile.Table{GPU: "test", Source: "test",
		Models: []profile.Model{{Name: "m", DefaultBatch: 32, Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: 1}, MemBytes: cluster.GiB}}}},
		Pairs:  []profile.Pair{{A: c, B: c, GPUs: 1, Mode: profile.Timeslice, Xi: 1.2}}}
	if err := tab.Normalize(); err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestReferenceChecksClaims: the reference executor fails a run whose declaration states what
// its Place, Key or Rank do not do, since the fast executor's shortcuts rely on it.
func TestReferenceChecksClaims(t *testing.T) {
	t.Parallel()
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: 8 * cluster.GiB, MaxShare: 2}
	jobs := []trace.Job{
		{ID: 1, Submit: 0, GPUs: 1, Iters: 1000, Model: "m", Batch: 32},
		{ID: 2, Submit: time.Second, GPUs: 1, Iters: 500, Model: "m", Batch: 32},
		{ID: 3, Submit: 2 * time.Second, GPUs: 1, Iters: 900, Model: "m", Batch: 32},
		{ID: 4, Submit: 3 * time.Second, GPUs: 1, Iters: 900, Model: "m", Batch: 32},
	}
	sjf := func() *policy.Greedy {
		d, err := schedulers.SJFFFS(schedulers.SJFFFSArgs{Victims: policy.VictimsAuthors})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct {
		name string
		lie  func(d *policy.Greedy)
		want string
	}{
		{"a sharing placement said to be exclusive", func(d *policy.Greedy) { d.Exclusive = true }, "never shares"},
		{"submission order said to be remaining times", func(d *policy.Greedy) {
			d.Key = nil
		}, "not its remaining time"},
		{"remaining times said to be fixed", func(d *policy.Greedy) {
			d.Preempt, d.Place, d.Exclusive, d.Order = true, schedulers.YARN{}, true, policy.OrderFixed
		}, "though the policy says it is fixed"},
	} {
		d := sjf()
		c.lie(d)
		_, err := sim.Run(context.Background(), sim.Config{Shape: shape, TraceName: "claims"}, jobs, walk.Reference(d), pairProfile(t), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: run error %v, want one that says %q", c.name, err, c.want)
		}
	}
	if _, err := sim.Run(context.Background(), sim.Config{Shape: shape, TraceName: "claims"}, jobs, walk.Reference(sjf()), pairProfile(t), nil); err != nil {
		t.Errorf("the truthful declaration: %v", err)
	}
}
