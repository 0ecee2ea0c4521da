package walk

import (
	"slices"

	"github.com/sharebench/sharebench/policy"
)

// The settled shortcut of sjf (remaining times as keys, YARN placement, the authors' victims).
//
// A walk leaves, as with fixed keys (settled.go), a first waiting job W that failed after taking
// every running job ranked below it that could be taken, and below W a packing in rank order:
// the jobs the walk placed after W's turn, each where it lies. Call the packing's order L. Until
// something but time and arrivals changes, the running jobs' keys only fall (their rates stay; a
// restart overhead holds a key still) and the waiting jobs' keys stay, so no running job outside
// L drops below W and no waiting job rises. Only a change of a key's form breaks that: the last
// call (a walk, or this shortcut) ranked the waiting jobs it started by their keys as waiting
// jobs, which their keys as running jobs may exceed by a nanosecond's rounding, and the walk
// ranked the victims it stopped by their keys as running jobs (a victim it moved keeps its key's
// form). The last call's starts are the re-rated jobs of the next: outside L, none may be a job
// W would take; in L, every job must rank no lower than in the walk. A stopped victim must rank
// no higher (and W, when it is one, keeps its key). With no waiting job there is no W and no L.
//
// A job of L may rise above W or come too close to its end: W no longer takes it, and it stays
// where it lies, as a job fixed early does (settled.go). W takes the others as before and meets
// a base that holds at least what it held, so it fails again (YARN placement is monotone). While
// they keep L's order, the packing lands each where it lies; keys that fall at different speeds
// (a restart overhead) can reorder L, and the call then walks. A waiting job below W, which
// ranks no higher than in the walk while every job of L ranks no lower, meets at its turn at
// least the jobs it met, and fails again without taking any: W took them all.
//
// Arrivals that rank above W and each fit, in rank order, on the idle GPUs are placed first by
// the walk, before W's turn, without taking a job; their GPUs were idle at the turn of every job
// of the packing, which never took them, so they change no placement of the packing either (as
// a job fixed early does). Such a call places them and changes nothing else. Any other arrival,
// a finished job, a re-keyed job, a re-rated job other than the last call's starts (the
// lineage's per-event overhead gives progress back, which raises keys) or a live run's
// measurements need the walk.

// remState is the sjf walk's memory of its last call for the shortcut above.
type remState struct {
	on bool          // the last call left the cluster settled (a walk, or this shortcut)
	w  *policy.Job   // W (nil: no job waits)
	wk policy.Key    // W's key in the walk that found it
	l  []*policy.Job // the packing below W, in the walk's order
	lk []policy.Key  // their keys in the walk
	// nl and nlk are the next l and lk, which the shortcut builds while it checks l.
	nl  []*policy.Job
	nlk []policy.Key
	// wait holds the victims the walk stopped, with their keys in the walk: as waiting jobs their
	// keys may rank them a rounding higher.
	wait []ranked
	gen  uint32 // inL's stamp of the current l
	// call counts the calls; started[j.Idx] is the call that started j last, inL[j.Idx] the gen
	// of the l that holds j (or held it: dropping j from l keeps the stamp) if the walk that
	// made l started j; remSkip looks up no other job.
	call     uint32
	started  []uint32
	inL      []uint32
	placed   []placed // this call's placements in walk order, with the walk's keys
	answered bool     // the shortcut answered this call
}

// remSettles reports whether g's walks leave the cluster settled for the shortcut above.
func (g *greedy) remSettles() bool {
	return g.sc.remSettled
}

// remBegin starts a call's bookkeeping when the shortcut applies to g (remOn), before sync, and
// reports whether the call is quiet (remQuiet).
func (g *greedy) remBegin(s *policy.State) bool {
	if g.remOn = g.remSettles(); !g.remOn {
		return false
	}
	r := &g.rem
	r.call++
	r.answered = false
	r.placed = r.placed[:0]
	if n := len(s.Jobs) - len(r.started); n > 0 {
		r.started = append(r.started, make([]uint32, n)...)
		r.inL = append(r.inL, make([]uint32, n)...)
	}
	return g.remQuiet(s)
}

// remQuiet reports, before sync, whether nothing but time and arrivals changed since a call that
// left the cluster settled: the only re-rated jobs are that call's starts.
func (g *greedy) remQuiet(s *policy.State) bool {
	r := &g.rem
	if !r.on || len(s.Finished) > 0 || len(g.rekeyed) > 0 || s.Resync {
		return false
	}
	for _, j := range s.Rerated {
		if !j.Running || r.started[j.Idx] != r.call-1 {
			return false
		}
	}
	return true
}

// remSkip answers a quiet call without the walk when the shortcut above holds: it places the
// arrivals and reports true, or changes nothing and reports false (also on an error, which the
// walk then reports).
func (g *greedy) remSkip(s *policy.State) bool {
	r := &g.rem
	var w *policy.Job
	for q := range s.Pending.All() {
		if int(q.Idx) < g.arrived {
			w = q
			break
		}
	}
	if w != r.w || w != nil && w.K != r.wk {
		return false
	}
	now := s.Now
	// takes reports whether W would take running job j, of key k and iters iterations left.
	takes := func(j *policy.Job, k policy.Key, iters float64) bool {
		return iters > minVictimIters && policy.Compare(k, j, w.K, w) > 0
	}
	if w != nil {
		for _, j := range s.Rerated {
			if r.inL[j.Idx] == r.gen {
				continue
			}
			if k, iters := remKeyIters(j, now); takes(j, k, iters) { // runKey is runRemKey (drain)
				g.stats.Rounded++
				return false
			}
		}
	}
	arr := g.arr[:0]
	for k := g.arrived; k < len(s.Jobs) && s.Jobs[k].Submit <= now; k++ {
		arr = append(arr, s.Jobs[k])
	}
	g.arr = arr
	slices.SortFunc(arr, func(a, b *policy.Job) int { return policy.Compare(a.K, a, b.K, b) })
	if w != nil && len(arr) > 0 && policy.Compare(arr[len(arr)-1].K, arr[len(arr)-1], w.K, w) >= 0 {
		return false
	}
	for _, v := range r.wait { // they wait still: only a walk starts them, and it makes a new list
		if policy.Compare(v.j.K, v.j, v.k, v.j) < 0 {
			g.stats.Rounded++
			return false // a stopped victim ranks higher than in the walk
		}
	}
	// The jobs of L W still takes go to nl, in L's order: the jobs W no longer takes never come
	// back to the packing, since keys only fall, and so do iterations left. (A job of L runs
	// still: it stops only by finishing, or by a walk's plan, which makes a new L.)
	nl, nlk := r.nl[:0], r.nlk[:0]
	if w != nil {
		var prev *policy.Job
		var pk policy.Key
		for i, j := range r.l {
			if k, iters := remKeyIters(j, now); takes(j, k, iters) {
				if policy.Compare(k, j, r.lk[i], j) > 0 {
					g.stats.Rounded++
					return false // it ranks lower than in the walk: a waiting job may pass it
				}
				if prev != nil && policy.Compare(k, j, pk, prev) <= 0 {
					g.stats.Reordered++
					return false // L's order changed
				}
				prev, pk = j, k
				nl, nlk = append(nl, j), append(nlk, r.lk[i])
			}
		}
	}
	r.nl, r.nlk = nl, nlk
	if !g.placeAllArrivals(arr) {
		return false
	}
	r.l, r.nl, r.lk, r.nlk = r.nl, r.l, r.nlk, r.lk
	r.wait = r.wait[:0] // checked: both keys stay while the victims wait
	g.stats.Packed += len(r.l)
	r.answered = true
	return true
}

// placeAllArrivals places each job of arr, in order, on the idle GPUs the ones before it left,
// and reports true; if one does not fit (or fails), it places none and reports false.
func (g *greedy) placeAllArrivals(arr []*policy.Job) bool {
	cl := g.s.Cluster
	mark := cl.Mark()
	for i, a := range arr {
		ok := a.GPUs <= g.free()
		if ok {
			var err error
			if ok, err = g.try(a, -1); err != nil {
				ok = false
			}
		}
		if !ok {
			cl.Rollback(mark)
			g.plan.Start = g.plan.Start[:0]
			g.rem.placed = g.rem.placed[:0]
			for _, b := range arr[:i] {
				g.rem.started[b.Idx] = 0 // never started before: it just arrived
			}
			return false
		}
	}
	cl.Commit(mark)
	return true
}

// placed is a placement of the walk: job j, its key k in the walk, and whether it starts j.
type placed struct {
	j     *policy.Job
	k     policy.Key
	start bool
}

// remPlaced notes, during a walk, a placement of j (key k in the walk); start: it starts j.
func (g *greedy) remPlaced(j *policy.Job, k policy.Key, start bool) {
	r := &g.rem
	r.placed = append(r.placed, placed{j, k, start})
	if start {
		r.started[j.Idx] = r.call
	}
}

// remSettle notes, at the end of a walk (not of this shortcut), W and the packing below it.
func (g *greedy) remSettle(s *policy.State) {
	r := &g.rem
	if !g.remOn || r.answered {
		return
	}
	r.on = true
	// W is the first job that waits after the plan: a pending job not started, or a victim
	// neither placed back nor started elsewhere.
	var w *policy.Job
	var wk policy.Key
	for q := range s.Pending.All() {
		if r.started[q.Idx] != r.call {
			w, wk = q, q.K
			break
		}
	}
	r.wait = r.wait[:0]
	for i := range g.victims {
		v := &g.victims[i]
		if v.cancelled || r.started[v.j.Idx] == r.call {
			continue
		}
		r.wait = append(r.wait, v.ranked)
		if w == nil || policy.Compare(v.k, v.j, wk, w) < 0 {
			w, wk = v.j, v.k
		}
	}
	r.w, r.wk = w, wk
	r.gen++
	l, lk := r.l[:0], r.lk[:0]
	if w != nil {
		for _, x := range r.placed {
			if policy.Compare(x.k, x.j, wk, w) > 0 {
				l, lk = append(l, x.j), append(lk, x.k)
				if x.start {
					// inL is read only for the next call's re-rated jobs, this call's starts
					// (remQuiet): a job of L that stays where it was needs no stamp.
					r.inL[x.j.Idx] = r.gen
				}
			}
		}
	}
	r.l, r.lk = l, lk
}
