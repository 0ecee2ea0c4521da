package walk

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/policy"
)

// Tiresias is the simulator lineage's discretised two-dimensional least-attained-service,
// "dlas-gpu" of the Tiresias and Muri simulators (SymbioticLab/Tiresias and Rivendile/Muri,
// simulator/run_sim.py dlas_sim_jobs with GPU-time service and no starvation handling). At every
// event it re-decides every job:
//   - jobs sit in len(limits)+1 queues; a new job joins the tail of the first queue, and a running
//     job whose attained service (wall time run × GPUs) reaches the limit of its queue moves to the
//     tail of the next one, one queue per event, checked in arrival order;
//   - the queues are walked in order, each in its own order, counting free GPUs only: a job runs
//     if it fits in what the jobs before it left, else it waits (a running job that no longer fits
//     is preempted), and smaller jobs behind it are still tried;
//   - after the walk every queue puts its waiting jobs behind its running ones, keeping their
//     order, so a waiting job never preempts a running job of its own queue;
//   - the next event comes no later than the instant a running job's own clock reaches
//     ceil(limit / GPUs) seconds (GPU-time service) or the limit (time service).
//
// Placement counts GPUs and ignores the node structure, as in the lineage; started jobs take the
// lowest-numbered idle GPUs. Tiresias implements EveryEvent: the lineage checks demotions at
// every arrival and completion, so it must see them all.
type Tiresias struct {
	limits     []float64 // queue limits in seconds of attained service
	demoteWhy  []string  // demoteWhy[q-1]: the decision log's reason for a demotion to queue q
	gpuTime    bool
	exhaustive bool

	st  []lasJob // by Job.Idx
	qs  []lasQueue
	nxt int32 // jobs with Idx < nxt have arrived

	elig binHeap[lasDeadline] // when a running job's service reaches its queue's limit
	jump binHeap[lasDeadline] // when the lineage's next event for that crossing comes

	// naive holds the queues as plain lists for the exhaustive walk, which follows the lineage's
	// code literally; tests require both walks to decide the same.
	naive [][]int32

	// Per-call scratch.
	arrived, demoted, starts, stops []int32
	keep                            []bool
	// The call's plan and its starts' GPUs, whose memory the next call reuses (the engine is
	// done with a plan before it calls again); fitsWhy[q] is a start's reason in queue q.
	last    policy.Plan
	gpus    []int
	fitsWhy []string
}

var _ policy.Policy = (*Tiresias)(nil)

// TiresiasArgs are the arguments of tiresias.
type TiresiasArgs struct {
	// Exhaustive walks every job of every queue as the lineage's code does, with no shortcut
	// (same decisions, slower; for tests).
	Exhaustive bool `json:"exhaustive,omitempty"`
	// LimitsS are the queue limits in seconds of attained service; len+1 queues.
	LimitsS []float64 `json:"limits_s"`
	// Service is "gpu-time" (wall seconds × GPUs, dlas-gpu) or "time" (wall seconds, dlas).
	Service string `json:"service"`
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

func newTiresias(a TiresiasArgs) (*Tiresias, error) {
	if len(a.LimitsS) == 0 {
		return nil, fmt.Errorf("limits_s: need at least one queue limit")
	}
	for i, l := range a.LimitsS {
		if !(l > 0) || math.IsInf(l, 0) || l > 1e9 || (i > 0 && l <= a.LimitsS[i-1]) {
			return nil, fmt.Errorf("limits_s: want positive, increasing limits of at most 1e9 s, got %v", a.LimitsS)
		}
	}
	t := &Tiresias{limits: slices.Clone(a.LimitsS), exhaustive: a.Exhaustive,
		elig: binHeap[lasDeadline]{less: lasBefore}, jump: binHeap[lasDeadline]{less: lasBefore}}
	for q, l := range t.limits {
		t.demoteWhy = append(t.demoteWhy, fmt.Sprintf("queue %d: attained service reached %gs", q+1, l))
	}
	switch a.Service {
	case "gpu-time":
		t.gpuTime = true
	case "time":
	default:
		return nil, fmt.Errorf("service: want \"gpu-time\" or \"time\", got %q", a.Service)
	}
	t.qs = make([]lasQueue, len(a.LimitsS)+1)
	for q := range t.qs {
		t.qs[q].head, t.qs[q].tail = -1, -1
	}
	t.naive = make([][]int32, len(t.qs))
	return t, nil
}

// Name returns the registry key.
func (t *Tiresias) Name() string { return KeyTiresias }

// Exclusive marks Tiresias as never sharing a GPU (it places on idle GPUs).
func (t *Tiresias) Exclusive() {}

// EveryEvent asks to be called at every arrival and completion, even with no job waiting.
func (t *Tiresias) EveryEvent() bool { return true }

// threshold returns the attained wall time at which a job of gpus GPUs in queue q crosses its
// limit: service ≥ limit, i.e. exec·gpus ≥ limit with GPU-time service.
func (t *Tiresias) threshold(q, gpus int) time.Duration {
	l := seconds(t.limits[q])
	if !t.gpuTime {
		return l
	}
	n := time.Duration(gpus)
	return (l + n - 1) / n
}

// jumpAt returns the wall time at which the lineage schedules its next event for that crossing:
// ceil(limit / GPUs) whole seconds with GPU-time service, the limit itself with time service.
func (t *Tiresias) jumpAt(q, gpus int) time.Duration {
	if !t.gpuTime {
		return seconds(t.limits[q])
	}
	return seconds(math.Ceil(t.limits[q] / float64(gpus)))
}

func (t *Tiresias) state(idx int32) *lasJob {
	for int(idx) >= len(t.st) {
		t.st = append(t.st, lasJob{prev: -1, next: -1})
	}
	return &t.st[idx]
}

// Schedule applies the events since the last call (completions, arrivals, demotions), walks the
// queues and returns the jobs to preempt and to start.
func (t *Tiresias) Schedule(s *policy.State) (policy.Plan, error) {
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
			return *plan, fmt.Errorf("policy %s: finished job %d is unknown", KeyTiresias, id)
		}
		st := t.state(j.Idx)
		if t.exhaustive {
			t.naive[st.queue] = slices.DeleteFunc(t.naive[st.queue], func(i int32) bool { return i == j.Idx })
		} else if st.running {
			t.unlink(j, st)
		}
		st.running = false
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
			return *plan, fmt.Errorf("policy %s: job %d arrived twice", KeyTiresias, jobAt(s, i).ID)
		}
		st.seen = true
		t.nxt = max(t.nxt, i+1)
	}
	// Demotions, one queue per event, in arrival order.
	t.demoted = t.demoted[:0]
	if t.exhaustive {
		for _, j := range s.Running() {
			st := t.state(j.Idx)
			if st.queue < len(t.limits) && j.Executed(s.Now) >= t.threshold(st.queue, j.GPUs) {
				t.demoted = append(t.demoted, j.Idx)
			}
		}
	} else {
		for t.elig.len() > 0 && t.elig.top().at <= s.Now {
			d := t.elig.pop()
			if t.valid(s, d) {
				t.demoted = append(t.demoted, d.idx)
			}
		}
	}
	slices.Sort(t.demoted)
	for _, i := range t.demoted {
		j := jobAt(s, i)
		st := t.state(i)
		if t.exhaustive {
			t.naive[st.queue] = slices.DeleteFunc(t.naive[st.queue], func(x int32) bool { return x == i })
			t.naive[st.queue+1] = append(t.naive[st.queue+1], i)
		} else {
			t.unlink(j, st)
		}
		st.queue++
		plan.Notes = append(plan.Notes, policy.Note{Job: j.ID, Event: "demote", Reason: t.demoteWhy[st.queue-1]})
	}
	// The walk meets the demoted jobs queue by queue, each queue's in arrival order.
	slices.SortStableFunc(t.demoted, func(a, b int32) int { return cmp.Compare(t.st[a].queue, t.st[b].queue) })
	if t.exhaustive {
		t.naive[0] = append(t.naive[0], t.arrived...)
		t.walkNaive(s)
	} else {
		t.walk(s)
	}
	if err := t.plan(s, plan); err != nil {
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
func (t *Tiresias) valid(s *policy.State, d lasDeadline) bool {
	st := t.state(d.idx)
	return st.running && st.queue == d.queue && jobAt(s, d.idx).Preempts == d.runs
}

// unlink removes a running job from its queue's running list.
func (t *Tiresias) unlink(j *policy.Job, st *lasJob) {
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
func (t *Tiresias) link(s *policy.State, j *policy.Job, st *lasJob) {
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
func (t *Tiresias) push(s *policy.State, j *policy.Job, st *lasJob) {
	if st.queue >= len(t.limits) {
		return
	}
	exec := j.Executed(s.Now)
	d := lasDeadline{idx: j.Idx, queue: st.queue, runs: j.Preempts}
	d.at = s.Now + max(t.threshold(st.queue, j.GPUs)-exec, 0)
	t.elig.push(d)
	d.at = s.Now + t.jumpAt(st.queue, j.GPUs) - exec
	t.jump.push(d)
}

// walk decides every job, queue by queue, in the lineage's order: a queue holds its running jobs,
// then its waiting jobs, then the jobs that joined it at this event (demoted into it, or arrived).
// It fills t.stops and t.starts in walk order and updates the queues to the lineage's order after
// the walk: running jobs first (the kept ones, then the started ones in walk order), then waiting
// ones (the preempted running jobs, the jobs still waiting, the newcomers left waiting).
func (t *Tiresias) walk(s *policy.State) {
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

// walkNaive is the lineage's walk as written: every job of every queue in list order, then the
// waiting jobs of each queue moved behind its running ones.
func (t *Tiresias) walkNaive(s *policy.State) {
	t.stops, t.starts = t.stops[:0], t.starts[:0]
	if len(t.keep) < len(s.Jobs) {
		t.keep = make([]bool, len(s.Jobs))
	}
	free := s.Cluster.NumGPUs()
	for _, queue := range t.naive {
		for _, i := range queue {
			j := jobAt(s, i)
			t.keep[i] = free >= j.GPUs
			switch {
			case t.keep[i]:
				free -= j.GPUs
				if !j.Running {
					t.starts = append(t.starts, i)
				}
			case j.Running:
				t.stops = append(t.stops, i)
			}
		}
	}
	for q, queue := range t.naive {
		slices.SortStableFunc(queue, func(a, b int32) int {
			ka, kb := t.keep[a], t.keep[b]
			switch {
			case ka == kb:
				return 0
			case ka:
				return -1
			}
			return 1
		})
		t.naive[q] = queue
	}
}

// plan turns the walk's decisions into a Plan: preemptions first, then starts on the
// lowest-numbered idle GPUs once the preempted jobs have left.
func (t *Tiresias) plan(s *policy.State, plan *policy.Plan) error {
	cl := s.Cluster
	for _, i := range t.stops {
		j := jobAt(s, i)
		if err := cl.Release(j.ID); err != nil {
			return fmt.Errorf("policy %s: preempt job %d: %w", KeyTiresias, j.ID, err)
		}
		plan.Stop = append(plan.Stop, j.ID)
	}
	t.gpus = t.gpus[:0]
	for _, i := range t.starts {
		j := jobAt(s, i)
		lo := len(t.gpus)
		t.gpus = cl.AppendIdle(t.gpus, j.GPUs)
		gpus := t.gpus[lo:len(t.gpus):len(t.gpus)]
		if len(gpus) < j.GPUs {
			return fmt.Errorf("policy %s: job %d: %d idle GPUs for %d (the count of free GPUs is off)", KeyTiresias, j.ID, len(gpus), j.GPUs)
		}
		if err := cl.Place(j.ID, gpus, j.Options[j.Fast].Mem); err != nil {
			return fmt.Errorf("policy %s: job %d: %w", KeyTiresias, j.ID, err)
		}
		pl := policy.Placement{Job: j.ID, GPUs: gpus, Opt: j.Fast}
		if s.Env.Explain {
			q := t.state(i).queue
			for len(t.fitsWhy) <= q {
				t.fitsWhy = append(t.fitsWhy, "queue "+strconv.Itoa(len(t.fitsWhy))+", fits in the free GPUs")
			}
			pl.Reason = t.fitsWhy[q]
		}
		plan.Start = append(plan.Start, pl)
	}
	return nil
}

// nextJump returns the earliest instant at which a running job's clock reaches the lineage's
// next event for its queue.
func (t *Tiresias) nextJump(s *policy.State) (time.Duration, bool) {
	if t.exhaustive {
		best, ok := time.Duration(0), false
		for _, queue := range t.naive[:len(t.limits)] {
			for _, i := range queue {
				if !t.keep[i] {
					continue
				}
				j := jobAt(s, i)
				at := s.Now + t.jumpAt(t.st[i].queue, j.GPUs) - j.Executed(s.Now)
				if !ok || at < best {
					best, ok = at, true
				}
			}
		}
		return best, ok
	}
	for t.jump.len() > 0 {
		if d := t.jump.top(); t.valid(s, d) {
			return d.at, true
		}
		t.jump.pop()
	}
	return 0, false
}
