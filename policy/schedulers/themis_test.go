package schedulers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestThemisShares checks the solver of themis's program on random instances against the
// program itself: the shares are feasible; no feasible shares reach a lower largest ratio (the
// least GPUs that bring every ratio below it exceed the cluster); and where the optimum leaves
// the cluster room, the shares below the whole GPUs are the analytic centre of the optimal set,
// 2/(x − lb) − 1/(1 − x) = g/(G − Σ g·x) for every such job, lb its least optimal share.
func TestThemisShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 41))
	ratio := func(p *themisProblem, k int, x float64) float64 { return (p.c[k] + p.r[k]/x) / p.e[k] }
	// need returns the GPUs that every ratio at most rho takes at least; +Inf when a ratio cannot
	// come down to rho at all.
	need := func(p *themisProblem, rho float64) float64 {
		var sum float64
		for k := range p.g {
			if ratio(p, k, 1) > rho {
				return math.Inf(1)
			}
			sum += p.g[k] * p.r[k] / (rho*p.e[k] - p.c[k])
		}
		return sum
	}
	centres := 0
	for n := range 3000 {
		total := float64(1 + rng.IntN(32))
		p := randomThemis(rng, total, 1+rng.IntN(12))
		x := slices.Clone(p.solve())
		var used, all, worst float64
		for k := range p.g {
			if !(x[k] > 0 && x[k] <= 1) {
				t.Fatalf("instance %d: share %d is %v, outside (0, 1]", n, k, x[k])
			}
			used += p.g[k] * x[k]
			all += p.g[k]
			worst = max(worst, ratio(p, k, x[k]))
		}
		if used > total*(1+1e-12) {
			t.Fatalf("instance %d: shares take %v GPUs of %v", n, used, total)
		}
		if all <= total {
			continue
		}
		if lower := worst * (1 - 1e-9); need(p, lower) <= total {
			t.Fatalf("instance %d: largest ratio %v, but %v GPUs bring every ratio to %v", n, worst, need(p, lower), lower)
		}
		if math.Abs(used-total) <= 1e-9*total {
			continue // the cluster is used up: the optimal shares are unique
		}
		centres++
		lam := 1 / (total - used)
		for k := range p.g {
			if x[k] == 1 {
				continue
			}
			lb := p.r[k] / (worst*p.e[k] - p.c[k])
			if lb > 1-1e-9 {
				continue // at the optimum's edge within rounding: the gradient is all noise
			}
			if grad := 2/(x[k]-lb) - 1/(1-x[k]); math.Abs(grad-lam*p.g[k]) > 1e-6*lam*p.g[k] {
				t.Fatalf("instance %d: job %d at %v (least %v): barrier gradient %v, want %v", n, k, x[k], lb, grad, lam*p.g[k])
			}
		}
	}
	if centres < 100 {
		t.Errorf("only %d instances leave the cluster room", centres)
	}
}

// TestThemisSearch holds the search for themis's least largest ratio (firstAtLeast: Newton steps,
// then steps of units in the last place) to bisection down to adjacent floating-point numbers:
// the same shares, bit for bit, on random programs, including ones whose optimum leaves the
// cluster room and ones with hundreds of jobs, as Muri's traces with every job submitted at once
// have.
func TestThemisSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 43))
	centres := 0
	for n := range 2000 {
		total := float64(1 + rng.IntN(64))
		jobs := 1 + rng.IntN(12)
		if n%10 == 0 {
			jobs = 100 + rng.IntN(400)
		}
		fast := randomThemis(rng, total, jobs)
		slow := themisProblem{total: total, g: fast.g, c: fast.c, r: fast.r, e: fast.e, bisect: true}
		want := slices.Clone(slow.solve())
		got := fast.solve()
		if slices.Contains(want, 1) && slices.ContainsFunc(want, func(x float64) bool { return x < 1 }) {
			centres++
		}
		for k := range want {
			if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
				t.Fatalf("instance %d (%d jobs): share %d is %v, bisection gives %v", n, jobs, k, got[k], want[k])
			}
		}
	}
	if centres < 100 {
		t.Errorf("only %d instances reach the centre", centres)
	}
}

// randomThemis draws a program of jobs on total GPUs: 1 to 8 GPUs each, half of them with time
// already spent, remaining and isolated times up to 10⁵ s.
func randomThemis(rng *rand.Rand, total float64, jobs int) *themisProblem {
	p := &themisProblem{}
	p.reset(total)
	for range jobs {
		p.add(float64([]int{1, 2, 4, 8}[rng.IntN(4)]), 1e4*rng.Float64()*float64(rng.IntN(2)), 1+1e5*rng.Float64(), 1+1e5*rng.Float64())
	}
	return p
}
