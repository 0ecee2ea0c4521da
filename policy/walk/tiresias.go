package walk

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
)

// tiresias is the fast executor of Muri's dlas-gpu (schedulers.Tiresias), which it makes the
// same plans as: instead of walking every job at every call, it keeps each queue's running jobs
// as a linked list and its waiting jobs by GPU count, each in queue order, the instants at which
// running jobs cross their queue's limit in heaps, and a call costs what changed.
type tiresias struct {
	rule *schedulers.Tiresias

	st  []lasJob // by Job.Idx
	qs  []lasQueue
	nxt int32 // jobs with Idx < nxt have arrived

	elig binHeap[lasDeadline] // when a running job's service reaches its queue's limit
	jump binHeap[lasDeadline] // when the lineage's next event for that crossing comes

	// Per-call scratch.
	arrived, demoted, starts, stops []int32
	// The call's plan and its starts' GPUs, whose memory the next call reuses (the engine is
	// done with a plan before it calls again).
	last policy.Plan
	gpus []int
}

// lasJob is a job's place in the queues.
type lasJob struct {
	seen    bool
	queue   int
	running bool  // in its queue's running list
	key     int64 // order among the waiting jobs of its queue
	prev    int32 // running list links (job indices, -1 at the ends)
	next    int32
}

// lasQueue is one queue: its running jobs as a linked list in queue order, and its waiting jobs
// split by GPU count, each part in queue order. Within a part, jobs start only from the front (a
// job that does not fit means no later job of that size fits), and join at either end.
type lasQueue struct {
	head, tail  int32
	runGPUs     int
	wait        []deque // by State.Sizes index
	front, back int64   // the next keys at either end of the waiting order
}

type deque struct {
	buf        []int32
	head, size int
}

func (d *deque) len() int       { return d.size }
func (d *deque) at(i int) int32 { return d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) grow() {
	if d.size < len(d.buf) {
		return
	}
	nb := make([]int32, max(8, 2*len(d.buf)))
	for i := range d.size {
		nb[i] = d.at(i)
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(x int32) {
	d.grow()
	d.buf[(d.head+d.size)%len(d.buf)] = x
	d.size++
}

func (d *deque) pushFront(x int32) {
	d.grow()
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = x
	d.size++
}

func (d *deque) popFront() int32 {
	x := d.buf[d.head]
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return x
}

// lasDeadline is a future instant for a running job in a given queue; runs is the job's
// Preempts count it is valid for.
type lasDeadline struct {
	at    time.Duration
	idx   int32
	queue int
	runs  int
}

func lasBefore(a, b lasDeadline) bool { return a.at < b.at || (a.at == b.at && a.idx < b.idx) }

// FastTiresias returns the fast executor of t, which must not have been called yet.
func FastTiresias(t *schedulers.Tiresias) policy.Policy {
	f := &tiresias{rule: t, elig: binHeap[lasDeadline]{less: lasBefore}, jump: binHeap[lasDeadline]{less: lasBefore}}
	f.qs = make([]lasQueue, t.Queues())
	for q := range f.qs {
		f.qs[q].head, f.qs[q].tail = -1, -1
	}
	return f
}

// Name returns the registry key.
func (t *tiresias) Name() string { return t.rule.Name() }

// Exclusive marks Tiresias as never sharing a GPU (it places on idle GPUs).
func (t *tiresias) Exclusive() {}

// EveryEvent asks to be called at every arrival and completion, even with no job waiting.
func (t *tiresias) EveryEvent() bool { return true }

func (t *tiresias) state(idx int32) *lasJob {
	for int(idx) >= len(t.st) {
		t.st = append(t.st, lasJob{prev: -1, next: -1})
	}
	return &t.st[idx]
}

// Schedule applies the events since the last call (completions, arrivals, demotions), walks the
// queues and returns the jobs to preempt and to start.
func (t *tiresias) Schedule(s *policy.State) (policy.Plan, error) {
	plan := &t.last
	*plan = policy.Plan{Stop: plan.Stop[:0], Start: plan.Start[:0], Notes: plan.Notes[:0]}
	if len(t.st) < len(s.Jobs) {
		t.st = slices.Grow(t.st, len(s.Jobs)-len(t.st))
	}
	for len(t.qs[0].wait) < len(s.Sizes) {
		for q := range t.qs {
			t.qs[q].wait = append(t.qs[q].wait, deque{})
		}
	}
	// Completions leave their queue.
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			return *plan, fmt.Errorf("policy %s: finished job %d is unknown", t.Name(), id)
		}
		if st := t.state(j.Idx); st.running {
			t.unlink(j, st)
		}
	}
	// Arrivals join the first queue in arrival order: they are the pending jobs not seen yet,
	// which sort last among the pending (by submission, then ID).
	t.arrived = t.arrived[:0]
	for j := range s.Pending.Backward() {
		if j.Idx < t.nxt {
			break
		}
		t.arrived = append(t.arrived, j.Idx)
	}
	slices.Reverse(t.arrived)
	for _, i := range t.arrived {
		st := t.state(i)
		if st.seen {
			return *plan, fmt.Errorf("policy %s: job %d arrived twice", t.Name(), jobAt(s, i).ID)
		}
		st.seen = true
		t.nxt = max(t.nxt, i+1)
	}
	// Demotions, one queue per event, in arrival order.
	t.demoted = t.demoted[:0]
	for t.elig.len() > 0 && t.elig.top().at <= s.Now {
		d := t.elig.pop()
		if t.valid(s, d) {
			t.demoted = append(t.demoted, d.idx)
		}
	}
	slices.Sort(t.demoted)
	for _, i := range t.demoted {
		j := jobAt(s, i)
		st := t.state(i)
		t.unlink(j, st)
		st.queue++
		plan.Notes = append(plan.Notes, policy.Note{Job: j.ID, Event: "demote", Reason: t.rule.DemoteReason(st.queue)})
	}
	// The walk meets the demoted jobs queue by queue, each queue's in arrival order.
	slices.SortStableFunc(t.demoted, func(a, b int32) int { return cmp.Compare(t.st[a].queue, t.st[b].queue) })
	t.walk(s)
	var err error
	t.gpus, err = t.rule.Apply(s, t.stops, t.starts, func(i int32) int { return t.st[i].queue }, t.gpus[:0], plan)
	if err != nil {
		return *plan, err
	}
	if w, ok := t.nextJump(s); ok {
		plan.Wake = max(w, s.Now+1)
	}
	return *plan, nil
}

// jobAt returns the job with arrival index i.
func jobAt(s *policy.State, i int32) *policy.Job { return s.Jobs[i] }

// valid reports whether a deadline still concerns its job: running since it was pushed (the
// queues' view: started or kept by the last walk), in the same queue.
func (t *tiresias) valid(s *policy.State, d lasDeadline) bool {
	st := t.state(d.idx)
	return st.running && st.queue == d.queue && jobAt(s, d.idx).Preempts == d.runs
}

// unlink removes a running job from its queue's running list.
func (t *tiresias) unlink(j *policy.Job, st *lasJob) {
	q := &t.qs[st.queue]
	if st.prev >= 0 {
		t.st[st.prev].next = st.next
	} else {
		q.head = st.next
	}
	if st.next >= 0 {
		t.st[st.next].prev = st.prev
	} else {
		q.tail = st.prev
	}
	st.prev, st.next, st.running = -1, -1, false
	q.runGPUs -= j.GPUs
}

// link appends a running (or starting) job to its queue's running list and schedules its next
// crossing.
func (t *tiresias) link(s *policy.State, j *policy.Job, st *lasJob) {
	q := &t.qs[st.queue]
	st.prev, st.next, st.running = q.tail, -1, true
	if q.tail >= 0 {
		t.st[q.tail].next = j.Idx
	} else {
		q.head = j.Idx
	}
	q.tail = j.Idx
	q.runGPUs += j.GPUs
	t.push(s, j, st)
}

// push records when a job that runs from now, in its current queue, crosses that queue's limit
// (it is then demoted at the first event from that instant on) and when the lineage's next
// event for the crossing comes.
func (t *tiresias) push(s *policy.State, j *policy.Job, st *lasJob) {
	if st.queue >= t.rule.Queues()-1 {
		return
	}
	exec := j.Executed(s.Now)
	d := lasDeadline{idx: j.Idx, queue: st.queue, runs: j.Preempts}
	d.at = s.Now + max(t.rule.Threshold(st.queue, j.GPUs)-exec, 0)
	t.elig.push(d)
	d.at = s.Now + t.rule.JumpAt(st.queue, j.GPUs) - exec
	t.jump.push(d)
}

// walk decides every job, queue by queue, in the lineage's order: a queue holds its running jobs,
// then its waiting jobs, then the jobs that joined it at this event (demoted into it, or arrived).
// It fills t.stops and t.starts in walk order and updates the queues to the lineage's order after
// the walk: running jobs first (the kept ones, then the started ones in walk order), then waiting
// ones (the preempted running jobs, the jobs still waiting, the newcomers left waiting).
func (t *tiresias) walk(s *policy.State) {
	t.stops, t.starts = t.stops[:0], t.starts[:0]
	free := s.Cluster.NumGPUs()
	di := 0
	for q := range t.qs {
		Q := &t.qs[q]
		// Running jobs: all keep running if they fit together, else first fit.
		nStops := len(t.stops)
		if free >= Q.runGPUs {
			free -= Q.runGPUs
		} else {
			for i := Q.head; i >= 0; i = t.st[i].next {
				if j := jobAt(s, i); free >= j.GPUs {
					free -= j.GPUs
				} else {
					t.stops = append(t.stops, i)
				}
			}
		}
		preempted := t.stops[nStops:]
		// Waiting jobs: the earliest one that fits, among the fronts of the parts that fit.
		for {
			best, bk := -1, int64(0)
			for k := range Q.wait {
				if s.Sizes[k] > free {
					break
				}
				if d := &Q.wait[k]; d.len() > 0 {
					if key := t.st[d.at(0)].key; best < 0 || key < bk {
						best, bk = k, key
					}
				}
			}
			if best < 0 {
				break
			}
			i := Q.wait[best].popFront()
			free -= s.Sizes[best]
			t.starts = append(t.starts, i)
			t.link(s, jobAt(s, i), &t.st[i])
		}
		for _, i := range preempted {
			t.unlink(jobAt(s, i), &t.st[i])
		}
		for n := len(preempted) - 1; n >= 0; n-- {
			i := preempted[n]
			Q.front--
			t.st[i].key = Q.front
			Q.wait[jobAt(s, i).Size].pushFront(i)
		}
		// Newcomers: jobs demoted into this queue (running) or, for the first, the arrivals.
		var joined []int32
		start := di
		for di < len(t.demoted) && t.st[t.demoted[di]].queue == q {
			di++
		}
		joined = t.demoted[start:di]
		if q == 0 {
			joined = t.arrived
		}
		for _, i := range joined {
			j := jobAt(s, i)
			if free >= j.GPUs {
				free -= j.GPUs
				if !j.Running {
					t.starts = append(t.starts, i)
				}
				t.link(s, j, &t.st[i])
				continue
			}
			if j.Running {
				t.stops = append(t.stops, i)
			}
			t.st[i].key = Q.back
			Q.back++
			Q.wait[j.Size].pushBack(i)
		}
	}
}

// nextJump returns the earliest instant at which a running job's clock reaches the lineage's
// next event for its queue.
func (t *tiresias) nextJump(s *policy.State) (time.Duration, bool) {
	for t.jump.len() > 0 {
		if d := t.jump.top(); t.valid(s, d) {
			return d.at, true
		}
		t.jump.pop()
	}
	return 0, false
}
