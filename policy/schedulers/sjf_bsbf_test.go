package schedulers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// bsbfCase is a node whose GPUs each hold one running job or none, and a pending job.
type bsbfCase struct {
	s       *policy.State
	pending *policy.Job
	running map[trace.JobID]*policy.Job
}

// randomBSBFCase builds a case: up to 8 GPUs, most of them busy with one-GPU jobs of random
// remaining times, memory that often leaves no room, slowdowns that often fail the share check or
// are missing, and a pending job of 1 to 3 GPUs with up to three sub-batches.
func randomBSBFCase(rng *rand.Rand) bsbfCase {
	const nCfg = 6
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 2 + rng.IntN(7), GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	names := make([]string, nCfg)
	for i := range names {
		names[i] = fmt.Sprint("c", i)
	}
	env := policy.NewEnv(2, profile.Timeslice, names, 1)
	for a := range nCfg {
		for b := range nCfg {
			if rng.IntN(8) > 0 {
				env.SetXi(0, a, b, 1+1.5*rng.Float64())
			}
		}
	}
	cl := cluster.New(shape)
	c := bsbfCase{running: map[trace.JobID]*policy.Job{}}
	now := 1000 * time.Second
	for g := range shape.GPUs() {
		if rng.IntN(8) == 0 {
			continue // idle
		}
		opt := policy.Option{Batch: 32, SubBatch: 32, Excl: time.Duration(1+rng.IntN(900)) * time.Millisecond,
			Mem: int64(1+rng.IntN(15)) * cluster.GiB, Cfg: rng.IntN(3)}
		j := &policy.Job{Job: trace.Job{ID: trace.JobID(g), GPUs: 1}, Options: []policy.Option{opt}, Running: true,
			On: []int{g}, Xi: 1 + rng.Float64(), P: policy.Progress{Rem: float64(1 + rng.IntN(5000)), At: now, Rate: 1}}
		if err := cl.Place(j.ID, j.On, opt.Mem); err != nil {
			panic(err)
		}
		c.running[j.ID] = j
	}
	p := &policy.Job{Job: trace.Job{ID: 100, GPUs: 1 + rng.IntN(3)}, P: policy.Progress{Rem: float64(1 + rng.IntN(5000))}}
	for k, sub := range []int{32, 16, 8}[:1+rng.IntN(3)] {
		p.Options = append(p.Options, policy.Option{Batch: 32, SubBatch: sub, Excl: time.Duration(100*(1+k)+rng.IntN(400)) * time.Millisecond,
			Mem: int64(1+rng.IntN(12)) * cluster.GiB >> k, Cfg: 3 + k})
	}
	if len(p.Options) > 1 && rng.IntN(3) == 0 {
		// A sub-batch as fast as the largest, with its slowdowns: their scores tie.
		p.Options[1].Excl, p.Options[1].Cfg = p.Options[0].Excl, p.Options[0].Cfg
	}
	for k, o := range p.Options {
		if o.Excl < p.Options[p.Fast].Excl {
			p.Fast = k
		}
	}
	c.s = &policy.State{Now: now, Cluster: cl, Env: env, Lookup: func(id trace.JobID) *policy.Job { return c.running[id] }}
	c.pending = p
	return c
}

func (c bsbfCase) call() *policy.Call {
	return policy.NewCall(c.s, func(id trace.JobID) (policy.Partner, error) {
		j := c.running[id]
		return policy.Partner{Job: j, Opt: 0, Rem: j.RemTime(c.s.Now).Seconds()}, nil
	})
}

// bruteScore returns, for the pending job at option opt, the smallest largest t_con of the
// partners of any placement on every idle GPU and enough GPUs whose job passes the share check,
// found by trying every such set of GPUs; ok is false when there is none.
func (c bsbfCase) bruteScore(opt int) (score float64, ok bool) {
	j, cl := c.pending, c.s.Cluster
	o := j.Options[opt]
	idle := 0
	var tCons []float64 // of the GPUs whose job passes
	for g := range cl.NumGPUs() {
		if cl.Count(g) == 0 {
			idle++
			continue
		}
		r := c.running[cl.Jobs(g)[0]]
		if cl.FreeMem(g) < o.Mem {
			continue
		}
		xiA, okA := c.s.Env.Xi(j, opt, r, 0)
		xiB, okB := c.s.Env.Xi(r, 0, j, opt)
		if !okA || !okB {
			continue
		}
		etcA, etcWait := j.P.Rem*o.Excl.Seconds(), j.P.Rem*j.Options[j.Fast].Excl.Seconds()
		if share, tCon, _ := ShareAt(etcA, etcWait, r.RemTime(c.s.Now).Seconds(), xiA, xiB); share {
			tCons = append(tCons, tCon)
		}
	}
	k := j.GPUs - idle
	if k <= 0 || k > len(tCons) {
		return 0, false
	}
	score = math.Inf(1)
	// Every set of k of the passing GPUs, as a bit mask.
	for m := 0; m < 1<<len(tCons); m++ {
		if popcount(m) != k {
			continue
		}
		worst := 0.0
		for i, t := range tCons {
			if m&(1<<i) != 0 {
				worst = max(worst, t)
			}
		}
		score = min(score, worst)
	}
	return score, true
}

func popcount(m int) int {
	n := 0
	for ; m > 0; m &= m - 1 {
		n++
	}
	return n
}

// TestBestBenefitIsBest checks SJF-BSBF's placement against brute force on random nodes where
// too few GPUs are idle: of every placement on the idle GPUs and GPUs of jobs that pass the share
// check, at every sub-batch, it takes one whose largest partner t_con is the smallest, at the
// largest sub-batch among equals (cases with two sub-batches of equal step times and slowdowns
// tie); and it finds one whenever one exists.
func TestBestBenefitIsBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shared := 0
	for n := range 20000 {
		c := randomBSBFCase(rng)
		if c.s.Cluster.Idle() >= c.pending.GPUs {
			continue
		}
		bestOpt, best := -1, 0.0
		for opt := range c.pending.Options {
			if s, ok := c.bruteScore(opt); ok && (bestOpt < 0 || s < best) {
				bestOpt, best = opt, s
			}
		}
		pl, ok, err := BestBenefit{SubBatch: true}.Place(c.call(), c.pending)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (bestOpt >= 0) {
			t.Fatalf("case %d: placed %v, but brute force finds a placement: %v", n, ok, bestOpt >= 0)
		}
		if !ok {
			continue
		}
		shared++
		got := 0.0
		for _, id := range pl.Partners {
			r := c.running[id]
			o := c.pending.Options[pl.Opt]
			xiA, _ := c.s.Env.Xi(c.pending, pl.Opt, r, 0)
			xiB, _ := c.s.Env.Xi(r, 0, c.pending, pl.Opt)
			_, tCon, _ := ShareAt(c.pending.P.Rem*o.Excl.Seconds(), c.pending.P.Rem*c.pending.Options[c.pending.Fast].Excl.Seconds(), r.RemTime(c.s.Now).Seconds(), xiA, xiB)
			got = max(got, tCon)
		}
		if pl.Opt != bestOpt || got != best {
			t.Fatalf("case %d: sub-batch option %d with largest t_con %v; brute force: option %d, %v", n, pl.Opt, got, bestOpt, best)
		}
		if len(pl.GPUs) != c.pending.GPUs || slices.ContainsFunc(pl.GPUs, func(g int) bool {
			return c.s.Cluster.Count(g) > 0 && !slices.Contains(pl.Partners, c.s.Cluster.Jobs(g)[0])
		}) {
			t.Fatalf("case %d: GPUs %v for a job of %d with partners %v", n, pl.GPUs, c.pending.GPUs, pl.Partners)
		}
	}
	if shared < 1000 {
		t.Fatalf("only %d sharing placements: the cases do not exercise the rule", shared)
	}
}
