package schedulers

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
)

// TiresiasArgs are tiresias's arguments.
type TiresiasArgs struct {
	// LimitsS are the queue limits in seconds of attained service; len+1 queues.
	LimitsS []float64 `json:"limits_s"`
	// Service is "gpu-time" (wall seconds × GPUs, dlas-gpu) or "time" (wall seconds, dlas).
	Service string `json:"service"`
}

// Tiresias is the simulator lineage's discretised two-dimensional least-attained-service,
// "dlas-gpu" of the Tiresias and Muri simulators (SymbioticLab/Tiresias and Rivendile/Muri,
// simulator/run_sim.py dlas_sim_jobs with GPU-time service and no starvation handling). At every
// arrival and completion it re-decides every job:
//   - queues: jobs sit in len(limits)+1 queues; a new job joins the tail of the first one, and a
//     running job whose attained service (wall time run × GPUs) has reached its queue's limit
//     moves to the tail of the next one, one queue per event, in arrival order;
//   - order and placement: the queues are walked in order, each in its own order, counting free
//     GPUs only: a job runs if it fits in what the jobs before it left, else it waits (a running
//     job that no longer fits is preempted), and smaller jobs behind it are still tried. Started
//     jobs take the lowest-numbered idle GPUs, ignoring nodes, as in the lineage;
//   - after the walk each queue puts its waiting jobs behind its running ones, keeping their
//     order, so a waiting job never preempts a running job of its own queue;
//   - the next event comes no later than the instant a running job's own clock reaches
//     ceil(limit / GPUs) seconds (GPU-time service) or the limit (time service).
//
// This is the rule as the lineage's code states it, walking every job at every call; the fast
// executor (walk.FastTiresias) keeps the queues so that a call costs what changed.
type Tiresias struct {
	name      string
	limits    []float64 // queue limits in seconds of attained service
	gpuTime   bool
	demoteWhy []string // demoteWhy[q-1]: the decision log's reason for a demotion to queue q

	queues [][]int32 // job indices, in queue order
	queue  []int     // by Job.Idx: its queue
	seen   []bool    // by Job.Idx: has arrived
	nxt    int32     // jobs with Idx < nxt have arrived
	runs   []bool    // by Job.Idx: runs after the last walk

	// gittins, when set, orders each queue by the Gittins index before it is walked
	// (tiresias-gittins); rank, ix and sorted are its scratch.
	gittins *GittinsIndex
	rank    []float64
	ix      []int32
	sorted  []int32
}

var _ policy.Policy = (*Tiresias)(nil)

// NewTiresias returns the policy.
func NewTiresias(a TiresiasArgs) (*Tiresias, error) {
	if len(a.LimitsS) == 0 {
		return nil, fmt.Errorf("limits_s: need at least one queue limit")
	}
	for i, l := range a.LimitsS {
		if !(l > 0) || math.IsInf(l, 0) || l > 1e9 || (i > 0 && l <= a.LimitsS[i-1]) {
			return nil, fmt.Errorf("limits_s: want positive, increasing limits of at most 1e9 s, got %v", a.LimitsS)
		}
	}
	t := &Tiresias{name: KeyTiresias, limits: slices.Clone(a.LimitsS), queues: make([][]int32, len(a.LimitsS)+1)}
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
	return t, nil
}

// Name returns the registry key.
func (t *Tiresias) Name() string { return t.name }

// Gittins reports whether each queue is ordered by the Gittins index before it is walked
// (tiresias-gittins); walk.FastTiresias does not, walk.FastTiresiasGittins does.
func (t *Tiresias) Gittins() bool { return t.gittins != nil }

// Exclusive marks Tiresias as never sharing a GPU.
func (t *Tiresias) Exclusive() {}

// EveryEvent asks to be called at every arrival and completion, even with no job waiting: the
// lineage checks demotions at every event.
func (t *Tiresias) EveryEvent() bool { return true }

// Schedule applies the events since the last call (completions, arrivals, demotions), walks the
// queues and returns the jobs to preempt and to start.
func (t *Tiresias) Schedule(s *policy.State) (policy.Plan, error) {
	var plan policy.Plan
	for len(t.queue) < len(s.Jobs) {
		t.queue, t.seen, t.runs = append(t.queue, 0), append(t.seen, false), append(t.runs, false)
	}
	// Completions leave their queue.
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			return plan, fmt.Errorf("policy %s: finished job %d is unknown", t.name, id)
		}
		q := t.queue[j.Idx]
		t.queues[q] = slices.DeleteFunc(t.queues[q], func(i int32) bool { return i == j.Idx })
	}
	// Arrivals are the waiting jobs not seen yet, which come last among the waiting jobs (by
	// submission, then ID).
	var arrived []int32
	for j := range s.Pending.Backward() {
		if j.Idx < t.nxt {
			break
		}
		arrived = append(arrived, j.Idx)
	}
	slices.Reverse(arrived)
	for _, i := range arrived {
		if t.seen[i] {
			return plan, fmt.Errorf("policy %s: job %d arrived twice", t.name, s.Jobs[i].ID)
		}
		t.seen[i] = true
		t.nxt = max(t.nxt, i+1)
	}
	// Demotions, one queue per event, in arrival order.
	var demoted []int32
	for _, j := range s.Running() {
		if q := t.queue[j.Idx]; q < len(t.limits) && j.Executed(s.Now) >= t.Threshold(q, j.GPUs) {
			demoted = append(demoted, j.Idx)
		}
	}
	slices.Sort(demoted)
	for _, i := range demoted {
		q := t.queue[i]
		t.queues[q] = slices.DeleteFunc(t.queues[q], func(x int32) bool { return x == i })
		t.queues[q+1] = append(t.queues[q+1], i)
		t.queue[i] = q + 1
		plan.Notes = append(plan.Notes, policy.Note{Job: s.Jobs[i].ID, Event: "demote", Reason: t.DemoteReason(q + 1)})
	}
	t.queues[0] = append(t.queues[0], arrived...)
	// The walk: every job of every queue in order, counting free GPUs.
	var stops, starts []int32
	free := s.Cluster.NumGPUs()
	for _, queue := range t.queues {
		if t.gittins != nil {
			t.sortQueue(s, queue)
		}
		for _, i := range queue {
			j := s.Jobs[i]
			t.runs[i] = free >= j.GPUs
			switch {
			case t.runs[i]:
				free -= j.GPUs
				if !j.Running {
					starts = append(starts, i)
				}
			case j.Running:
				stops = append(stops, i)
			}
		}
	}
	// Each queue puts its waiting jobs behind its running ones.
	for _, queue := range t.queues {
		slices.SortStableFunc(queue, func(a, b int32) int {
			switch ra, rb := t.runs[a], t.runs[b]; {
			case ra == rb:
				return 0
			case ra:
				return -1
			}
			return 1
		})
	}
	if _, err := t.Apply(s, stops, starts, func(i int32) int { return t.queue[i] }, nil, &plan); err != nil {
		return plan, err
	}
	// The next event of the lineage for a running job's crossing of its queue's limit.
	var wake time.Duration
	woke := false
	for _, queue := range t.queues[:len(t.limits)] {
		for _, i := range queue {
			if !t.runs[i] {
				continue
			}
			j := s.Jobs[i]
			if at := s.Now + t.JumpAt(t.queue[i], j.GPUs) - j.Executed(s.Now); !woke || at < wake {
				wake, woke = at, true
			}
		}
	}
	if woke {
		plan.Wake = max(wake, s.Now+1)
	}
	return plan, nil
}

// Queues returns the number of queues.
func (t *Tiresias) Queues() int { return len(t.limits) + 1 }

// Threshold returns the attained wall time at which a job of gpus GPUs in queue q crosses its
// limit: service ≥ limit, that is exec·gpus ≥ limit with GPU-time service.
func (t *Tiresias) Threshold(q, gpus int) time.Duration {
	l := simtime.FromNanos(t.limits[q] * 1e9)
	if !t.gpuTime {
		return l
	}
	n := time.Duration(gpus)
	return (l + n - 1) / n
}

// JumpAt returns the wall time at which the lineage schedules its next event for that crossing:
// ceil(limit / GPUs) whole seconds with GPU-time service, the limit itself with time service.
func (t *Tiresias) JumpAt(q, gpus int) time.Duration {
	if !t.gpuTime {
		return simtime.FromNanos(t.limits[q] * 1e9)
	}
	return simtime.FromNanos(math.Ceil(t.limits[q]/float64(gpus)) * 1e9)
}

// DemoteReason is the decision log's reason for a demotion into queue q.
func (t *Tiresias) DemoteReason(q int) string { return t.demoteWhy[q-1] }

// Apply turns a walk's decisions into plan (applyLineage): the stops first, then the starts, each
// on the lowest-numbered idle GPUs once the stopped jobs have left. Jobs are given by index; queue
// gives a started job's queue, for its reason; the starts' GPU lists are appended to gpus, which
// is returned (the fast executor reuses it).
func (t *Tiresias) Apply(s *policy.State, stops, starts []int32, queue func(int32) int, gpus []int, plan *policy.Plan) ([]int, error) {
	return applyLineage(s, t.name, stops, starts, func(i int32) string { return "queue " + strconv.Itoa(queue(i)) + ", fits in the free GPUs" }, gpus, plan)
}
