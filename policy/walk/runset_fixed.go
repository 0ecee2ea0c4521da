package walk

import (
	"fmt"
	"slices"
	"sort"

	"github.com/sharebench/sharebench/policy"
)

// fixedSet is runSet for fixed keys: the running jobs in a list sorted lowest priority first.
// A call takes victims from the front with a cursor; putting a job in or out moves the list's
// tail by one, which costs less than the frontier's heap steps at every victim. The entries sit
// in slots, as many as jobs run at once, rather than by job index, so they stay few and close
// together however large the trace.
type fixedSet struct {
	fixed  bool
	order  []int32  // slots, lowest priority first
	ent    []ranked // by slot: the job's entry, with its key when put
	out    []uint32 // by slot: the call that took the job out
	spare  []int32  // slots free for reuse
	call   uint32   // the current call, from 1
	cursor int      // no job before it is left in this call
}

// pos returns where the entry x sits, or would sit, in order.
func (f *fixedSet) pos(x *ranked) int {
	return sort.Search(len(f.order), func(i int) bool { return !lower(&f.ent[f.order[i]], x) })
}

func (r *runSet) fixedPut(x ranked) {
	i := x.j.Idx
	if r.where[i] >= 0 {
		r.fixedRemove(x.j)
	}
	var sl int32
	if n := len(r.spare); n > 0 {
		sl, r.spare = r.spare[n-1], r.spare[:n-1]
		r.ent[sl], r.out[sl] = x, 0
	} else {
		sl = int32(len(r.ent))
		r.ent, r.out = append(r.ent, x), append(r.out, 0)
	}
	r.order = slices.Insert(r.order, r.pos(&x), sl)
	r.where[i] = sl
}

func (r *runSet) fixedRemove(j *policy.Job) {
	sl := r.where[j.Idx]
	if sl < 0 {
		return
	}
	p := r.pos(&r.ent[sl])
	if p == len(r.order) || r.order[p] != sl {
		panic(fmt.Sprintf("policy: running job %d is not where its key puts it", j.ID))
	}
	r.order = slices.Delete(r.order, p, p+1)
	r.where[j.Idx] = -1
	r.ent[sl] = ranked{} // drops the job's pointer
	r.spare = append(r.spare, sl)
}

func (r *runSet) fixedClear() {
	for _, sl := range r.order {
		r.where[r.ent[sl].j.Idx] = -1
	}
	r.order, r.spare = r.order[:0], r.spare[:0]
	clear(r.ent)
	r.ent, r.out = r.ent[:0], r.out[:0]
}

func (r *runSet) fixedStart() {
	if r.call++; r.call == 0 {
		clear(r.out)
		r.call = 1
	}
	r.cursor = 0
}

func (r *runSet) fixedLowest() *ranked {
	for r.cursor < len(r.order) && r.out[r.order[r.cursor]] == r.call {
		r.cursor++
	}
	if r.cursor == len(r.order) {
		return nil
	}
	return &r.ent[r.order[r.cursor]]
}

// fixedTake takes out the job fixedLowest returned.
func (r *runSet) fixedTake() {
	r.out[r.order[r.cursor]] = r.call
	r.cursor++
}

// skip takes n jobs from the cursor on out of the set for the rest of the call, without
// marking them: the cursor does not move back before them in that call (see earlySkip).
func (r *runSet) skip(n int) { r.cursor += n }

func (r *runSet) fixedPutBack(x ranked) {
	sl := r.where[x.j.Idx]
	r.out[sl] = 0
	r.cursor = min(r.cursor, r.pos(&r.ent[sl]))
}

// bottom returns the lowest-ranked running job (fixed keys only), whatever this call took.
func (r *runSet) bottom() (ranked, bool) {
	if len(r.order) == 0 {
		return ranked{}, false
	}
	return r.ent[r.order[0]], true
}
