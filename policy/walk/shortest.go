package walk

import (
	"fmt"
	"slices"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
)

// shortest is the fast executor of Muri's shortest and shortest-gpu (schedulers.Shortest), which
// it makes the same plans as. The rule sorts every job at every call and places the list on an
// empty cluster; this form keeps the waiting jobs sorted, split by GPU count, and walks the
// running jobs with the heads of those parts only, so a call costs what runs rather than what
// waits.
//
// The rule's order is a stable sort of its previous order, so jobs whose keys tie keep the order
// they had. Here every job carries a stamp such that the list's order is always that of (key,
// stamp): a waiting job keeps its key and stamp; a running job whose key fell since the last call
// moves behind every job that already had its new key, so it takes a new stamp above all others
// (in its previous order); one whose key rose takes a stamp below all others; arrivals take new
// stamps last. (With one waiting job that ties a running one, the rule's stable sort puts first
// the one that was first before, which is what the stamps say.)
//
// The walk meets the jobs in (key, stamp) order: the running jobs, sorted again at every call,
// and the first waiting job of each GPU count. The cluster only fills during a walk, so once a
// waiting job does not land, no later waiting job of its GPU count does: that part is done.
type shortest struct {
	rule *schedulers.Shortest

	st    []srJob // by Job.Idx
	nxt   int32   // jobs with Idx < nxt have arrived
	run   []int32 // running jobs in the order of the last walk
	wait  []binHeap[srWait]
	front int64 // the next stamps below and above all given so far
	back  int64
	nodes yarnTree

	// Per-call scratch.
	keys         []float64 // by position in run: the new keys
	order        []int32   // positions in run, sorted by new key
	tmp          []int32
	alive        []bool // by size index: the part may still land a job in this walk
	stops        []int32
	starts       []int32
	last         policy.Plan
	gpus         []int
	reason       func(int32) string
	reasonString string
}

// srJob is a job's place in the order.
type srJob struct {
	key   float64
	stamp int64
	done  bool
}

// srWait is a waiting job in its part.
type srWait struct {
	key   float64
	stamp int64
	idx   int32
}

func srBefore(a, b srWait) bool { return a.key < b.key || (a.key == b.key && a.stamp < b.stamp) }

// FastShortest returns the fast executor of r, which must not have been called yet.
func FastShortest(r *schedulers.Shortest) policy.Policy {
	f := &shortest{rule: r}
	f.reasonString = r.StartReason()
	f.reason = func(int32) string { return f.reasonString }
	return f
}

// Name returns the registry key.
func (f *shortest) Name() string { return f.rule.Name() }

// Exclusive marks the policy as never sharing a GPU.
func (f *shortest) Exclusive() {}

// EveryEvent asks to be called at every arrival and completion, as the rule is.
func (f *shortest) EveryEvent() bool { return true }

// Schedule drops the finished jobs, re-keys and re-stamps the running ones, stamps the arrivals
// and walks.
func (f *shortest) Schedule(s *policy.State) (policy.Plan, error) {
	plan := &f.last
	*plan = policy.Plan{Stop: plan.Stop[:0], Start: plan.Start[:0]}
	for len(f.st) < len(s.Jobs) {
		f.st = append(f.st, srJob{})
	}
	for len(f.wait) < len(s.Sizes) {
		f.wait = append(f.wait, binHeap[srWait]{less: srBefore})
		f.alive = append(f.alive, false)
	}
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			return *plan, fmt.Errorf("policy %s: finished job %d is unknown", f.Name(), id)
		}
		f.st[j.Idx].done = true
	}
	f.run = slices.DeleteFunc(f.run, func(i int32) bool { return f.st[i].done })
	f.rekey(s)
	// Arrivals: the waiting jobs not seen yet, which come last among the waiting jobs.
	arrived := f.starts[:0]
	for j := range s.Pending.Backward() {
		if j.Idx < f.nxt {
			break
		}
		arrived = append(arrived, j.Idx)
	}
	slices.Reverse(arrived)
	for _, i := range arrived {
		j := s.Jobs[i]
		st := &f.st[i]
		st.key, st.stamp = f.rule.Key(s.Now, j), f.back
		f.back++
		f.wait[j.Size].push(srWait{st.key, st.stamp, i})
		f.nxt = max(f.nxt, i+1)
	}
	f.walk(s)
	var err error
	f.gpus, err = f.rule.Apply(s, f.stops, f.starts, f.reason, f.gpus[:0], plan)
	return *plan, err
}

// rekey computes the running jobs' new keys, sorts them stably by the new keys (which keeps the
// previous order among ties) and gives new stamps to those whose key moved.
func (f *shortest) rekey(s *policy.State) {
	f.keys = f.keys[:0]
	f.order = f.order[:0]
	sorted := true
	for p, i := range f.run {
		k := f.rule.Key(s.Now, s.Jobs[i])
		if p > 0 && k < f.keys[p-1] {
			sorted = false
		}
		f.keys = append(f.keys, k)
		f.order = append(f.order, int32(p))
	}
	if !sorted {
		slices.SortStableFunc(f.order, func(a, b int32) int { return cmpKey(f.keys[a], f.keys[b]) })
	}
	// Stamps: a fallen key goes behind everything, in the new order; a risen one in front of
	// everything, also in the new order, so the ones that rose are stamped from the last.
	for _, p := range f.order {
		st := &f.st[f.run[p]]
		if k := f.keys[p]; k < st.key {
			st.stamp = f.back
			f.back++
		}
	}
	for n := len(f.order) - 1; n >= 0; n-- {
		p := f.order[n]
		st := &f.st[f.run[p]]
		if k := f.keys[p]; k > st.key {
			f.front--
			st.stamp = f.front
		}
	}
	for p, i := range f.run {
		f.st[i].key = f.keys[p]
	}
	if !sorted {
		tmp := f.tmp[:0]
		for _, p := range f.order {
			tmp = append(tmp, f.run[p])
		}
		copy(f.run, tmp)
		f.tmp = tmp
	}
}

// walk places the running jobs and the heads of the waiting parts in (key, stamp) order on an
// empty cluster, filling f.stops and f.starts in walk order and f.run with the jobs that run
// after it, in walk order.
func (f *shortest) walk(s *policy.State) {
	f.stops, f.starts = f.stops[:0], f.starts[:0]
	sh := s.Cluster.Shape()
	f.nodes.reset(sh.Nodes, sh.GPUsPerNode)
	for k := range f.alive {
		f.alive[k] = f.wait[k].len() > 0
	}
	runs, r := f.run, 0
	ran := f.tmp[:0]
	// The least head among the live parts, found again only when a part changes.
	best, head := -1, srWait{}
	refresh := func() {
		best = -1
		for k := range f.wait {
			if f.alive[k] {
				if h := f.wait[k].top(); best < 0 || srBefore(h, head) {
					best, head = k, h
				}
			}
		}
	}
	refresh()
	for r < len(runs) || best >= 0 {
		if r < len(runs) {
			i := runs[r]
			if w := (srWait{f.st[i].key, f.st[i].stamp, i}); best < 0 || srBefore(w, head) {
				r++
				if f.nodes.take(s.Jobs[i].GPUs) {
					ran = append(ran, i)
				} else {
					f.stops = append(f.stops, i)
				}
				continue
			}
		}
		if f.nodes.take(s.Jobs[head.idx].GPUs) {
			f.wait[best].pop()
			f.alive[best] = f.wait[best].len() > 0
			f.starts = append(f.starts, head.idx)
			ran = append(ran, head.idx)
		} else {
			// The cluster only fills: no later job of this part lands in this walk.
			f.alive[best] = false
		}
		refresh()
	}
	f.tmp = f.run
	f.run = ran
	for _, i := range f.stops {
		st := &f.st[i]
		f.wait[s.Jobs[i].Size].push(srWait{st.key, st.stamp, i})
	}
}

// cmpKey orders keys ascending; the lineage's keys are finite.
func cmpKey(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// yarnTree is schedulers.YARNNodes with the first node that has enough free GPUs found in
// logarithmic time: a segment tree of the nodes' free GPUs holding each subtree's largest count.
type yarnTree struct {
	per, nodes int
	size       int   // leaves, a power of two
	max        []int // max[1] is the root; leaves from size on
	taken      []int // scratch: whole nodes of a larger job
}

// reset empties the cluster: nodes of per GPUs each.
func (y *yarnTree) reset(nodes, per int) {
	if y.nodes != nodes || y.per != per {
		y.nodes, y.per = nodes, per
		y.size = 1
		for y.size < nodes {
			y.size *= 2
		}
		y.max = make([]int, 2*y.size)
	}
	for n := range y.size {
		f := 0
		if n < nodes {
			f = per
		}
		y.max[y.size+n] = f
	}
	for i := y.size - 1; i >= 1; i-- {
		y.max[i] = max(y.max[2*i], y.max[2*i+1])
	}
}

// first returns the first node with at least k free GPUs, or -1.
func (y *yarnTree) first(k int) int {
	if y.max[1] < k {
		return -1
	}
	i := 1
	for i < y.size {
		if y.max[2*i] >= k {
			i = 2 * i
		} else {
			i = 2*i + 1
		}
	}
	return i - y.size
}

// set sets node n's free GPUs.
func (y *yarnTree) set(n, free int) {
	i := y.size + n
	y.max[i] = free
	for i /= 2; i >= 1; i /= 2 {
		m := max(y.max[2*i], y.max[2*i+1])
		if y.max[i] == m {
			break
		}
		y.max[i] = m
	}
}

// take places a job of gpus GPUs as YARNNodes.Take does and reports whether it fits.
func (y *yarnTree) take(gpus int) bool {
	if gpus <= y.per {
		n := y.first(gpus)
		if n < 0 {
			return false
		}
		y.set(n, y.max[y.size+n]-gpus)
		return true
	}
	whole, rest := gpus/y.per, gpus%y.per
	y.taken = y.taken[:0]
	undo := func() {
		for _, n := range y.taken {
			y.set(n, y.per)
		}
	}
	for range whole {
		n := y.first(y.per)
		if n < 0 {
			undo()
			return false
		}
		y.set(n, 0) // taken whole: no longer a candidate for the rest
		y.taken = append(y.taken, n)
	}
	if rest > 0 {
		n := y.first(rest)
		if n < 0 {
			undo()
			return false
		}
		y.set(n, y.max[y.size+n]-rest)
	}
	return true
}
