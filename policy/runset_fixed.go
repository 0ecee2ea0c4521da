package policy

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// fixedSet is runSet for fixed keys: the running jobs in a list sorted lowest priority first.
// A call takes victims from the front with a cursor; putting a job in or out moves the list's
// tail by one, which costs less than the frontier's heap steps at every victim.
type fixedSet struct {
	fixed  bool
	order  []int32  // job indices, lowest priority first
	ent    []ranked // by Job.Idx: the job's entry, with its key when put
	out    []uint32 // by Job.Idx: the call that took the job out
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
	r.ent[i] = x
	r.order = slices.Insert(r.order, r.pos(&x), i)
	r.where[i] = 0
}

func (r *runSet) fixedRemove(j *Job) {
	i := j.Idx
	if r.where[i] < 0 {
		return
	}
	p := r.pos(&r.ent[i])
	if p == len(r.order) || r.order[p] != i {
		panic(fmt.Sprintf("policy: running job %d is not where its key puts it", j.ID))
	}
	r.order = slices.Delete(r.order, p, p+1)
	r.where[i] = -1
}

func (r *runSet) fixedClear() {
	for _, i := range r.order {
		r.where[i] = -1
	}
	r.order = r.order[:0]
}

func (r *runSet) fixedStart() {
	if r.call++; r.call == 0 {
		clear(r.out)
		r.call = 1
	}
	r.cursor = 0
}

func (r *runSet) fixedLowest(now time.Duration) (ranked, bool) {
	for r.cursor < len(r.order) && r.out[r.order[r.cursor]] == r.call {
		r.cursor++
	}
	if r.cursor == len(r.order) {
		return ranked{}, false
	}
	x := r.ent[r.order[r.cursor]]
	x.at = now
	return x, true
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
	r.out[x.j.Idx] = 0
	r.cursor = min(r.cursor, r.pos(&r.ent[x.j.Idx]))
}

// bottom returns the lowest-ranked running job (fixed keys only), whatever this call took.
func (r *runSet) bottom() (ranked, bool) {
	if len(r.order) == 0 {
		return ranked{}, false
	}
	return r.ent[r.order[0]], true
}
