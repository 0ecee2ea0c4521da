package walk

import (
	"cmp"
	"math"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
)

// runSet holds running jobs in a binary heap, the lowest priority on top, by key bounds: each
// entry's key was exact when computed (at time at) and is an upper bound of the job's key later,
// as long as the engine has not re-rated the job and the policy has not re-keyed it. That holds
// for the keys the greedy policies rank running jobs by: fixed ones (submission, Tiresias queue
// and entry time) and remaining times, which only shrink while a job's rate stays. The walk of a
// call (start, lowest) computes exact keys from the top down as far as it goes, so the heap
// survives from call to call instead of being rebuilt from every running job.
//
// With remaining times as keys (drain), the heap is instead ordered by a bound on each job's
// finish time (finishBound), which time does not change: its entries need no refresh as time
// passes, and a call's bounds (the finish bound less the time) are tight, so its walk computes
// few keys beyond those of the jobs it takes.
//
// With fixed keys (a timeless policy's, which change only when the policy re-keys a job, and
// then through put), the set is instead a list of the jobs sorted lowest priority first: a call
// takes victims with a cursor, without the frontier's heap steps (runset_fixed.go).
type runSet struct {
	items []ranked
	where []int32 // by Job.Idx: index in items (fixed: slot), -1 if absent
	front []fentry
	pool  []ranked      // the frontier entries' jobs and keys, by fentry.slot() (one call's)
	drain bool          // the keys are remaining times (runRemKey's, which lowest computes itself)
	now   time.Duration // the call's
	// lastJ is the job lowest computed a drain key of last in this call, and lastIters its
	// iterations left at now, which the same RemAt gave (see remIters).
	lastJ     *policy.Job
	lastIters float64
	fixedSet
}

func (r *runSet) less(a, b int) bool {
	if r.drain {
		x, y := &r.items[a], &r.items[b]
		return x.at > y.at || x.at == y.at && x.id > y.id
	}
	return lower(&r.items[a], &r.items[b])
}

// finishBound bounds, from at on and while the key is above 0, now plus the key of running job
// j, exact at at with k, as long as the engine does not re-rate j: its remaining time holds
// through its restart overhead, then falls at its rate, which makes one second per second but
// for rounding (past the bound the key is 0, which boundA's clamp covers). Each computed key
// is off its line by a few units in the last place of the key at the job's last settle (the
// progress's Rem), and the rate's rounding adds as little per second: the slack, 2^-40 of that
// key and 16 ns, covers it many times over. Never when j's rate is not the one its key assumes.
func finishBound(j *policy.Job, k policy.Key, at time.Duration) time.Duration {
	excl := float64(j.Options[j.Opt].Excl)
	slope := j.P.Rate * excl / 1e9 * j.Xi
	rem, full := j.RemTime(at), simtime.FromNonNegNanos(j.P.Rem*excl*j.Xi)
	t0 := max(at, j.P.At+j.P.Overhead)
	if !(slope >= 1-1e-14 && slope <= 1+1e-14) || full >= 1<<61 || t0 >= 1<<61 || rem.Seconds() != k.A {
		return simtime.Never
	}
	return t0 + rem + full>>40 + 16
}

// boundA is the first key of a bound entry with finish bound e at now: at least the key, in
// seconds, of the job and of every job below it in items. It converts e-now without
// Duration.Seconds' two steps, so it adds a nanosecond and a relative 2^-40 for that rounding.
func boundA(e, now time.Duration) float64 {
	if e == simtime.Never {
		return math.Inf(1)
	}
	d := max(e-now, 0)
	return float64(d+1+d>>40) * 1e-9
}

// lower reports whether x ranks below y: Compare(x.k, x.j, y.k, y.j) > 0 on the copies in the
// entries. Equal first keys and NaNs go to lowerTie.
func lower(x, y *ranked) bool {
	return x.k.A > y.k.A || !(x.k.A < y.k.A) && lowerTie(x, y)
}

// lowerTie is lower for first keys that are equal, or NaN: the rare case.
func lowerTie(x, y *ranked) bool {
	if c := cmp.Compare(x.k.A, y.k.A); c != 0 {
		return c > 0
	}
	switch {
	case x.k.B != y.k.B:
		return x.k.B > y.k.B
	case x.sub != y.sub:
		return x.sub > y.sub
	}
	return x.id > y.id
}

// entry returns j's entry with key k, exact at time at.
func entry(j *policy.Job, k policy.Key, at time.Duration) ranked {
	return ranked{j: j, k: k, at: at, sub: j.Submit, id: j.ID}
}

func (r *runSet) swap(a, b int) {
	r.items[a], r.items[b] = r.items[b], r.items[a]
	r.where[r.items[a].j.Idx] = int32(a)
	r.where[r.items[b].j.Idx] = int32(b)
}

func (r *runSet) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !r.less(i, p) {
			return
		}
		r.swap(i, p)
		i = p
	}
}

func (r *runSet) down(i int) {
	n := len(r.items)
	for {
		l, m := 2*i+1, i
		if l < n && r.less(l, m) {
			m = l
		}
		if l+1 < n && r.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			return
		}
		r.swap(i, m)
		i = m
	}
}

// grow makes room for jobs with indices below n.
func (r *runSet) grow(n int) {
	for len(r.where) < n {
		r.where = append(r.where, -1)
	}
}

// put adds x, or replaces the entry of its job.
func (r *runSet) put(x ranked) {
	if r.fixed {
		r.fixedPut(x)
		return
	}
	if r.drain {
		x.at = finishBound(x.j, x.k, x.at)
	}
	if i := r.where[x.j.Idx]; i >= 0 {
		r.items[i] = x
		r.up(int(i))
		r.down(int(r.where[x.j.Idx]))
		return
	}
	r.items = append(r.items, x)
	r.where[x.j.Idx] = int32(len(r.items) - 1)
	r.up(len(r.items) - 1)
}

// remove drops j's entry if there is one.
func (r *runSet) remove(j *policy.Job) {
	if r.fixed {
		r.fixedRemove(j)
		return
	}
	i := int(r.where[j.Idx])
	if i < 0 {
		return
	}
	n := len(r.items) - 1
	if i != n {
		r.swap(i, n)
	}
	r.where[j.Idx] = -1
	r.items = r.items[:n]
	if i != n {
		r.up(i)
		r.down(int(r.where[r.items[i].j.Idx]))
	}
}

// clear empties the set.
func (r *runSet) clear() {
	if r.fixed {
		r.fixedClear()
		return
	}
	for _, x := range r.items {
		r.where[x.j.Idx] = -1
	}
	r.items = r.items[:0]
}

// The jobs of a call come out of the set in order through a frontier, a small heap that walks
// the set's heap without changing it: taking a job out of the set for the rest of a call, then
// maybe back, costs a few operations on the frontier instead of the whole heap's depth, and the
// many victims a call places back where they were leave the set as it was.
//
// A frontier entry is either an item still to be expanded (its key a bound) or one whose key is
// exact and whose children are in the frontier; every job not taken out is in the frontier or
// below an unexpanded entry, so an exact entry on top is the lowest job left. The heap moves
// small entries that hold the first key, which decides most comparisons; the rest of the
// entry stays in the pool.
type fentry struct {
	a float64 // pool[slot].k.A
	// si holds the slot in pool (the high 32 bits) and the index in items (-1 for a job put
	// back) times two, plus one if the key is exact (the low 32 bits): the heap moves 16 bytes
	// an entry.
	si uint64
}

func (e *fentry) slot() int32 { return int32(e.si >> 32) }
func (e *fentry) item() int32 { return int32(uint32(e.si)) >> 1 }
func (e *fentry) exact() bool { return e.si&1 != 0 }
func (e *fentry) markExact()  { e.si |= 1 }

// fnew makes a frontier entry for x.
func (r *runSet) fnew(x ranked, i int32, exact bool) fentry {
	r.pool = append(r.pool, x)
	ix := i * 2
	a := x.k.A
	if exact {
		ix++
	} else if r.drain {
		a = boundA(x.at, r.now)
	}
	return fentry{a: a, si: uint64(len(r.pool)-1)<<32 | uint64(uint32(ix))}
}

// start begins a call's walk at time now: it refreshes the top's bound until it is exact (which
// keeps later calls' bounds tight) and seeds the frontier with it.
func (r *runSet) start(now time.Duration, key func(*policy.Job) policy.Key) {
	r.lastJ = nil // iterations left at an earlier call's time
	if r.fixed {
		r.fixedStart()
		return
	}
	if r.drain {
		r.drainStart(now)
		return
	}
	r.front, r.pool = r.front[:0], r.pool[:0]
	for len(r.items) > 0 {
		top := &r.items[0]
		if top.at == now {
			break
		}
		k := key(top.j)
		same := policy.Compare(k, top.j, top.k, top.j) == 0
		top.k, top.at = k, now
		if same {
			break
		}
		r.down(0)
	}
	if len(r.items) > 0 {
		r.fpush(r.fnew(r.items[0], 0, r.items[0].at == now))
		r.expand(0)
	}
}

// drainStart is start for a drain set, whose finish bounds need no refresh.
func (r *runSet) drainStart(now time.Duration) {
	r.front, r.pool, r.now = r.front[:0], r.pool[:0], now
	if len(r.items) > 0 {
		r.fpush(r.fnew(r.items[0], 0, false))
	}
}

// expand pushes the children of the frontier entry that was items[i].
func (r *runSet) expand(i int32) {
	for c := 2*i + 1; c <= 2*i+2 && int(c) < len(r.items); c++ {
		r.fpush(r.fnew(r.items[c], c, false))
	}
}

// lowest returns the lowest-priority job not taken out in this call, with its exact key, or nil.
// The entry is the set's own, valid until the set next changes (lowest, start, putBack, or put
// and remove between calls): callers copy what they keep. A drain set computes its keys itself
// (runRemKey's, through remKeyIters) and ignores key. The entry's at is left as it was: no one
// reads it once the key is exact.
func (r *runSet) lowest(key func(*policy.Job) policy.Key) *ranked {
	if r.fixed {
		return r.fixedLowest()
	}
	for len(r.front) > 0 {
		top := &r.front[0]
		x := &r.pool[top.slot()]
		if !top.exact() {
			// Its exact key is at most its bound: it stays on top if they are equal, else it
			// sinks; its children, bounded by it, join the frontier either way.
			var k policy.Key
			if r.drain {
				// runRemKey, without a call through key at every victim.
				k, r.lastIters = remKeyIters(x.j, r.now)
				r.lastJ = x.j
			} else {
				k = key(x.j)
			}
			i := top.item()
			top.markExact()
			if k != x.k || r.drain {
				x.k, top.a = k, k.A
				r.fdown(0)
			}
			r.expand(i)
			continue
		}
		return x
	}
	return nil
}

// take takes the job lowest returned out of the set for the rest of the call.
func (r *runSet) take() {
	if r.fixed {
		r.fixedTake()
		return
	}
	r.fpop()
}

// putBack returns a job taken out in this call.
func (r *runSet) putBack(x ranked) {
	if r.fixed {
		r.fixedPutBack(x)
		return
	}
	r.fpush(r.fnew(x, -1, true))
}

// fbefore orders frontier entries as less orders items: a total order (IDs are unique), so any
// heap of them pops in one order.
func (r *runSet) fbefore(x, y *fentry) bool {
	// Ties and NaNs go to ftie.
	return x.a > y.a || !(x.a < y.a) && r.ftie(x, y)
}

// ftie orders frontier entries whose first keys are equal, or NaN, as lowerTie does.
func (r *runSet) ftie(x, y *fentry) bool { return lower(&r.pool[x.slot()], &r.pool[y.slot()]) }

// fpush and fdown move a hole instead of swapping entries, which writes each entry once.
func (r *runSet) fpush(e fentry) {
	r.front = append(r.front, e)
	f := r.front
	i := len(f) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !r.fbefore(&e, &f[p]) {
			break
		}
		f[i] = f[p]
		i = p
	}
	f[i] = e
}

func (r *runSet) fpop() {
	n := len(r.front) - 1
	r.front[0] = r.front[n]
	r.front = r.front[:n]
	r.fdown(0)
}

func (r *runSet) fdown(i int) {
	f := r.front
	n := len(f)
	if i >= n {
		return
	}
	e := f[i]
	for {
		m := 2*i + 1
		if m >= n {
			break
		}
		if c := m + 1; c < n && r.fbefore(&f[c], &f[m]) {
			m = c
		}
		if !r.fbefore(&f[m], &e) {
			break
		}
		f[i] = f[m]
		i = m
	}
	f[i] = e
}
