package walk

import (
	"fmt"
	"slices"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
)

// gittins is the fast executor of tiresias-gittins (schedulers.Tiresias with the Gittins order),
// which it makes the same plans as. The rule sorts each queue stably at every call and walks it;
// this form keeps each queue's waiting jobs sorted, split by GPU count, and walks the running
// jobs, the jobs that joined the queue at this call and the heads of those parts.
//
// A queue's list, as the rule keeps it, holds after a walk its running jobs, then its waiting
// ones, each in the walk's order; jobs that join it go to its tail. The next sort orders by
// (index, submission second) and keeps the list's order among ties, so among ties the running
// jobs of the last walk come first, in the walk's order, then the waiting jobs, then the jobs that
// joined. The waiting jobs' keys do not change while they wait (their service does not), so they
// keep one order among themselves: a job that stops goes in front of the waiting jobs that tie
// with it (it came before them, as a running job), a job that joined and does not run goes behind
// them; seq, from a counter that runs down for the first and up for the second, says so.
type gittins struct {
	rule *schedulers.Tiresias

	st  []gtJob // by Job.Idx
	qs  []gtQueue
	nxt int32 // jobs with Idx < nxt have arrived

	thr, jump [][]time.Duration // by queue and size index: Threshold and JumpAt

	// Per-call scratch.
	arrived, demoted, stops, starts []int32
	joined                          []int32
	ranks                           []float64
	ord, pre, tmp                   []int32
	last                            policy.Plan
	gpus                            []int
}

// gtJob is a job's place in the queues.
type gtJob struct {
	seen, done bool
	queue      int
	sub        int64   // submission second
	rank       float64 // the index at the last call (fixed while the job waits)
	lo, hi     float64 // the span of service with that index
}

// gtQueue is one queue: its running jobs in the order of the last walk, and its waiting jobs by
// GPU count, each part in queue order.
type gtQueue struct {
	run         []int32
	wait        []binHeap[gtWait] // by State.Sizes index
	front, back int64
}

// gtWait is a waiting job's place in its part.
type gtWait struct {
	rank float64
	sub  int64
	seq  int64
	idx  int32
}

func gtBefore(a, b gtWait) bool {
	if a.rank != b.rank || a.sub != b.sub {
		return schedulers.GittinsBefore(a.rank, a.sub, b.rank, b.sub)
	}
	return a.seq < b.seq
}

// FastTiresiasGittins returns the fast executor of t, a tiresias-gittins rule that must not have
// been called yet.
func FastTiresiasGittins(t *schedulers.Tiresias) policy.Policy {
	f := &gittins{rule: t}
	f.qs = make([]gtQueue, t.Queues())
	return f
}

// Name returns the registry key.
func (f *gittins) Name() string { return f.rule.Name() }

// Exclusive marks the policy as never sharing a GPU.
func (f *gittins) Exclusive() {}

// EveryEvent asks to be called at every arrival and completion, as the rule is.
func (f *gittins) EveryEvent() bool { return true }

// Schedule applies the events since the last call (completions, arrivals, demotions), walks the
// queues and returns the jobs to preempt and to start.
func (f *gittins) Schedule(s *policy.State) (policy.Plan, error) {
	plan := &f.last
	*plan = policy.Plan{Stop: plan.Stop[:0], Start: plan.Start[:0], Notes: plan.Notes[:0]}
	for len(f.st) < len(s.Jobs) {
		f.st = append(f.st, gtJob{})
	}
	for q := range f.qs {
		for len(f.qs[q].wait) < len(s.Sizes) {
			f.qs[q].wait = append(f.qs[q].wait, binHeap[gtWait]{less: gtBefore})
		}
	}
	if f.thr == nil {
		f.thr, f.jump = make([][]time.Duration, len(f.qs)), make([][]time.Duration, len(f.qs))
		for q := range f.qs[:len(f.qs)-1] {
			for _, g := range s.Sizes {
				f.thr[q] = append(f.thr[q], f.rule.Threshold(q, g))
				f.jump[q] = append(f.jump[q], f.rule.JumpAt(q, g))
			}
		}
	}
	// Completions leave their queue (they ran).
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			return *plan, fmt.Errorf("policy %s: finished job %d is unknown", f.Name(), id)
		}
		f.st[j.Idx].done = true
	}
	for q := range f.qs {
		f.qs[q].run = slices.DeleteFunc(f.qs[q].run, func(i int32) bool { return f.st[i].done })
	}
	// Arrivals join the first queue in arrival order.
	f.arrived = f.arrived[:0]
	for j := range s.Pending.Backward() {
		if j.Idx < f.nxt {
			break
		}
		f.arrived = append(f.arrived, j.Idx)
	}
	slices.Reverse(f.arrived)
	for _, i := range f.arrived {
		st := &f.st[i]
		if st.seen {
			return *plan, fmt.Errorf("policy %s: job %d arrived twice", f.Name(), s.Jobs[i].ID)
		}
		st.seen = true
		st.sub = schedulers.SubmitSecond(s.Jobs[i])
		st.lo, st.hi = 1, 0 // no index yet
		f.nxt = max(f.nxt, i+1)
	}
	// Demotions, one queue per event, in arrival order.
	f.demoted = f.demoted[:0]
	last := len(f.qs) - 1
	for q := range f.qs[:last] {
		for _, i := range f.qs[q].run {
			if j := s.Jobs[i]; j.Executed(s.Now) >= f.thr[q][j.Size] {
				f.demoted = append(f.demoted, i)
			}
		}
	}
	slices.Sort(f.demoted)
	for _, i := range f.demoted {
		st := &f.st[i]
		q := &f.qs[st.queue]
		q.run = slices.DeleteFunc(q.run, func(x int32) bool { return x == i })
		st.queue++
		plan.Notes = append(plan.Notes, policy.Note{Job: s.Jobs[i].ID, Event: "demote", Reason: f.rule.DemoteReason(st.queue)})
	}
	// The walk meets the demoted jobs queue by queue, each queue's in arrival order.
	slices.SortStableFunc(f.demoted, func(a, b int32) int { return f.st[a].queue - f.st[b].queue })
	f.walk(s)
	var err error
	f.gpus, err = f.rule.Apply(s, f.stops, f.starts, func(i int32) int { return f.st[i].queue }, f.gpus[:0], plan)
	if err != nil {
		return *plan, err
	}
	// The lineage's next event for a running job's crossing of its queue's limit.
	var wake time.Duration
	woke := false
	for q := range f.qs[:last] {
		for _, i := range f.qs[q].run {
			j := s.Jobs[i]
			if at := s.Now + f.jump[q][j.Size] - j.Executed(s.Now); !woke || at < wake {
				wake, woke = at, true
			}
		}
	}
	if woke {
		plan.Wake = max(wake, s.Now+1)
	}
	return *plan, nil
}

// walk decides every job, queue by queue, in the rule's order, counting free GPUs, fills f.stops
// and f.starts in walk order and leaves each queue's running jobs and waiting parts as the rule's
// list would be after it.
func (f *gittins) walk(s *policy.State) {
	f.stops, f.starts = f.stops[:0], f.starts[:0]
	free := s.Cluster.NumGPUs()
	di := 0
	for q := range f.qs {
		Q := &f.qs[q]
		// The jobs that join this queue: those demoted into it, or for the first the arrivals.
		start := di
		for di < len(f.demoted) && f.st[f.demoted[di]].queue == q {
			di++
		}
		f.joined = append(f.joined[:0], f.demoted[start:di]...)
		if q == 0 {
			f.joined = append(f.joined, f.arrived...)
		}
		// Keys of the running and the joining jobs, and each group sorted stably by them.
		sortByRank := func(list []int32) {
			sorted := true
			for n, i := range list {
				st := &f.st[i]
				// The index changes only where the service leaves the span it was read in.
				if a := f.rule.Service(s.Now, s.Jobs[i]); !(a >= st.lo && a < st.hi) {
					st.rank, st.lo, st.hi = f.rule.RankSpan(a)
				}
				if n > 0 && f.before(i, list[n-1]) {
					sorted = false
				}
			}
			if !sorted {
				slices.SortStableFunc(list, func(a, b int32) int {
					switch {
					case f.before(a, b):
						return -1
					case f.before(b, a):
						return 1
					}
					return 0
				})
			}
		}
		sortByRank(Q.run)
		sortByRank(f.joined)
		// The walk: the least of the next running job, the next joining job and the heads of the
		// parts whose jobs fit (a waiting job that does not fit changes nothing). Among ties of
		// index and second, the running jobs go first, then the waiting ones, then the joining ones.
		run, r, n := Q.run, 0, 0
		kept := f.tmp[:0]
		pre := f.pre[:0]  // running jobs stopped, in walk order
		left := f.ord[:0] // joining jobs that do not run, in walk order
		// The least head among the parts whose jobs fit, found again when it is taken or no
		// longer fits (the others only drop out as free GPUs fall).
		best, head := -1, gtWait{}
		refresh := func() {
			best = -1
			for k := range Q.wait {
				if s.Sizes[k] > free {
					break
				}
				if Q.wait[k].len() > 0 {
					if h := Q.wait[k].top(); best < 0 || gtBefore(h, head) {
						best, head = k, h
					}
				}
			}
		}
		refresh()
		for {
			if best >= 0 && s.Sizes[best] > free {
				refresh()
			}
			group := 3 // 0: running, 1: waiting, 2: joining; 3: none left
			var w gtWait
			if r < len(run) {
				w, group = f.key(run[r], 0), 0
			}
			if n < len(f.joined) {
				if k := f.key(f.joined[n], 0); group == 3 || !sameRank(k, w) && gtBefore(k, w) {
					w, group = k, 2
				}
			}
			if best >= 0 {
				if h := head; group == 3 || (sameRank(h, w) && group == 2) || (!sameRank(h, w) && gtBefore(h, w)) {
					w, group = h, 1
				}
			}
			if group == 3 {
				break
			}
			j := s.Jobs[w.idx]
			switch group {
			case 0:
				r++
				if free >= j.GPUs {
					free -= j.GPUs
					kept = append(kept, w.idx)
				} else {
					f.stops = append(f.stops, w.idx)
					pre = append(pre, w.idx)
				}
			case 2:
				n++
				switch {
				case free >= j.GPUs:
					free -= j.GPUs
					if !j.Running {
						f.starts = append(f.starts, w.idx)
					}
					kept = append(kept, w.idx)
				case j.Running:
					f.stops = append(f.stops, w.idx)
					left = append(left, w.idx)
				default:
					left = append(left, w.idx)
				}
			default:
				Q.wait[best].pop()
				free -= j.GPUs
				f.starts = append(f.starts, w.idx)
				kept = append(kept, w.idx)
				refresh()
			}
		}
		// The queue after the walk: its running jobs in walk order, the stopped ones in front of
		// the waiting jobs that tie with them, the joining ones that do not run behind.
		for k := len(pre) - 1; k >= 0; k-- {
			Q.front--
			f.push(s, Q, pre[k], Q.front)
		}
		for _, i := range left {
			f.push(s, Q, i, Q.back)
			Q.back++
		}
		f.pre, f.ord = pre, left
		f.tmp = Q.run
		Q.run = kept
	}
}

// sameRank reports whether two jobs tie in index and submission second.
func sameRank(a, b gtWait) bool { return a.rank == b.rank && a.sub == b.sub }

// key is job i's place in the order: its index at this call, its submission second and seq.
func (f *gittins) key(i int32, seq int64) gtWait {
	st := &f.st[i]
	return gtWait{st.rank, st.sub, seq, i}
}

// before reports whether job a goes before job b by index and submission second alone.
func (f *gittins) before(a, b int32) bool {
	x, y := &f.st[a], &f.st[b]
	return schedulers.GittinsBefore(x.rank, x.sub, y.rank, y.sub)
}

// push adds a job that waits to its part.
func (f *gittins) push(s *policy.State, Q *gtQueue, i int32, seq int64) {
	Q.wait[s.Jobs[i].Size].push(f.key(i, seq))
}
