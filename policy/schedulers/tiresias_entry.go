package schedulers

import (
	"container/heap"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// TiresiasEntryArgs are tiresias-entry-order's arguments.
type TiresiasEntryArgs struct {
	// LimitsS are the queue limits in seconds of attained service; len+1 queues.
	LimitsS []float64 `json:"limits_s"`
	// Service is "time" (wall seconds, the authors' physical setting) or "gpu-time" (× GPUs).
	Service string `json:"service"`
	// StarveFactor promotes a waiting job back to the first queue once its wait reaches this
	// many times its attained service; 0 disables promotion.
	StarveFactor float64 `json:"starve_factor"`
	// AuthorsOrder walks in arrival order instead, as the authors' physical code does (it
	// computes the queue order but never uses it).
	AuthorsOrder bool   `json:"authors_order"`
	Preempt      bool   `json:"preempt"`
	Victims      string `json:"victims"`
}

// TiresiasEntry is discretised two-dimensional least-attained-service on the authors' physical
// scheduling loop (Lai-JX/Scheduler Tiresias_jobs with jobs_placement):
//   - queues: a job sits in the queue of its attained service (wall time, or GPU time), and is
//     demoted the instant it crosses a queue's limit; a job that has waited StarveFactor times
//     its attained service is promoted back to the first queue, its service counted anew;
//   - order: queue by queue, first come first served within a queue by the time the job entered
//     it, so a waiting job may preempt a running one of its own queue (AuthorsOrder: arrival);
//   - placement: YARN;
//   - victims: the authors' preemptive path, as fifo.
//
// The simulator lineage's dlas-gpu, which re-decides every job at every event, is Tiresias.
type TiresiasEntry struct {
	limits  []time.Duration
	gpuTime bool
	starve  float64
	authors bool
	st      []entryJob // by Job.Idx
	due     deadlineHeap
	// demoted[q-1] is the decision log's reason for a demotion to queue q; starved ends that of
	// a promotion.
	demoted []string
	starved string
}

type entryJob struct {
	seen    bool
	queue   int
	entered time.Duration // when the job entered its current queue
	base    time.Duration // executed time at the last promotion (service counts from there)
}

// NewTiresiasEntry returns the policy's declaration, whose Key, Rank and Hooks keep its queues.
func NewTiresiasEntry(a TiresiasEntryArgs) (*policy.Greedy, error) {
	if err := policy.CheckVictims(a.Victims); err != nil {
		return nil, err
	}
	if len(a.LimitsS) == 0 {
		return nil, fmt.Errorf("limits_s: need at least one queue limit")
	}
	t := &TiresiasEntry{starve: a.StarveFactor, authors: a.AuthorsOrder,
		starved: " ≥ " + strconv.FormatFloat(a.StarveFactor, 'g', -1, 64) + " × attained service"}
	for i, l := range a.LimitsS {
		if !(l > 0) || math.IsInf(l, 0) || (i > 0 && l <= a.LimitsS[i-1]) {
			return nil, fmt.Errorf("limits_s: want positive, increasing limits, got %v", a.LimitsS)
		}
		t.limits = append(t.limits, simtime.FromNanos(l*1e9))
		t.demoted = append(t.demoted, "queue "+strconv.Itoa(i+1)+": attained service reached "+seconds3(t.limits[i]))
	}
	switch a.Service {
	case "time":
	case "gpu-time":
		t.gpuTime = true
	default:
		return nil, fmt.Errorf("service: want \"time\" or \"gpu-time\", got %q", a.Service)
	}
	if a.StarveFactor < 0 || math.IsNaN(a.StarveFactor) || math.IsInf(a.StarveFactor, 0) {
		return nil, fmt.Errorf("starve_factor: must be a finite number ≥ 0")
	}
	return &policy.Greedy{
		Name:      KeyTiresiasEntry,
		Key:       t.key,
		Rank:      func(_ time.Duration, j *policy.Job) policy.Key { return t.key(j) },
		Order:     policy.OrderFixed,
		Place:     YARN{},
		Exclusive: true,
		Preempt:   a.Preempt,
		Victims:   a.Victims,
		Hooks:     t,
	}, nil
}

func (t *TiresiasEntry) state(j *policy.Job) *entryJob {
	for int(j.Idx) >= len(t.st) {
		t.st = append(t.st, entryJob{})
	}
	st := &t.st[j.Idx]
	if !st.seen {
		*st = entryJob{seen: true, entered: j.Submit}
	}
	return st
}

// key ranks jobs by (queue, time entering the queue), or all alike with AuthorsOrder (arrival).
func (t *TiresiasEntry) key(j *policy.Job) policy.Key {
	if t.authors {
		return policy.Key{}
	}
	st := t.state(j)
	return policy.Key{A: float64(st.queue), B: int64(st.entered)}
}

// service returns the attained service of j that counts for its queue.
func (t *TiresiasEntry) service(j *policy.Job, st *entryJob, now time.Duration) time.Duration {
	s := j.Executed(now) - st.base
	if t.gpuTime {
		s = simtime.Mul(s, int64(j.GPUs)) // GPU-time of a long job on many GPUs saturates
	}
	return s
}

func (t *TiresiasEntry) queueOf(service time.Duration) int {
	q := 0
	for q < len(t.limits) && service >= t.limits[q] {
		q++
	}
	return q
}

// Before applies the demotions and promotions due now. Promoted jobs are re-keyed; unless the
// walk ignores keys (AuthorsOrder), the call then ends so that the engine re-sorts them first.
func (t *TiresiasEntry) Before(s *policy.State, plan *policy.Plan) (reranked []*policy.Job, walk bool) {
	for t.due.Len() > 0 && t.due.d[0].at <= s.Now {
		d := heap.Pop(&t.due).(deadline)
		j := d.j
		if j.Done || j.Preempts != d.runs {
			continue // stale: the job finished, or ran or stopped again since
		}
		st := t.state(j)
		switch {
		case d.demote && j.Running:
			if q := t.queueOf(t.service(j, st, s.Now)); q > st.queue {
				st.queue, st.entered = q, s.Now
				reranked = append(reranked, j)
				n := policy.Note{Job: j.ID, Event: "demote"}
				if s.Env.Explain {
					n.Reason = t.demoted[q-1]
				}
				plan.Notes = append(plan.Notes, n)
			}
			t.pushDemotion(j, st, s.Now)
		case !d.demote && !j.Running && st.queue > 0:
			waited := s.Now - j.Since
			st.queue, st.entered, st.base = 0, s.Now, j.Executed(s.Now)
			n := policy.Note{Job: j.ID, Event: "promote"}
			if s.Env.Explain {
				n.Reason = "waited " + seconds3(waited) + t.starved
			}
			plan.Notes = append(plan.Notes, n)
			plan.Rekey = append(plan.Rekey, j.ID)
		}
	}
	if len(plan.Rekey) > 0 && !t.authors {
		plan.Wake = s.Now
		return reranked, false
	}
	return reranked, true
}

// After schedules the demotions of the jobs the walk started and, with promotion on, the
// promotions of those it stopped, and asks to be called at the next one.
func (t *TiresiasEntry) After(s *policy.State, plan *policy.Plan) {
	for _, pl := range plan.Start {
		j := s.Lookup(pl.Job)
		t.pushDemotion(j, t.state(j), s.Now)
	}
	if t.starve > 0 {
		for _, id := range plan.Stop {
			j := s.Lookup(id)
			if st := t.state(j); st.queue > 0 {
				// The job waits from now; its attained service is frozen while it waits.
				wait := simtime.FromNanos(math.Ceil(float64(j.Executed(s.Now)-st.base) * t.starve))
				heap.Push(&t.due, deadline{at: simtime.Add(s.Now, max(wait, 1)), job: id, j: j, runs: j.Preempts + 1})
			}
		}
	}
	if t.due.Len() > 0 {
		plan.Wake = max(t.due.d[0].at, s.Now+1)
	}
}

// pushDemotion schedules the instant a job that runs, or is about to, crosses its queue's limit.
// A started job keeps its Preempts count until it is stopped, which makes the deadline stale.
func (t *TiresiasEntry) pushDemotion(j *policy.Job, st *entryJob, now time.Duration) {
	if st.queue >= len(t.limits) {
		return
	}
	left := t.limits[st.queue] - t.service(j, st, now)
	if t.gpuTime {
		left = (left + time.Duration(j.GPUs) - 1) / time.Duration(j.GPUs)
	}
	heap.Push(&t.due, deadline{at: simtime.Add(now, max(left, 1)), job: j.ID, j: j, runs: j.Preempts, demote: true})
}

// deadline is a future demotion or promotion; runs is the job's Preempts count it is valid for.
type deadline struct {
	at     time.Duration
	job    trace.JobID
	j      *policy.Job
	runs   int
	demote bool
}

// deadlineHeap orders deadlines by (at, job), the job keeping pops deterministic. Stale ones stay
// until they come due: they still wake the engine at their times.
type deadlineHeap struct{ d []deadline }

func (h *deadlineHeap) Len() int { return len(h.d) }
func (h *deadlineHeap) Less(a, b int) bool {
	x, y := h.d[a], h.d[b]
	return x.at < y.at || x.at == y.at && x.job < y.job
}
func (h *deadlineHeap) Swap(a, b int) { h.d[a], h.d[b] = h.d[b], h.d[a] }
func (h *deadlineHeap) Push(x any)    { h.d = append(h.d, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	x := h.d[len(h.d)-1]
	h.d = h.d[:len(h.d)-1]
	return x
}

// seconds3 is d in seconds with three decimals, for reasons.
func seconds3(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
}
