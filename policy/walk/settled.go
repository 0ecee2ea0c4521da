package walk

import (
	"slices"

	"github.com/sharebench/sharebench/policy"
)

// A walk of a preemptive policy with YARN placement, fixed keys and the authors' victims (fifo,
// tiresias-entry-order and its aliases) leaves the cluster settled: walked again while only time
// passes, it changes nothing. Such a walk ends, below its first job W that cannot be placed even
// after taking every running job ranked below it (or that finds none to take), with a first-fit
// packing, in rank order, of every job ranked below W, on the cluster whose GPUs the jobs ranked
// above W and those set aside as too close to their end hold (the base). No job ranked above W
// waits, or W would not be the first. Walked again, W meets that same base once it has taken what
// now runs below it: it fails again (YARN placement is monotone: a job that fails on some idle
// GPUs fails on fewer; with more GPUs than a node, the first fully idle nodes it would take stay
// idle, and a node that is not fully idle holds no more), and the packing of the same jobs in the
// same order from the same base lands each one where it lies, which cancels every preemption.
// A job of the packing that does not fit takes nothing: every running job ranked below W that
// could be taken is taken already. Time only sets more jobs aside, and a job fixed early where the
// packing puts it changes no other job's placement: the jobs packed before it never took its
// GPUs; YARN picks the first node with room and its lowest idle GPUs, and for more GPUs than a
// node the first fully idle nodes (the fixed job sits on none of those a job took whole) and then
// a node after them or not fully idle, which a node at or before the last whole one only becomes
// if it was fully idle and so taken whole.
//
// Jobs that arrived since, ranked below every running and every waiting job, come last in that
// walk and find nothing to take: each is placed if it fits. So a call that follows a walk (or
// this shortcut) with nothing in between but time and such arrivals only tries the arrivals.
// A finished job, a re-keyed job, a promotion or a live run's measured progress need the walk.
//
// Arrivals that rank above some running jobs (a Tiresias arrival ahead of demoted jobs) change
// nothing either when none of them fits where the walk would try it and a waiting job ranks
// above them all. That job, the first of the walk, fails again and takes every running job
// ranked below it; the packing then lands each job ranked above an arrival where it lies, so the
// arrival meets the cluster less the running jobs ranked below it that can be taken. If it does
// not fit there it is passed over, which leaves the packing as it was, and the next arrival
// meets the same cluster less fewer jobs. (When an arrival is the first waiting job, the running
// jobs ranked between it and the previous first job were never part of a packing, and
// taking them may move them.)

// settles reports whether g's walks leave the cluster settled.
func (g *greedy) settles() bool {
	return g.sc.settled
}

// quiet reports, before sync, whether nothing but time and arrivals changed since a walk that
// left the cluster settled. Re-rated jobs are not looked at: on exclusive GPUs they are the
// previous call's starts or, with the lineage's per-event overhead, every running job, and an
// event gives back at most the progress made since the previous one (up to one rounding step,
// which never lifts a job above 100 iterations), so no job set aside becomes one to take. The
// arrivals are counted in State.Jobs, sorted by (Submit, ID): the engine queues every job
// submitted by now before it calls (a live run, which also sets Resync, is left out).
func (g *greedy) quiet(s *policy.State) bool {
	return g.settled && len(s.Finished) == 0 && len(g.rekeyed) == 0 && !s.Resync
}

// arrivals returns the jobs that arrived since the last call, in rank order, if they rank below
// every other waiting job and every running job; ok is false otherwise.
func (g *greedy) arrivals(s *policy.State) (arr []*policy.Job, ok bool) {
	n := 0
	for k := g.arrived; k < len(s.Jobs) && s.Jobs[k].Submit <= s.Now; k++ {
		n++
	}
	arr = g.arr[:0]
	for j := range s.Pending.Backward() {
		if len(arr) == n {
			break
		}
		if int(j.Idx) < g.arrived {
			return nil, false
		}
		arr = append(arr, j)
	}
	g.arr = arr
	if len(arr) < n {
		return nil, false
	}
	if n > 0 {
		first := arr[n-1]
		if r, any := g.rs.bottom(); any && policy.Compare(first.K, first, r.k, r.j) <= 0 {
			return nil, false
		}
	}
	for i, k := 0, n-1; i < k; i, k = i+1, k-1 {
		arr[i], arr[k] = arr[k], arr[i]
	}
	return arr, true
}

// arrivalsFail reports whether none of the jobs that arrived since the last call (all of them
// waiting, in a settled cluster) would fit where the walk tries it, below a waiting job that
// ranks above them all: then the walk would change nothing (see above).
func (g *greedy) arrivalsFail(s *policy.State) bool {
	first := s.Pending.At(policy.Pos{})
	if first == nil || int(first.Idx) >= g.arrived {
		return false
	}
	arr := g.arr[:0]
	for k := g.arrived; k < len(s.Jobs) && s.Jobs[k].Submit <= s.Now; k++ {
		arr = append(arr, s.Jobs[k])
	}
	g.arr = arr
	if len(arr) == 0 {
		return false
	}
	// From the lowest-ranked arrival up: release the running jobs ranked below it that could
	// be taken, then try it.
	slices.SortFunc(arr, func(a, b *policy.Job) int { return policy.Compare(b.K, b, a.K, a) })
	cl := g.s.Cluster
	mark := cl.Mark()
	defer cl.Rollback(mark)
	r := &g.rs
	i := 0
	for _, a := range arr {
		x := ranked{k: a.K, sub: a.Submit, id: a.ID}
		for ; i < len(r.order) && lower(&r.ent[r.order[i]], &x); i++ {
			j := r.ent[r.order[i]].j
			if j.RemIters(s.Now) <= minVictimIters {
				continue
			}
			if err := cl.Release(j.ID); err != nil {
				return false // the walk reports it
			}
		}
		if a.GPUs <= g.free() && g.p.yarn(a) != nil {
			return false
		}
	}
	return true
}

// placeArrivals places each new arrival that fits, in rank order: all the walk would do.
func (g *greedy) placeArrivals(arr []*policy.Job) error {
	for _, j := range arr {
		if j.GPUs <= g.free() {
			if _, err := g.try(j, -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// settle notes, at the end of a call, whether the cluster is settled and which jobs had arrived.
func (g *greedy) settle(s *policy.State) {
	g.settled = g.settles()
	for g.arrived < len(s.Jobs) && s.Jobs[g.arrived].Submit <= s.Now {
		g.arrived++
	}
}

// settledState is the greedy walk's memory of its last call for the shortcut above.
type settledState struct {
	settled bool
	// early: fixEarly found its range in this call, [earlyLo, earlyHi) of the running set's
	// order (which may hold no job it left in place).
	early bool
	// earlyLo and earlyHi bound, in the running set's order, jobs ranked below the walk's first
	// job W that the walk sets aside in this call, each fixed early or too close to its end.
	earlyLo, earlyHi int
	nodes            []nodeIdle
	arrived          int           // jobs of State.Jobs that had arrived by the last call
	arr              []*policy.Job // arrivals, reused
}

// A call after a walk that left the cluster settled, with finished jobs among the changes, walks
// again; but a leading part of the packing provably lands where it lies, and the walk leaves it
// in place instead of taking it and placing it back (fixEarly). Walked again, the jobs ranked
// below W meet, each at its turn, the state the last walk gave them, except on the nodes of the
// finished jobs, which may hold more idle GPUs (a job too close to its end to be taken, or
// ranked above W, counted in the base; a job of the packing was idle at the turn of every job
// ranked above it anyway) and, on every node, fewer where jobs were newly set aside. YARN
// placement looks at other nodes only as before: a job that does not fit on any of those nodes'
// idle GPUs at its turn fails again, and a job of the packing whose nodes all come before them,
// or that cannot use them, lands where it lies (see yarnStill for jobs larger than a node). So
// the walk of W, then of every job ranked below it down to the first one that might change,
// changes nothing: W fails, the waiting jobs fail, and the jobs of the packing stay where they
// are, as if placed back. Fixed early, they stay out of W's victims (set aside like jobs close to
// their end, which only leaves the walk's later attempts nothing more to take), and the walk
// goes on from that first job as before. Arrivals met on the way end the prefix, since the last
// walk never tried them; so does a cap on the waiting jobs checked.

// maxEarlyWaiting caps the waiting jobs fixEarly checks.
const maxEarlyWaiting = 64

// fixEarly finds, at a call with finished jobs after a walk that left the cluster settled (and
// nothing else but time and arrivals since), the jobs of the packing that the walk leaves in
// place (see above): a range of the running set's order, [earlyLo, earlyHi), which the attempts
// then set aside (earlySkip). It returns how many jobs it left in place.
func (g *greedy) fixEarly(s *policy.State) int {
	w := s.Pending.At(policy.Pos{}) // run has set early to false: no range unless this call makes one
	if w == nil || int(w.Idx) >= g.arrived || !g.rs.fixed {
		return 0
	}
	cl := s.Cluster
	per := cl.Shape().GPUsPerNode
	// The nodes of the finished jobs, with their idle GPUs at the turn of the next job walked.
	g.nodes = g.nodes[:0]
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			return 0
		}
		for _, gpu := range j.On {
			if n := gpu / per; !slices.ContainsFunc(g.nodes, func(x nodeIdle) bool { return x.n == n }) {
				g.nodes = append(g.nodes, nodeIdle{n: n})
			}
		}
	}
	wx := ranked{k: w.K, sub: w.Submit, id: w.ID}
	packed := func(j *policy.Job) bool { // a running job of the packing: ranked below W, not set aside
		return j.Running && g.rs.where[j.Idx] >= 0 && lower(&g.rs.ent[g.rs.where[j.Idx]], &wx) && j.RemIters(s.Now) > minVictimIters
	}
	for k := range g.nodes {
		x := &g.nodes[k]
		x.idle = cl.NodeIdle(x.n)
		for gpu := x.n * per; gpu < (x.n+1)*per; gpu++ {
			for _, id := range cl.Jobs(gpu) {
				if j := s.Lookup(id); j != nil && packed(j) {
					x.idle++
				}
			}
		}
	}
	fails := func(j *policy.Job) bool {
		for _, x := range g.nodes {
			if x.idle >= yarnPart(j.GPUs, per) {
				return false
			}
		}
		return true
	}
	if !fails(w) {
		return 0
	}
	g.early = true
	marked, waiting := 0, 0
	qp := s.Pending.Next(policy.Pos{})
	q := s.Pending.At(qp)
	r := &g.rs
	hi := r.pos(&wx)
	g.earlyLo, g.earlyHi = 0, hi
	for i := hi - 1; i >= 0; i-- {
		e := &r.ent[r.order[i]]
		p := e.j
		if p.RemIters(s.Now) <= minVictimIters {
			continue // set aside: in place whatever happens
		}
		for q != nil && policy.Compare(q.K, q, e.k, p) < 0 {
			if int(q.Idx) >= g.arrived || waiting == maxEarlyWaiting || !fails(q) {
				g.earlyLo = i + 1
				return marked
			}
			waiting++
			qp = s.Pending.Next(qp)
			q = s.Pending.At(qp)
		}
		last := p.On[len(p.On)-1] / per
		for k := range g.nodes {
			if x := &g.nodes[k]; x.n <= last && x.idle >= yarnPart(p.GPUs, per) {
				g.earlyLo = i + 1
				return marked
			}
		}
		marked++
		g.stats.EarlyFixed++
		for k := range g.nodes {
			x := &g.nodes[k]
			for _, gpu := range p.On {
				if gpu/per == x.n {
					x.idle--
				}
			}
		}
	}
	return marked
}

// earlySkip returns, when the running set's cursor lies in fixEarly's range, how many running
// jobs from the cursor on to the range's end an attempt sets aside in one step (else 0); the
// attempt has checked that the first ranks below its job. The attempt would set aside, one by
// one, each of them that ranks below its job: fixEarly fixed it early or found it too close to
// its end. Those ranked above stop this attempt's search for victims, and every later one's in
// the call, since the walk only descends. (The cursor only moves forward in such a call: running
// jobs are put back only by tentative victims, and walks that fix jobs early take theirs for good.
// A cursor moved back would meet the range again and skip it again.)
func (g *greedy) earlySkip() int {
	if c := g.rs.cursor; g.early && c >= g.earlyLo && c < g.earlyHi {
		return g.earlyHi - c
	}
	return 0
}

type nodeIdle struct{ n, idle int }

// yarnPart is the fewest idle GPUs a node must hold to take part of a job of gpus GPUs under
// YARN placement on nodes of per GPUs: all of them for a job of at most a node, else the rest
// beyond whole nodes, or a whole node.
func yarnPart(gpus, per int) int {
	if gpus <= per {
		return gpus
	}
	if r := gpus % per; r > 0 {
		return r
	}
	return per
}
