package policy

import (
	"cmp"
	"time"
)

// runSet holds running jobs in a binary heap, the lowest priority on top, by key bounds: each
// entry's key was exact when computed (at time at) and is an upper bound of the job's key later,
// as long as the engine has not re-rated the job and the policy has not re-keyed it. That holds
// for the keys the greedy policies rank running jobs by: fixed ones (submission, Tiresias queue
// and entry time) and remaining times, which only shrink while a job's rate stays. lowest
// refreshes bounds from the top until the top's is exact, so the heap survives from call to
// call instead of being rebuilt from every running job.
type runSet struct {
	items []ranked
	where []int32 // by Job.Idx: index in items, -1 if absent
}

func (r *runSet) less(a, b int) bool {
	x, y := &r.items[a], &r.items[b]
	// Compare(x.k, x.j, y.k, y.j) > 0 on the copies in the entries, which spares loading jobs.
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
func entry(j *Job, k Key, at time.Duration) ranked {
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
func (r *runSet) remove(j *Job) {
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
	for _, x := range r.items {
		r.where[x.j.Idx] = -1
	}
	r.items = r.items[:0]
}

// lowest returns the lowest-priority job with its exact key at now, refreshing bounds with key.
func (r *runSet) lowest(now time.Duration, key func(*Job) Key) (ranked, bool) {
	for len(r.items) > 0 {
		top := &r.items[0]
		if top.at == now {
			return *top, true
		}
		k := key(top.j)
		if Compare(k, top.j, top.k, top.j) == 0 {
			top.at = now
			return *top, true
		}
		top.k, top.at = k, now
		r.down(0)
	}
	return ranked{}, false
}
