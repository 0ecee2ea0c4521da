package walk

import (
	"fmt"
	"slices"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// Reference returns the plain executor of d: at every call it walks every pending job, and every
// job it stops, in rank order, as policy.Greedy describes, with no memory of earlier calls but
// d's own. It defines what Fast must decide. It also checks what d states about itself, and
// fails the call when a claim does not hold: Exclusive and Order.
func Reference(d *policy.Greedy) policy.Policy {
	r := &reference{d: d, ranks: map[*policy.Job]policy.Key{}}
	return wrap(d, r.schedule)
}

type reference struct {
	d *policy.Greedy
	// ranks holds, for OrderFixed, the rank of each running job at the last call, to check that
	// only Hooks.Before changes it.
	ranks map[*policy.Job]policy.Key
}

// ranked is a running job and its rank, or a pending job and its key.
type rankedJob struct {
	j *policy.Job
	k policy.Key
}

func before(a, b rankedJob) int { return policy.Compare(a.k, a.j, b.k, b.j) }

// refWalk is one call's walk.
type refWalk struct {
	d    *policy.Greedy
	s    *policy.State
	call *policy.Call
	plan *policy.Plan
	// candidates holds the running jobs the walk may still stop, highest rank first: victims
	// come off the end.
	candidates []rankedJob
	// stopped holds the jobs stopped in this call, in the order they were stopped; walked says
	// which of them the walk has met again, back which ones went back where they were.
	stopped        []rankedJob
	walked, back   []bool
	started        map[trace.JobID]policy.Partner // jobs placed in this call, as partners
	startedInOrder []trace.JobID
}

func (r *reference) schedule(s *policy.State) (policy.Plan, error) {
	d := r.d
	var plan policy.Plan
	if d.Hooks != nil {
		reranked, walk := d.Hooks.Before(s, &plan)
		for _, j := range reranked {
			delete(r.ranks, j)
		}
		if !walk {
			return plan, nil
		}
	}
	if err := r.checkRanks(s); err != nil {
		return plan, err
	}
	w := &refWalk{d: d, s: s, plan: &plan, started: map[trace.JobID]policy.Partner{}}
	w.call = policy.NewCall(s, w.resident)
	if d.Preempt {
		for _, j := range s.Running() {
			w.candidates = append(w.candidates, rankedJob{j, d.Rank(s.Now, j)})
		}
		slices.SortFunc(w.candidates, before)
	}
	if err := w.run(); err != nil {
		return plan, err
	}
	if d.Hooks != nil {
		d.Hooks.After(s, &plan)
	}
	return plan, nil
}

// run walks the pending jobs in order and, at their rank, the jobs it stops.
func (w *refWalk) run() error {
	var pending []*policy.Job
	for j := range w.s.Pending.All() {
		pending = append(pending, j)
	}
	next := 0
	for {
		v := w.nextStopped()
		switch {
		case v >= 0 && (next == len(pending) || before(w.stopped[v], rankedJob{pending[next], pending[next].K}) < 0):
			w.walked[v] = true
			if _, err := w.attempt(w.stopped[v].j, w.stopped[v].k, v); err != nil {
				return err
			}
		case next < len(pending):
			j := pending[next]
			next++
			if _, err := w.attempt(j, j.K, -1); err != nil {
				return err
			}
		default:
			// The stops that stand, in the order they were made.
			for i, v := range w.stopped {
				if !w.back[i] {
					w.plan.Stop = append(w.plan.Stop, v.j.ID)
				}
			}
			return nil
		}
	}
}

// nextStopped returns the index of the highest-ranked stopped job not walked again yet, or -1.
func (w *refWalk) nextStopped() int {
	best := -1
	for i, v := range w.stopped {
		if !w.walked[i] && (best < 0 || before(v, w.stopped[best]) < 0) {
			best = i
		}
	}
	return best
}

// attempt places j (key k; v ≥ 0: w.stopped[v]) if it fits, else, with preemption, stops running
// jobs ranked below it, lowest first, until it fits.
func (w *refWalk) attempt(j *policy.Job, k policy.Key, v int) (bool, error) {
	ok, err := w.try(j, v)
	if ok || err != nil || !w.d.Preempt {
		return ok, err
	}
	cl := w.s.Cluster
	mark := cl.Mark()
	var victims []rankedJob
	for !ok && len(w.candidates) > 0 {
		r := w.candidates[len(w.candidates)-1]
		if before(r, rankedJob{j, k}) <= 0 {
			break // every job left ranks above j
		}
		w.candidates = w.candidates[:len(w.candidates)-1]
		if r.j.RemIters(w.s.Now) <= policy.MinVictimIters || w.hostsStarted(r.j) {
			continue // left running for the rest of the call
		}
		if err := cl.Release(r.j.ID); err != nil {
			return false, fmt.Errorf("policy %s: preempt job %d: %w", w.d.Name, r.j.ID, err)
		}
		victims = append(victims, r)
		if ok, err = w.try(j, v); err != nil {
			return false, err
		}
	}
	if !ok && w.d.Victims == policy.VictimsTentative {
		cl.Rollback(mark)
		for _, r := range victims {
			i, _ := slices.BinarySearchFunc(w.candidates, r, before)
			w.candidates = slices.Insert(w.candidates, i, r)
		}
		return false, nil
	}
	cl.Commit(mark)
	for _, r := range victims {
		w.stopped = append(w.stopped, r)
		w.walked, w.back = append(w.walked, false), append(w.back, false)
	}
	return ok, nil
}

// try places j if Place finds GPUs for it now. A stopped job (v ≥ 0) placed again on exactly its
// GPUs at its option goes back where it was: it was never stopped.
func (w *refWalk) try(j *policy.Job, v int) (bool, error) {
	pl, ok, err := w.d.Place.Place(w.call, j)
	if err != nil {
		return false, fmt.Errorf("policy %s: job %d: %w", w.d.Name, j.ID, err)
	}
	if !ok {
		return false, nil
	}
	cl := w.s.Cluster
	if w.d.Exclusive {
		for _, g := range pl.GPUs {
			if cl.Count(g) > 0 {
				return false, fmt.Errorf("policy %s: job %d placed on GPU %d, which holds a job, though the policy says it never shares", w.d.Name, j.ID, g)
			}
		}
	}
	o := j.Options[pl.Opt]
	if err := cl.PlaceTagged(j.ID, pl.GPUs, o.Mem, o.Tag); err != nil {
		return false, fmt.Errorf("policy %s: job %d: %w", w.d.Name, j.ID, err)
	}
	pl.Job = j.ID
	back := v >= 0 && pl.Opt == j.Opt && sameGPUs(pl.GPUs, j.On)
	// Share checks of later placements see the job as a partner.
	if back {
		w.started[j.ID] = policy.Partner{Job: j, Opt: j.Opt, Rem: j.RemTime(w.s.Now).Seconds()}
	} else {
		w.started[j.ID] = policy.Partner{Job: j, Opt: pl.Opt, Rem: j.RemIters(w.s.Now) * o.Excl.Seconds()}
	}
	if back {
		w.back[v] = true
		return true, nil
	}
	w.plan.Start = append(w.plan.Start, pl)
	return true, nil
}

// resident is Call.Resident: a job placed in this call, or a running job.
func (w *refWalk) resident(id trace.JobID) (policy.Partner, error) {
	if p, ok := w.started[id]; ok {
		return p, nil
	}
	j := w.s.Lookup(id)
	if j == nil || !j.Running {
		return policy.Partner{}, fmt.Errorf("GPU holds job %d, which is neither running nor placed", id)
	}
	return policy.Partner{Job: j, Opt: j.Opt, Rem: j.RemTime(w.s.Now).Seconds()}, nil
}

// hostsStarted reports whether a job placed in this call shares a GPU with running job r: its
// share check assumed r keeps running.
func (w *refWalk) hostsStarted(r *policy.Job) bool {
	for _, g := range r.On {
		for _, id := range w.s.Cluster.Jobs(g) {
			if _, ok := w.started[id]; ok && id != r.ID {
				return true
			}
		}
	}
	return false
}

// sameGPUs reports whether a and b hold the same GPUs.
func sameGPUs(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for _, g := range a {
		if !slices.Contains(b, g) {
			return false
		}
	}
	return true
}

// checkRanks checks, at the start of a walk, that the keys and ranks are what d says they are:
// with OrderRemaining, remaining times; with OrderFixed, the ranks of the last call unless
// Hooks.Before changed them.
func (r *reference) checkRanks(s *policy.State) error {
	d := r.d
	if d.Order == policy.OrderRemaining {
		for j := range s.Pending.All() {
			if want := (policy.Key{A: j.P.Rem * j.Options[j.Fast].Excl.Seconds()}); j.K != want {
				return fmt.Errorf("policy %s: waiting job %d has key %v, not its remaining time %v as the policy says", d.Name, j.ID, j.K, want)
			}
		}
	}
	if !d.Preempt {
		return nil
	}
	running := s.Running()
	for _, j := range running {
		k := d.Rank(s.Now, j)
		switch d.Order {
		case policy.OrderRemaining:
			if want := (policy.Key{A: j.RemTime(s.Now).Seconds()}); k != want {
				return fmt.Errorf("policy %s: job %d ranks %v, not by its remaining time %v as the policy says", d.Name, j.ID, k, want)
			}
		case policy.OrderFixed:
			if old, ok := r.ranks[j]; ok && old != k {
				return fmt.Errorf("policy %s: job %d's rank moved from %v to %v though the policy says it is fixed", d.Name, j.ID, old, k)
			}
		}
	}
	if d.Order == policy.OrderFixed {
		clear(r.ranks)
		for _, j := range running {
			r.ranks[j] = d.Rank(s.Now, j)
		}
	}
	return nil
}
