package policy

// A walk of a preemptive policy with YARN placement, fixed keys and the authors' victims (fifo,
// tiresias-entry-order and its aliases) leaves the cluster settled: walked again while only time
// passes, it changes nothing. Such a walk ends, below its first job that cannot be placed even
// after taking every running job ranked below it (or that finds none to take), with a first-fit
// packing, in rank order, of every job ranked below that one, on the GPUs of the jobs ranked
// above it and of those set aside as too close to their end. Walked again, the first waiting job
// meets that same base once it has taken what now runs below it: it fails again (YARN
// placement is monotone: a job that fails on some idle GPUs fails on fewer), and the packing of
// the same jobs in the same order from the same base lands each one where it lies, which cancels
// every preemption. Time only sets more jobs aside, and a job fixed early where the packing puts
// it changes no other job's placement (the jobs packed before it never took its GPUs, and YARN
// picks the first node and the lowest GPUs that fit).
//
// Jobs that arrived since, ranked below every running and every waiting job, come last in that
// walk and find nothing to take: each is placed if it fits. So a call that follows a walk (or
// this shortcut) with nothing in between but time and such arrivals only tries the arrivals.
// A finished job, a re-keyed job, a promotion, a live run's measured progress or an arrival that
// ranks higher all need the walk.

// settles reports whether g's walks leave the cluster settled.
func (g *greedy) settles() bool {
	return g.preempt && g.exclusive && g.bySize && g.timeless && !g.tentative && !g.exhaustive
}

// quiet reports, before sync, whether nothing but time and arrivals changed since a walk that
// left the cluster settled. (Re-rated jobs are either the previous call's starts or, with the
// lineage's per-event overhead, every running job: an event gives back at most the progress made
// since the previous one, so a job's remaining iterations still never grow from call to call.)
func (g *greedy) quiet(s *State) bool {
	return g.settled && len(s.Finished) == 0 && len(g.rekeyed) == 0 && !s.Resync
}

// arrivals returns the jobs that arrived since the last call, in rank order, if they rank below
// every other waiting job and every running job; ok is false otherwise.
func (g *greedy) arrivals(s *State) (arr []*Job, ok bool) {
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
		if r, any := g.rs.bottom(); any && Compare(first.K, first, r.k, r.j) <= 0 {
			return nil, false
		}
	}
	for i, k := 0, n-1; i < k; i, k = i+1, k-1 {
		arr[i], arr[k] = arr[k], arr[i]
	}
	return arr, true
}

// placeArrivals places each new arrival that fits, in rank order: all the walk would do.
func (g *greedy) placeArrivals(arr []*Job) error {
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
func (g *greedy) settle(s *State) {
	g.settled = g.settles()
	for g.arrived < len(s.Jobs) && s.Jobs[g.arrived].Submit <= s.Now {
		g.arrived++
	}
}

// settledState is the greedy walk's memory of its last call for the shortcut above.
type settledState struct {
	settled bool
	arrived int    // jobs of State.Jobs that had arrived by the last call
	arr     []*Job // arrivals, reused
	skips   int    // calls the shortcut answered (for tests)
}
