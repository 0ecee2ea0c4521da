package schedulers

import (
	"fmt"
	"slices"

	"github.com/sharebench/sharebench/policy"
)

// The Muri simulator's lineage (SymbioticLab/Tiresias, Rivendile/Muri simulator/) re-decides
// every job at every event: it empties its cluster and walks all jobs that have arrived and not
// finished, in its order, keeping each job that still fits. The helpers here are shared by the
// rules that follow it (tiresias, tiresias-gittins, srtf, srsf).

// runnable is the lineage's list of runnable jobs: the jobs that have arrived and not finished,
// by index, in the order the policy left them at its last call.
type runnable struct {
	list []int32
	gone []bool // by Job.Idx: finished
	nxt  int32  // jobs with Idx < nxt have arrived
}

// update drops the finished jobs and appends the arrivals, which come last among the waiting
// jobs (by submission, then ID), in that order. It returns how many jobs were there before them.
func (r *runnable) update(s *policy.State, name string) (int, error) {
	for len(r.gone) < len(s.Jobs) {
		r.gone = append(r.gone, false)
	}
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			return 0, fmt.Errorf("policy %s: finished job %d is unknown", name, id)
		}
		r.gone[j.Idx] = true
	}
	r.list = slices.DeleteFunc(r.list, func(i int32) bool { return r.gone[i] })
	n := len(r.list)
	for j := range s.Pending.Backward() {
		if j.Idx < r.nxt {
			break
		}
		r.list = append(r.list, j.Idx)
	}
	slices.Reverse(r.list[n:])
	for _, i := range r.list[n:] {
		r.nxt = max(r.nxt, i+1)
	}
	return n, nil
}

// applyLineage turns such a walk's decisions into plan: the stops first, then the starts, each
// on the lowest-numbered idle GPUs once the stopped jobs have left. The lineage's jobs never share
// a GPU and nothing in the simulation depends on which GPUs a job holds, so running jobs stay
// where they are even where the lineage's own walk would put them elsewhere. Jobs are given by
// index; reason, when Env.Explain is set, says why a job starts. The starts' GPU lists are
// appended to gpus, which is returned (fast executors reuse it).
func applyLineage(s *policy.State, name string, stops, starts []int32, reason func(int32) string, gpus []int, plan *policy.Plan) ([]int, error) {
	cl := s.Cluster
	for _, i := range stops {
		j := s.Jobs[i]
		if err := cl.Release(j.ID); err != nil {
			return gpus, fmt.Errorf("policy %s: preempt job %d: %w", name, j.ID, err)
		}
		plan.Stop = append(plan.Stop, j.ID)
	}
	for _, i := range starts {
		j := s.Jobs[i]
		lo := len(gpus)
		gpus = cl.AppendIdle(gpus, j.GPUs)
		on := gpus[lo:len(gpus):len(gpus)]
		if len(on) < j.GPUs {
			return gpus, fmt.Errorf("policy %s: job %d: %d idle GPUs for %d (the walk's count of free GPUs is off)", name, j.ID, len(on), j.GPUs)
		}
		if err := cl.Place(j.ID, on, j.Options[j.Fast].Mem); err != nil {
			return gpus, fmt.Errorf("policy %s: job %d: %w", name, j.ID, err)
		}
		pl := policy.Placement{Job: j.ID, GPUs: on, Opt: j.Fast}
		if s.Env.Explain {
			pl.Reason = reason(i)
		}
		plan.Start = append(plan.Start, pl)
	}
	return gpus, nil
}

// YARNNodes is the lineage's YARN placement (Muri cluster.py ms_yarn_placement, switch.py
// try_single_node_alloc and try_cross_node_alloc) on a cluster that it fills from empty at every
// event: only each node's count of free GPUs matters (CPUs and memory never bind on the lineage's
// clusters, and jobs never share).
type YARNNodes struct {
	per  int
	free []int // free GPUs by node
}

// Reset empties the cluster: nodes of per GPUs each.
func (y *YARNNodes) Reset(nodes, per int) {
	y.per = per
	y.free = y.free[:0]
	for range nodes {
		y.free = append(y.free, per)
	}
}

// Take places a job of gpus GPUs, all or nothing, and reports whether it fits. A job of at most a
// node's GPUs takes the first node with that many free; a larger job takes the first wholly free
// nodes it needs, then the rest of its GPUs on the first other node with enough free.
func (y *YARNNodes) Take(gpus int) bool {
	if gpus <= y.per {
		for n, f := range y.free {
			if f >= gpus {
				y.free[n] -= gpus
				return true
			}
		}
		return false
	}
	whole, rest := gpus/y.per, gpus%y.per
	var nodes []int
	for n, f := range y.free {
		if len(nodes) == whole {
			break
		}
		if f == y.per {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) < whole {
		return false
	}
	last := -1
	if rest > 0 {
		for n, f := range y.free {
			if f >= rest && !taken(nodes, n) {
				last = n
				break
			}
		}
		if last < 0 {
			return false
		}
		y.free[last] -= rest
	}
	for _, n := range nodes {
		y.free[n] = 0
	}
	return true
}

// taken reports whether node n is among nodes.
func taken(nodes []int, n int) bool {
	for _, m := range nodes {
		if m == n {
			return true
		}
	}
	return false
}
