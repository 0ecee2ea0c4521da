package schedulers

import (
	"slices"
	"time"

	"github.com/sharebench/sharebench/policy"
)

// Shortest is the Muri simulator's "shortest" and "shortest-gpu" (Rivendile/Muri,
// simulator/run_sim.py shortest_first_sim_jobs, after the Tiresias simulator's): shortest
// remaining time, or remaining GPU-time (srsf.go), first, every job re-decided at every event.
// At every arrival and completion:
//   - order: the jobs that have arrived and not finished sit in one list, kept from call to call;
//     arrivals join its tail (those of one instant in submission order, as the trace lists them),
//     and the list is sorted stably by each job's key, so jobs whose keys are equal keep their
//     previous order. The key is the job's remaining time: iterations left × step time alone, of
//     a running job as of now (with GPU-time, × its GPUs);
//   - placement: the list is placed, in that order, on an empty cluster with YARN (YARNNodes):
//     a job runs if it lands, else waits, and a running job that does not land is preempted;
//     smaller jobs behind one that did not land are still tried;
//   - no other events: nothing happens between arrivals and completions.
//
// The lineage places every job afresh at every event; here a running job keeps its GPUs and a
// started job takes the lowest-numbered idle ones (applyLineage): the walk decides which jobs
// run, and which GPUs they hold changes nothing. This is the rule as the lineage's code states
// it, sorting and walking every job at every call; walk.FastShortest makes the same decisions
// keeping the waiting jobs sorted from call to call.
type Shortest struct {
	name    string
	gpuTime bool // order by remaining GPU-time (srsf)

	runnable
	keys  []float64
	nodes YARNNodes
}

var _ policy.Policy = (*Shortest)(nil)

// NewSRTF returns Muri's "shortest": shortest remaining time first.
func NewSRTF() *Shortest { return &Shortest{name: KeySRTF} }

// Name returns the registry key.
func (r *Shortest) Name() string { return r.name }

// Exclusive marks the policy as never sharing a GPU.
func (r *Shortest) Exclusive() {}

// EveryEvent asks to be called at every arrival and completion, even with no job waiting: the
// lineage places every job afresh at every event, and a new order may leave a running job out.
func (r *Shortest) EveryEvent() bool { return true }

// Key returns the lineage's key of job j at time now: its remaining time in seconds at its step
// time alone, times its GPUs with GPU-time. The product is formed in the lineage's order.
func (r *Shortest) Key(now time.Duration, j *policy.Job) float64 {
	k := j.RemIters(now) * j.Options[j.Fast].Excl.Seconds()
	if r.gpuTime {
		k *= float64(j.GPUs)
	}
	return k
}

// Schedule drops the finished jobs, appends the arrivals, sorts the list by key and places it on
// an empty cluster.
func (r *Shortest) Schedule(s *policy.State) (policy.Plan, error) {
	var plan policy.Plan
	for len(r.keys) < len(s.Jobs) {
		r.keys = append(r.keys, 0)
	}
	if _, err := r.update(s, r.name); err != nil {
		return plan, err
	}
	for _, i := range r.list {
		r.keys[i] = r.Key(s.Now, s.Jobs[i])
	}
	slices.SortStableFunc(r.list, func(a, b int32) int { return cmpFloat(r.keys[a], r.keys[b]) })
	// The walk: every job in order on an empty cluster.
	var stops, starts []int32
	sh := s.Cluster.Shape()
	r.nodes.Reset(sh.Nodes, sh.GPUsPerNode)
	for _, i := range r.list {
		j := s.Jobs[i]
		switch fits := r.nodes.Take(j.GPUs); {
		case fits && !j.Running:
			starts = append(starts, i)
		case !fits && j.Running:
			stops = append(stops, i)
		}
	}
	_, err := r.Apply(s, stops, starts, func(int32) string { return r.StartReason() }, nil, &plan)
	return plan, err
}

// StartReason is the decision log's reason for a start.
func (r *Shortest) StartReason() string {
	if r.gpuTime {
		return "lands on an empty cluster (yarn) in order of remaining GPU-time"
	}
	return "lands on an empty cluster (yarn) in order of remaining time"
}

// Apply turns a walk's decisions into plan (applyLineage); the starts' GPU lists are appended to
// gpus, which is returned (the fast executor reuses it).
func (r *Shortest) Apply(s *policy.State, stops, starts []int32, reason func(int32) string, gpus []int, plan *policy.Plan) ([]int, error) {
	return applyLineage(s, r.name, stops, starts, reason, gpus, plan)
}

// cmpFloat orders keys ascending; the lineage's keys are finite.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
