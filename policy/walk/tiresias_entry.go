package walk

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
)

// TiresiasEntry is discretised two-dimensional least-attained-service on the authors' physical
// scheduling loop (Lai-JX/Scheduler Tiresias_jobs with jobs_placement): jobs sit in priority
// queues by attained service (wall time, or GPU time), are demoted the instant they cross a queue
// limit, are walked queue by queue — first come, first served within a queue by the time they
// entered it, so a waiting job preempts a running one of its own queue — with YARN placement,
// greedy backfill and the authors' preemptive path (victims from the lowest priority up, only
// jobs with more than 100 iterations left). A job that has waited at least StarveFactor times its
// attained service is promoted back to the first queue. With AuthorsOrder the walk follows
// arrival order instead, reproducing the authors' physical code, whose queue order is computed
// but never used. The simulator lineage's dlas-gpu is Tiresias (tiresias.go).
type TiresiasEntry struct {
	g       greedy
	limits  []time.Duration
	gpuTime bool
	starve  float64
	authors bool
	st      []tiresiasJob // by Job.Idx
	due     deadlines
	runKey  func(*policy.Job) policy.Key
	// demoted[q-1] is the decision log's reason for a demotion to queue q; starved ends that of
	// a promotion.
	demoted []string
	starved string
	// waited is the reason of the last promotion, for a wait of waitedFor: promotions fire at
	// deadlines, so most waits are the same and share it.
	waited    string
	waitedFor time.Duration
	// plan is the call's plan, whose notes and re-keys reuse the memory of the last call's:
	// the engine is done with a plan before it calls again.
	plan policy.Plan
}

type tiresiasJob struct {
	seen    bool
	queue   int
	entered time.Duration // when the job entered its current queue
	base    time.Duration // executed time at the last promotion (service restarts from there)
}

var _ policy.Policy = (*TiresiasEntry)(nil)

// TiresiasEntryArgs are the arguments of tiresias-entry-order.
type TiresiasEntryArgs struct {
	// Exhaustive walks every pending job with no shortcut (same decisions, slower; for tests).
	Exhaustive bool `json:"exhaustive,omitempty"`
	// LimitsS are the queue limits in seconds of attained service; len+1 queues.
	LimitsS []float64 `json:"limits_s"`
	// Service is "time" (wall seconds, the authors' physical setting) or "gpu-time" (× GPUs).
	Service string `json:"service"`
	// StarveFactor promotes a waiting job once its wait reaches this many times its attained
	// service; 0 disables promotion.
	StarveFactor float64 `json:"starve_factor"`
	AuthorsOrder bool    `json:"authors_order"`
	Preempt      bool    `json:"preempt"`
	Victims      string  `json:"victims"`
}

func newTiresiasEntry(a TiresiasEntryArgs) (*TiresiasEntry, error) {
	if len(a.LimitsS) == 0 {
		return nil, fmt.Errorf("limits_s: need at least one queue limit")
	}
	t := &TiresiasEntry{starve: a.StarveFactor, authors: a.AuthorsOrder,
		starved: " ≥ " + strconv.FormatFloat(a.StarveFactor, 'g', -1, 64) + " × attained service"}
	for i, l := range a.LimitsS {
		if !(l > 0) || math.IsInf(l, 0) || (i > 0 && l <= a.LimitsS[i-1]) {
			return nil, fmt.Errorf("limits_s: want positive, increasing limits, got %v", a.LimitsS)
		}
		t.limits = append(t.limits, seconds(l))
		t.demoted = append(t.demoted, "queue "+strconv.Itoa(i+1)+": attained service reached "+fmtDur(t.limits[i]))
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
	t.g = greedy{name: KeyTiresiasEntry, place: yarnPlace, exclusive: true, bySize: true, timeless: true, preempt: a.Preempt, tentative: a.Victims == VictimsTentative, exhaustive: a.Exhaustive}
	return t, nil
}

// Name returns the registry key.
func (t *TiresiasEntry) Name() string { return KeyTiresiasEntry }

// Exclusive marks the policy as never sharing a GPU (YARN placement on idle GPUs).
func (t *TiresiasEntry) Exclusive() {}

func (t *TiresiasEntry) state(j *policy.Job) *tiresiasJob {
	for int(j.Idx) >= len(t.st) {
		t.st = append(t.st, tiresiasJob{})
	}
	st := &t.st[j.Idx]
	if !st.seen {
		*st = tiresiasJob{seen: true, entered: j.Submit}
	}
	return st
}

// Key ranks jobs by (queue, time entering the queue), or by arrival with AuthorsOrder.
func (t *TiresiasEntry) Key(j *policy.Job) policy.Key {
	if t.authors {
		return policy.Key{}
	}
	st := t.state(j)
	return policy.Key{A: float64(st.queue), B: int64(st.entered)}
}

// service returns the attained service of j that counts for its queue.
func (t *TiresiasEntry) service(j *policy.Job, st *tiresiasJob, now time.Duration) time.Duration {
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

// Schedule applies the demotions and promotions due now, then walks the queues.
func (t *TiresiasEntry) Schedule(s *policy.State) (policy.Plan, error) {
	plan := &t.plan
	*plan = policy.Plan{Notes: plan.Notes[:0], Rekey: plan.Rekey[:0]}
	for {
		d, ok := t.due.pop(s.Now)
		if !ok {
			break
		}
		j := d.j
		if j.Done || j.Preempts != d.runs {
			continue // stale: the job finished, or ran or stopped again since
		}
		st := t.state(j)
		switch {
		case d.demote && j.Running:
			if q := t.queueOf(t.service(j, st, s.Now)); q > st.queue {
				st.queue, st.entered = q, s.Now
				t.g.rekey(j)
				n := policy.Note{Job: j.ID, Event: "demote"}
				if s.Env.Explain {
					n.Reason = t.demoted[q-1]
				}
				plan.Notes = append(plan.Notes, n)
			}
			t.pushDemotion(j, st, s.Now)
		case !d.demote && !j.Running && st.queue > 0:
			st.queue, st.entered, st.base = 0, s.Now, j.Executed(s.Now)
			n := policy.Note{Job: j.ID, Event: "promote"}
			if s.Env.Explain {
				if w := s.Now - j.Since; w != t.waitedFor || t.waited == "" {
					t.waited, t.waitedFor = "waited "+fmtDur(w)+t.starved, w
				}
				n.Reason = t.waited
			}
			plan.Notes = append(plan.Notes, n)
			plan.Rekey = append(plan.Rekey, j.ID)
		}
	}
	if t.runKey == nil {
		t.runKey = t.Key // once: a method value allocates
	}
	runKey := t.runKey
	if len(plan.Rekey) > 0 {
		t.g.changed()
	}
	if len(plan.Rekey) > 0 && !t.authors {
		// Let the engine re-sort the promoted jobs first; it calls again at once.
		if t.g.preempt {
			t.g.sync(s, runKey)
		}
		plan.Wake = s.Now
		return *plan, nil
	}
	if err := t.g.run(s, runKey, plan); err != nil {
		return *plan, err
	}
	for _, pl := range plan.Start {
		j := s.Lookup(pl.Job)
		t.pushDemotion(j, t.state(j), s.Now)
	}
	if t.starve > 0 {
		for _, id := range plan.Stop {
			j := s.Lookup(id)
			st := t.state(j)
			if st.queue > 0 {
				// The job waits from now; its attained service is frozen while it waits.
				wait := simtime.FromNanos(math.Ceil(float64(j.Executed(s.Now)-st.base) * t.starve))
				t.due.push(deadline{at: simtime.Add(s.Now, max(wait, 1)), job: id, j: j, runs: j.Preempts + 1})
			}
		}
	}
	if next, ok := t.due.next(s.Now); ok {
		plan.Wake = max(next, s.Now+1)
	}
	return *plan, nil
}

// pushDemotion schedules the instant a job that is (or is about to be) running crosses the next
// queue limit. A started job keeps its Preempts count until it is stopped, which marks the
// deadline stale.
func (t *TiresiasEntry) pushDemotion(j *policy.Job, st *tiresiasJob, now time.Duration) {
	if st.queue >= len(t.limits) {
		return
	}
	left := t.limits[st.queue] - t.service(j, st, now)
	if t.gpuTime {
		left = (left + time.Duration(j.GPUs) - 1) / time.Duration(j.GPUs)
	}
	t.due.push(deadline{at: simtime.Add(now, max(left, 1)), job: j.ID, j: j, runs: j.Preempts, demote: true})
}
