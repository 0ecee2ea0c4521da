package schedulers

import (
	"fmt"
	"math"
	"slices"

	"github.com/sharebench/sharebench/policy"
)

// Themis is the Muri simulator's themis (Rivendile/Muri, simulator/run_sim.py themis_sim_jobs,
// get_isolated_throughputs, get_base_constraints): finish-time fairness. At every arrival and
// completion:
//   - shares: every job that has arrived and not finished gets a share x of its GPUs, 0 ≤ x ≤ 1,
//     the shares' GPUs summing to at most the cluster's, chosen to minimise the largest
//     finish-time fairness ratio ρ(x) = (now − submit + T/x) / I: T is the job's remaining time
//     alone, I its "isolated" time, the time credited to it at its previous isolated shares plus
//     its remaining iterations over its isolated share now, min(1, ⌈G/n⌉/gpus) for n jobs on G
//     GPUs (the lineage divides iterations by that share, not by a throughput);
//   - order: the list is sorted stably, descending, by share per second of wall time run (a job
//     that never ran: share × 10⁹), then by deficit (time it should have received at its shares
//     so far minus the time it ran), then by share;
//   - placement: the list is walked in that order on an empty cluster with YARN (YARNNodes), and
//     the jobs that land are chosen; the list is then sorted stably by GPUs, largest first, and the
//     chosen jobs are walked again on an empty cluster: a job that lands runs, a running job that
//     does not is preempted.
//
// Muri solves the program with cvxpy (ECOS, then SCS), an interior-point method. Here the least
// largest ratio is found exactly, to adjacent floating-point numbers (themisProblem, firstAtLeast).
// Where it leaves the cluster room (a job at its whole GPUs sets it), the optimum is not unique and
// the solver's answer is some point of the optimal set; here it is the analytic centre of that set
// under the barrier of Muri's cone program, the point the central path of an interior-point method
// converges to. ECOS stops near, not at, that point, so shares, orders and decisions can differ
// from Muri's run where its choice among equal optima differs (docs/simulator.md).
type Themis struct {
	runnable
	last   float64   // the previous call's time in seconds
	exec   []float64 // by Job.Idx: wall time run in seconds, summed from call to call
	cum    []float64 // by Job.Idx: cumulative isolated time
	prevR  []float64 // by Job.Idx: iterations left at the previous call; < 0 before it
	prevA  []float64 // by Job.Idx: the isolated share at the previous call
	should []float64 // by Job.Idx: time it should have received at its shares
	x      []float64 // by Job.Idx: this call's share
	sortV  []float64 // by Job.Idx: share per second run
	def    []float64 // by Job.Idx: deficit
	nodes  YARNNodes
	chosen []bool // by Job.Idx
	prob   themisProblem
}

var _ policy.Policy = (*Themis)(nil)

// NewThemis returns Muri's "themis".
func NewThemis() *Themis { return &Themis{} }

// Name returns the registry key.
func (t *Themis) Name() string { return KeyThemis }

// Exclusive marks the policy as never sharing a GPU.
func (t *Themis) Exclusive() {}

// EveryEvent asks to be called at every arrival and completion: every job is re-decided.
func (t *Themis) EveryEvent() bool { return true }

// Schedule re-decides every job.
func (t *Themis) Schedule(s *policy.State) (policy.Plan, error) {
	var plan policy.Plan
	for len(t.exec) < len(s.Jobs) {
		t.exec = append(t.exec, 0)
		t.cum = append(t.cum, 0)
		t.prevR = append(t.prevR, -1)
		t.prevA = append(t.prevA, 0)
		t.should = append(t.should, 0)
		t.x = append(t.x, 0)
		t.sortV = append(t.sortV, 0)
		t.def = append(t.def, 0)
		t.chosen = append(t.chosen, false)
	}
	if _, err := t.update(s, KeyThemis); err != nil {
		return plan, err
	}
	// Wall time run is summed as the lineage sums it, in seconds from one event to the next.
	now := s.Now.Seconds()
	for _, i := range t.list {
		if s.Jobs[i].Running {
			t.exec[i] = t.exec[i] + now - t.last
		}
	}
	elapsed := now - t.last
	t.last = now
	if len(t.list) == 0 {
		return plan, nil
	}

	// The shares.
	sh := s.Cluster.Shape()
	gpus := sh.Nodes * sh.GPUsPerNode
	n := len(t.list)
	share := float64((gpus + n - 1) / n) // ⌈G/n⌉, each job's equal part of the cluster
	p := &t.prob
	p.reset(float64(gpus))
	for _, i := range t.list {
		j := s.Jobs[i]
		rem := j.RemIters(s.Now)
		if t.prevR[i] >= 0 {
			t.cum[i] += (t.prevR[i] - rem) / t.prevA[i]
		}
		a := min(share/float64(j.GPUs), 1)
		t.prevR[i], t.prevA[i] = rem, a
		iter := j.Options[j.Fast].Excl.Seconds()
		p.add(float64(j.GPUs), now-j.Submit.Seconds(), rem*iter, t.cum[i]+rem/a)
	}
	xs := p.solve()
	for k, i := range t.list {
		x := xs[k]
		t.x[i] = x
		if t.exec[i] == 0 {
			t.sortV[i] = x * 1e9
		} else {
			t.sortV[i] = x / t.exec[i]
		}
		// A job that arrived since the previous event is credited for the whole interval, as in
		// the lineage.
		t.def[i] = t.should[i] - t.exec[i]
		t.should[i] += x * elapsed
	}

	// The order, and the first walk: which jobs land.
	slices.SortStableFunc(t.list, func(a, b int32) int {
		if c := cmpFloat(t.sortV[b], t.sortV[a]); c != 0 {
			return c
		}
		if c := cmpFloat(t.def[b], t.def[a]); c != 0 {
			return c
		}
		return cmpFloat(t.x[b], t.x[a])
	})
	t.nodes.Reset(sh.Nodes, sh.GPUsPerNode)
	for _, i := range t.list {
		t.chosen[i] = t.nodes.Take(s.Jobs[i].GPUs)
	}
	// The second walk: the chosen jobs by GPUs, largest first.
	slices.SortStableFunc(t.list, func(a, b int32) int { return s.Jobs[b].GPUs - s.Jobs[a].GPUs })
	var stops, starts []int32
	t.nodes.Reset(sh.Nodes, sh.GPUsPerNode)
	for _, i := range t.list {
		j := s.Jobs[i]
		switch runs := t.chosen[i] && t.nodes.Take(j.GPUs); {
		case runs && !j.Running:
			starts = append(starts, i)
		case !runs && j.Running:
			stops = append(stops, i)
		}
	}
	reason := func(i int32) string {
		return fmt.Sprintf("finish-time fair share %.4g of its GPUs, lands on an empty cluster (yarn)", t.x[i])
	}
	_, err := applyLineage(s, KeyThemis, stops, starts, reason, nil, &plan)
	return plan, err
}

// themisProblem is one event's program: minimise max_k ρ_k(x_k), ρ_k(x) = (c_k + r_k/x) / e_k,
// subject to Σ g_k x_k ≤ G and 0 ≤ x_k ≤ 1 (c_k ≥ 0, r_k > 0, e_k > 0).
type themisProblem struct {
	total      float64
	g, c, r, e []float64
	x          []float64
	bisect     bool // find ρ* by bisection: the reference TestThemisSearch holds firstAtLeast to
}

func (p *themisProblem) reset(total float64) {
	p.total = total
	p.g, p.c, p.r, p.e = p.g[:0], p.c[:0], p.r[:0], p.e[:0]
}

func (p *themisProblem) add(g, c, r, e float64) {
	p.g, p.c, p.r, p.e = append(p.g, g), append(p.c, c), append(p.r, r), append(p.e, e)
}

// share returns job k's share at level ρ: the smallest share whose ratio is at most ρ, or the
// whole of its GPUs where no share reaches ρ.
func (p *themisProblem) share(k int, rho float64) float64 {
	d := rho*p.e[k] - p.c[k]
	if d <= p.r[k] {
		return 1
	}
	return p.r[k] / d
}

// used returns the GPUs the shares at level ρ take.
func (p *themisProblem) used(rho float64) float64 {
	var sum float64
	for k := range p.g {
		sum += p.g[k] * p.share(k, rho)
	}
	return sum
}

// solve returns the shares an interior-point method converges to: the least largest ratio ρ*
// (every job at the share that brings its ratio to ρ*, or at its whole GPUs, fits the cluster),
// and, where that leaves the cluster room, the analytic centre of the optimal shares (centre).
// Where every job fits whole, every share is 1.
func (p *themisProblem) solve() []float64 {
	p.x = p.x[:0]
	var all float64
	for _, g := range p.g {
		all += g
	}
	if all <= p.total {
		for range p.g {
			p.x = append(p.x, 1)
		}
		return p.x
	}
	// used is non-increasing in ρ: it is all the GPUs for ρ at or below the smallest ratio a job
	// reaches at share 1, and tends to 0 as ρ grows.
	lo, top := math.Inf(1), 0.0
	for k := range p.g {
		lo = min(lo, (p.c[k]+p.r[k])/p.e[k])
		top = max(top, (p.c[k]+p.r[k])/p.e[k])
	}
	// room is what the shares at level ρ leave of the cluster, and its slope. As computed it is
	// monotone, as each term is and rounding keeps sums of monotone terms so: firstAtLeast finds
	// the number bisection finds.
	room := func(rho float64) (float64, float64) {
		var used, slope float64
		for k := range p.g {
			x := p.share(k, rho)
			used += p.g[k] * x
			if x < 1 {
				slope += p.g[k] * x * x * p.e[k] / p.r[k]
			}
		}
		return p.total - used, slope
	}
	hi := max(2*lo, 1)
	for p.used(hi) > p.total {
		lo, hi = hi, 2*hi
	}
	if p.bisect {
		hi = bisectAtLeast(lo, hi, func(rho float64) float64 { v, _ := room(rho); return v })
	} else {
		hi = firstAtLeast(lo, hi, room)
	}
	rho := max(hi, top)
	for k := range p.g {
		p.x = append(p.x, p.share(k, rho))
	}
	if hi < top {
		p.centre()
	}
	return p.x
}

// centre moves the shares p.x, the least that reach the optimum, to the analytic centre of the
// optimal shares: the jobs below their whole GPUs maximise Σ 2·log(x − lb) + log(1 − x) +
// log(G − Σ g·x), the barrier of Muri's cone program on its optimal face (lb is a job's least
// share, the ratio's epigraph and inverse taken out). Each share then solves
// 2/(x − lb) − 1/(1 − x) = λ·g, a quadratic, with λ = 1/(G − Σ g·x) found by bisection.
func (p *themisProblem) centre() {
	room := p.total
	for k, x := range p.x {
		if x == 1 {
			room -= p.g[k]
		}
	}
	share := func(k int, lam float64) float64 {
		lb := p.x[k]
		a := lam * p.g[k]
		b := a*(1+lb) + 3
		c := 2 + lb + a*lb
		// The smaller root of a·x² − b·x + c, written to keep its precision; at most 1 where
		// rounding would put a share near 1 above it.
		return min(2*c/(b+math.Sqrt(b*b-4*a*c)), 1)
	}
	// excess is λ·(room − Σ g·x(λ)) − 1, increasing in λ. As computed, it is not monotone within
	// rounding (the root's discriminant cancels), so that only bisection is sure to find the same
	// number, of the few at which it changes sign, every time.
	excess := func(lam float64) float64 {
		var used float64
		for k, x := range p.x {
			if x < 1 {
				used += p.g[k] * share(k, lam)
			}
		}
		return lam*(room-used) - 1
	}
	lo, hi := 0.0, 1.0
	for excess(hi) < 0 {
		lo, hi = hi, 2*hi
	}
	hi = bisectAtLeast(lo, hi, excess)
	for k, x := range p.x {
		if x < 1 {
			p.x[k] = share(k, hi)
		}
	}
}

// firstAtLeast returns the least floating-point number in (lo, hi] at which f, increasing, is at
// least 0, given f(hi) ≥ 0 and f(lo) < 0: where f as computed is monotone too, what bisecting
// (lo, hi) down to two adjacent numbers returns, in some fifteen evaluations where bisection takes
// some sixty. f gives its value and slope.
// It takes Newton steps that stay inside the bracket (else it bisects) until a step is within
// 2⁻³⁰ of the point; from there it steps 8, 64, ... units in the last place until f changes sign,
// and bisects what is left.
func firstAtLeast(lo, hi float64, f func(float64) (float64, float64)) float64 {
	value := func(x float64) float64 { v, _ := f(x); return v }
	x := hi
	fx, dx := f(x)
	for range 100 {
		if fx < 0 {
			lo = x
		} else {
			hi = x
		}
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			return hi
		}
		next := mid
		if n := x - fx/dx; dx > 0 && n > lo && n < hi {
			if math.Abs(n-x) <= math.Abs(x)*0x1p-30 {
				return nearAtLeast(lo, hi, n, value)
			}
			next = n
		}
		x = next
		fx, dx = f(x)
	}
	return bisectAtLeast(lo, hi, value)
}

// nearAtLeast is firstAtLeast in (lo, hi) from x, near the answer: it steps away from x by 8, 64,
// ... units in the last place until f changes sign, and bisects the bracket that leaves.
func nearAtLeast(lo, hi, x float64, f func(float64) float64) float64 {
	below := f(x) < 0
	if below {
		lo = x
	} else {
		hi = x
	}
	ulp := math.Nextafter(x, math.Inf(1)) - x
	if !below {
		ulp = x - math.Nextafter(x, math.Inf(-1))
	}
	for step := 8.0; ; step *= 8 {
		y := x + step*ulp
		if !below {
			y = x - step*ulp
		}
		if !(y > lo && y < hi) {
			break
		}
		if f(y) < 0 {
			lo = y
			if !below {
				break
			}
		} else {
			hi = y
			if below {
				break
			}
		}
	}
	return bisectAtLeast(lo, hi, f)
}

// bisectAtLeast is firstAtLeast by bisection alone.
func bisectAtLeast(lo, hi float64, f func(float64) float64) float64 {
	for {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			return hi
		}
		if f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
}
