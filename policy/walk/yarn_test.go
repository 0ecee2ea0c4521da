package walk

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// TestYarnStill: whenever yarnStill says a job that YARN placement failed to place still fails
// once a victim's GPUs are idle too, YARN placement does fail there; and it says so often, and
// declines often, so the test can tell a rule that always declines from one that never does.
func TestYarnStill(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	var still, declined int
	for range 4000 {
		shape := cluster.Shape{Nodes: 2 + rng.IntN(6), GPUsPerNode: []int{2, 4, 8}[rng.IntN(3)], GPUMemBytes: cluster.GiB, MaxShare: 1}
		per := shape.GPUsPerNode
		cl := cluster.New(shape)
		// Random exclusive jobs of up to one and a half nodes' worth of GPUs on random idle GPUs, until a random half or more of the cluster is taken.
		var placed []*policy.Job
		fill := shape.GPUs()/2 + rng.IntN(shape.GPUs()/2)
		for id := 0; shape.GPUs()-cl.Idle() < fill; id++ {
			var gpus []int
			want := 1 + rng.IntN(per+per/2)
			for _, g := range rng.Perm(shape.GPUs()) {
				if len(gpus) < want && cl.Count(g) == 0 {
					gpus = append(gpus, g)
				}
			}
			if len(gpus) == 0 {
				break
			}
			if err := cl.Place(trace.JobID(id), gpus, 1); err != nil {
				t.Fatal(err)
			}
			placed = append(placed, &policy.Job{Job: trace.Job{ID: trace.JobID(id)}, On: slices.Sorted(slices.Values(gpus)), Running: true})
		}
		g := &greedy{bySize: true, exclusive: true}
		g.s = &policy.State{Cluster: cl}
		g.p.s = g.s
		j := &policy.Job{Job: trace.Job{ID: 1 << 20, GPUs: 1 + rng.IntN(max(cl.Idle(), 1))}}
		if j.GPUs > cl.Idle() || g.p.yarn(j) != nil {
			continue // only a try that failed with enough idle GPUs counts
		}
		r := placed[rng.IntN(len(placed))]
		if err := cl.Release(r.ID); err != nil {
			t.Fatal(err)
		}
		if !g.yarnStill(j, r) {
			declined++
			continue
		}
		still++
		if gpus := g.p.yarn(j); gpus != nil {
			t.Fatalf("%d×%d cluster: job of %d GPUs fits on %v once job %d on %v is released, but yarnStill says it still fails",
				shape.Nodes, per, j.GPUs, gpus, r.ID, r.On)
		}
	}
	if still < 200 || declined < 200 {
		t.Fatalf("yarnStill said %d times that a job still fails and declined %d times: too few cases", still, declined)
	}
}

// TestSameSet checks sameSet on placements in order, shuffled, and differing in one GPU.
func TestSameSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 10_000 {
		n := 1 + rng.IntN(16)
		sorted := rng.Perm(64)[:n]
		slices.Sort(sorted)
		a := slices.Clone(sorted)
		if !sameSet(a, sorted) {
			t.Fatalf("sameSet(%v, %v) = false in order", a, sorted)
		}
		rng.Shuffle(n, func(i, k int) { a[i], a[k] = a[k], a[i] })
		if !sameSet(a, sorted) {
			t.Fatalf("sameSet(%v, %v) = false shuffled", a, sorted)
		}
		a[rng.IntN(n)] = 64 + rng.IntN(8) // a GPU sorted lacks
		if sameSet(a, sorted) {
			t.Fatalf("sameSet(%v, %v) = true", a, sorted)
		}
		if sameSet(a[:n-1], sorted) {
			t.Fatalf("sameSet(%v, %v) = true for fewer GPUs", a[:n-1], sorted)
		}
	}
}
