package schedulers

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// AntMan is the Muri simulator's "antman" (Rivendile/Muri, simulator/run_sim.py antman_sim_jobs,
// antman_find_collocate_job and antman_calc_iter_time; cluster.py antman_placement; switch.py
// antman_alloc_res, try_single_node_alloc_antman and try_cross_node_alloc_antman; node.py). Each
// job is resource-guaranteed or opportunistic (trace.Stages.Priority 0 or not; a job without
// stage times is resource-guaranteed). Jobs never stop once started. At every arrival and
// completion:
//   - order: the waiting jobs, resource-guaranteed ones first, each kind by submission;
//   - a resource-guaranteed job takes GPUs no other resource-guaranteed job holds or reserves,
//     and reserves what it finds until it has all it needs: a job of at most a node's GPUs takes
//     them on the first node with enough, else reserves all it finds on the node with the most
//     (the first of equals) and goes on there at later events; a larger job takes the first
//     nodes whose GPUs are all free of such jobs, keeping those it finds;
//   - an opportunistic job takes, all or nothing, the GPUs of least load among those under 0.8:
//     each GPU's load is 0.1 per resource-guaranteed job holding or reserving it and 0.9 per
//     opportunistic job, summed in the lineage's floating-point order (ties: node, then GPU), so
//     that an opportunistic job shares a GPU with at most one resource-guaranteed job;
//   - speed: a resource-guaranteed job runs at its own step time; an opportunistic one slows to
//     fit its stages into the gaps of the resource-guaranteed jobs on its GPUs (Slowdown).
//
// A reservation is the policy's own: the engine sees a waiting job until it has all its GPUs.
// The lineage's CPU and memory counts never bind on the cluster its scripts run (n8g8: nodes of 92
// CPUs and 520 GB; a node's resource-guaranteed jobs take at most 6 CPUs and 17.4 GB per GPU, an
// opportunistic job 5 GB), so they are not kept.
type AntMan struct {
	per   int           // GPUs per node
	gpus  []amGPU       // by flat GPU index
	jobs  []amJob       // by Job.Idx
	lists []*amList     // waiting jobs by kind and GPU count
	pos   []int         // the walk's place in each list
	nxt   int32         // jobs with Idx < nxt have arrived
	order []*policy.Job // scratch: the finished jobs, then the arrivals
	plan  policy.Plan
	// staged tells whether the jobs seen so far have stage times (1), have none (-1), or no
	// job was seen (0): a trace must not mix the two.
	staged int
}

var _ policy.Policy = (*AntMan)(nil)
var _ policy.Pacer = (*AntMan)(nil)

// amGPU is what the lineage's node.py keeps of a GPU: whether a resource-guaranteed job holds or
// reserves it (gpu_job_list[g][0]) and its load (gpu_util_list[g]).
type amGPU struct {
	held bool
	load float64
}

// amJob is a job's placement: the GPUs it holds or reserves, in the order it took them, the GPUs
// it still needs, and the node a reservation goes on at (last_node_id).
type amJob struct {
	seen    bool
	started bool
	gpus    []int
	missing int
	node    int
}

// The loads the lineage gives jobs (jobs.py add_job, gpu_util): variables, not constants, so that
// Go computes "guaranteedLoad - 0.01" in float64 as Python does rather than exactly.
var (
	guaranteedLoad    = 0.1
	opportunisticLoad = 0.9
	loadStep          = 0.01
	loadCeiling       = 0.8 // switch.py antman_alloc_res gpu_util_upper
)

// NewAntMan returns Muri's "antman".
func NewAntMan() *AntMan { return &AntMan{} }

// Name returns the registry key.
func (a *AntMan) Name() string { return KeyAntMan }

// EveryEvent asks to be called at every arrival and completion: a waiting job's reservation grows
// whenever GPUs come free, as the lineage walks its waiting jobs at every event.
func (a *AntMan) EveryEvent() bool { return true }

// opportunistic reports whether job j is one of AntMan's opportunistic jobs.
func opportunistic(j *policy.Job) bool { return j.Stages != nil && j.Stages.Opportunistic() }

// Schedule releases the finished jobs' GPUs and walks the waiting jobs.
func (a *AntMan) Schedule(s *policy.State) (policy.Plan, error) {
	a.plan = policy.Plan{Start: a.plan.Start[:0]}
	sh := s.Cluster.Shape()
	if a.gpus == nil {
		a.per = sh.GPUsPerNode
		a.gpus = make([]amGPU, sh.Nodes*sh.GPUsPerNode)
	}
	for len(a.jobs) < len(s.Jobs) {
		a.jobs = append(a.jobs, amJob{})
	}
	// The lineage releases the jobs of one completion event in the order of its runnable list:
	// resource-guaranteed first, then by submission. A GPU's load is a float sum, so the order
	// of subtractions is kept.
	a.order = a.order[:0]
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			return a.plan, fmt.Errorf("policy %s: finished job %d is unknown", KeyAntMan, id)
		}
		a.order = append(a.order, j)
	}
	slices.SortFunc(a.order, walkOrder)
	for _, j := range a.order {
		a.release(j)
	}
	// Arrivals are the waiting jobs not seen yet, which come last among the waiting jobs (by
	// submission, then ID): each joins the list of its kind and GPU count.
	n := len(a.order)
	for j := range s.Pending.Backward() {
		if j.Idx < a.nxt {
			break
		}
		a.order = append(a.order, j)
	}
	slices.Reverse(a.order[n:])
	for _, j := range a.order[n:] {
		if err := a.check(j, sh.MaxShare); err != nil {
			return a.plan, err
		}
		a.list(opportunistic(j), j.GPUs).idx = append(a.list(opportunistic(j), j.GPUs).idx, j.Idx)
		a.nxt = j.Idx + 1
	}
	// The walk: resource-guaranteed jobs, then opportunistic ones, each in submission order
	// (the lineage sorts by priority, submit time and trace order). A job is visited only while
	// the cluster has something that a job of its kind and size could take (may): the others
	// would find nothing and change nothing, and skipping them keeps an event's cost to the jobs
	// that take GPUs, not the whole queue.
	for _, opp := range []bool{false, true} {
		a.pos = a.pos[:0]
		for range a.lists {
			a.pos = append(a.pos, 0)
		}
		for {
			m := a.measure()
			best, next := -1, int32(0)
			for k, l := range a.lists {
				if l.opp != opp || !m.may(l, a.per) {
					continue
				}
				for a.pos[k] < len(l.idx) && a.jobs[l.idx[a.pos[k]]].started {
					a.pos[k]++
				}
				if a.pos[k] < len(l.idx) && (best < 0 || l.idx[a.pos[k]] < next) {
					best, next = k, l.idx[a.pos[k]]
				}
			}
			if best < 0 {
				break
			}
			a.pos[best]++
			j := s.Jobs[next]
			var ok bool
			if opp {
				ok = a.takeOpportunistic(j)
			} else {
				var err error
				if ok, err = a.takeGuaranteed(j); err != nil {
					return a.plan, err
				}
			}
			if !ok {
				continue
			}
			a.jobs[j.Idx].started = true
			a.lists[best].dead++
			on := slices.Sorted(slices.Values(a.jobs[j.Idx].gpus))
			pl := policy.Placement{Job: j.ID, GPUs: on, Opt: j.Fast}
			if s.Env.Explain {
				pl.Reason = "resource-guaranteed: all its GPUs free of other such jobs"
				if opp {
					pl.Reason = "opportunistic: the least loaded GPUs under 0.8"
				}
			}
			a.plan.Start = append(a.plan.Start, pl)
		}
	}
	// Started jobs leave their lists once they are half of them.
	for _, l := range a.lists {
		if l.dead > 0 && 2*l.dead >= len(l.idx) {
			l.idx = slices.DeleteFunc(l.idx, func(i int32) bool { return a.jobs[i].started })
			l.dead = 0
		}
	}
	return a.plan, nil
}

// amList holds the waiting jobs of one kind and GPU count by index, in submission order; those
// that started are marked (amJob.started) and dropped in batches.
type amList struct {
	opp  bool
	gpus int
	idx  []int32
	dead int
}

// list returns the list of jobs of the kind and GPU count, made on first use.
func (a *AntMan) list(opp bool, gpus int) *amList {
	for _, l := range a.lists {
		if l.opp == opp && l.gpus == gpus {
			return l
		}
	}
	l := &amList{opp: opp, gpus: gpus}
	a.lists = append(a.lists, l)
	return l
}

// amRoom is what the cluster has for the walk: GPUs free of resource-guaranteed jobs, whether a
// whole node is, and GPUs under the load ceiling.
type amRoom struct {
	free  bool
	whole bool
	light int
}

// measure counts the cluster's room.
func (a *AntMan) measure() amRoom {
	var m amRoom
	for n := range len(a.gpus) / a.per {
		k := 0
		for _, g := range a.gpus[n*a.per : (n+1)*a.per] {
			if !g.held {
				k++
			}
			if g.load < loadCeiling {
				m.light++
			}
		}
		m.free = m.free || k > 0
		m.whole = m.whole || k == a.per
	}
	return m
}

// may reports whether a job of list l could take anything: an opportunistic job needs that many
// GPUs under the ceiling, a job of whole nodes a whole free node, any other resource-guaranteed
// job (which reserves what it finds) a free GPU.
func (m amRoom) may(l *amList, per int) bool {
	switch {
	case l.opp:
		return m.light >= l.gpus
	case l.gpus > per && l.gpus%per == 0:
		return m.whole
	}
	return m.free
}

// walkOrder is the lineage's order of runnable jobs: resource-guaranteed first, then by
// submission (the engine's index follows submission, then trace ID).
func walkOrder(x, y *policy.Job) int {
	if c := cmp.Compare(b2i(opportunistic(x)), b2i(opportunistic(y))); c != 0 {
		return c
	}
	return cmp.Compare(x.Idx, y.Idx)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// check sees job j for the first time: it records the GPUs it needs and refuses what the lineage
// cannot run, or the cluster (an opportunistic job shares its GPUs: maxShare must allow two jobs).
func (a *AntMan) check(j *policy.Job, maxShare int) error {
	aj := &a.jobs[j.Idx]
	if aj.seen {
		return nil
	}
	aj.seen, aj.missing = true, j.GPUs
	staged := -1
	if j.Stages != nil {
		staged = 1
	}
	if a.staged != 0 && a.staged != staged {
		return fmt.Errorf("policy %s: job %d: some jobs have stage times and others not (Muri's dialect gives every job its own)", KeyAntMan, j.ID)
	}
	a.staged = staged
	if opportunistic(j) && maxShare < 2 {
		return fmt.Errorf("policy %s: job %d is opportunistic and shares GPUs, which a cluster of one job per GPU (max share %d) does not allow", KeyAntMan, j.ID, maxShare)
	}
	if j.Stages != nil && !opportunistic(j) {
		t := j.Stages.Time
		if t[0]+t[1] == 0 || t[1]+t[2] == 0 || t[0]+t[2] == 0 {
			return fmt.Errorf("policy %s: job %d: two of its stage times are 0, which antman_calc_iter_time divides by", KeyAntMan, j.ID)
		}
	}
	return nil
}

// free returns the GPUs of node n that no resource-guaranteed job holds or reserves, ascending
// (node.py get_free_gpus).
func (a *AntMan) free(n int) []int {
	var out []int
	for k := range a.per {
		if !a.gpus[n*a.per+k].held {
			out = append(out, n*a.per+k)
		}
	}
	return out
}

// hold gives GPUs gs to resource-guaranteed job j (node.py alloc_gpus, at the job's load less
// the step that switch.py add_job_gpu_util adds once the job has all its GPUs).
func (a *AntMan) hold(j *policy.Job, gs []int) {
	aj := &a.jobs[j.Idx]
	for _, g := range gs {
		a.gpus[g].held = true
		a.gpus[g].load += guaranteedLoad - loadStep
	}
	aj.gpus = append(aj.gpus, gs...)
	aj.missing -= len(gs)
}

// complete adds the last load step to every GPU of a job that has all its GPUs.
func (a *AntMan) complete(j *policy.Job) {
	for _, g := range a.jobs[j.Idx].gpus {
		a.gpus[g].load += loadStep
	}
}

// takeGuaranteed places or goes on reserving resource-guaranteed job j and reports whether it
// has all its GPUs (switch.py try_single_node_alloc_antman; larger jobs: takeNodes).
func (a *AntMan) takeGuaranteed(j *policy.Job) (bool, error) {
	aj := &a.jobs[j.Idx]
	need := aj.missing
	if j.GPUs > a.per {
		return a.takeNodes(j)
	}
	if need < j.GPUs {
		// A reservation goes on at its node only.
		gs := a.free(aj.node)
		if len(gs) >= need {
			a.hold(j, gs[:need])
			a.complete(j)
			return true, nil
		}
		a.hold(j, gs)
		return false, nil
	}
	best, most := -1, 0
	for n := range len(a.gpus) / a.per {
		gs := a.free(n)
		if len(gs) >= need {
			aj.node = n
			a.hold(j, gs[:need])
			a.complete(j)
			return true, nil
		}
		if len(gs) > most {
			best, most = n, len(gs)
		}
	}
	if best >= 0 {
		aj.node = best
		a.hold(j, a.free(best))
	}
	return false, nil
}

// takeNodes places or goes on reserving resource-guaranteed job j of more than a node's GPUs
// (try_cross_node_alloc_antman): the first nodes whose GPUs are all free of such jobs, as many
// whole nodes as it still needs, and the rest on the first other node with enough free, else as
// many as the node with the most free has. What it finds it keeps, even when it is too little. A
// rest smaller than at first goes on at the node the first rest went to, and then the lineage
// counts the job placed whether or not that node had enough: such a start, on fewer GPUs than
// the job asks for, is refused.
func (a *AntMan) takeNodes(j *policy.Job) (bool, error) {
	aj := &a.jobs[j.Idx]
	whole, rest := aj.missing/a.per, aj.missing%a.per
	var nodes []int
	for n := range len(a.gpus) / a.per {
		if len(nodes) == whole {
			break
		}
		if len(a.free(n)) == a.per {
			nodes = append(nodes, n)
		}
	}
	enough := len(nodes) == whole
	last := -1
	if rest > 0 {
		if rest < j.GPUs%a.per {
			last = aj.node
		} else {
			best, most := -1, 0
			for n := range len(a.gpus) / a.per {
				if slices.Contains(nodes, n) {
					continue
				}
				f := len(a.free(n))
				if f >= rest {
					last = n
					break
				}
				if f > most {
					best, most = n, f
				}
			}
			if last < 0 {
				enough, last = false, best
			}
		}
	}
	if last >= 0 {
		gs := a.free(last)
		a.hold(j, gs[:min(len(gs), rest)])
		aj.node = last
	}
	for _, n := range nodes {
		a.hold(j, a.free(n))
	}
	if !enough {
		return false, nil
	}
	if aj.missing > 0 {
		return false, fmt.Errorf("policy %s: job %d: the lineage starts it on %d of its %d GPUs (try_cross_node_alloc_antman), which sharebench cannot run", KeyAntMan, j.ID, j.GPUs-aj.missing, j.GPUs)
	}
	a.complete(j)
	return true, nil
}

// takeOpportunistic places opportunistic job j, all or nothing, on the least loaded GPUs under
// the ceiling (switch.py antman_alloc_res, find_gpu_util, min_load_nodes) and reports whether
// it fits.
func (a *AntMan) takeOpportunistic(j *policy.Job) bool {
	var gs []int
	for g := range a.gpus {
		if a.gpus[g].load < loadCeiling {
			gs = append(gs, g)
		}
	}
	if len(gs) < j.GPUs {
		return false
	}
	slices.SortStableFunc(gs, func(x, y int) int { return cmp.Compare(a.gpus[x].load, a.gpus[y].load) })
	gs = gs[:j.GPUs]
	for _, g := range gs {
		a.gpus[g].load += opportunisticLoad
	}
	aj := &a.jobs[j.Idx]
	aj.gpus, aj.missing = gs, 0
	return true
}

// release frees finished job j's GPUs (node.py release_gpus).
func (a *AntMan) release(j *policy.Job) {
	aj := &a.jobs[j.Idx]
	for _, g := range aj.gpus {
		if opportunistic(j) {
			a.gpus[g].load -= opportunisticLoad
		} else {
			a.gpus[g].held = false
			a.gpus[g].load -= guaranteedLoad
		}
	}
	aj.gpus = nil
}

// Slowdown is how much running job j slows next to its partners: the most it slows next to any
// one of them (pairSlowdown).
func (a *AntMan) Slowdown(j *policy.Job, partners []*policy.Job) float64 {
	x := 1.0
	for _, q := range partners {
		x = max(x, pairSlowdown(j, q))
	}
	return x
}

// pairSlowdown is how much job j slows next to job q on a GPU they share
// (antman_calc_iter_time): a resource-guaranteed job not at all; an opportunistic one next to
// another opportunistic one twice; next to a resource-guaranteed one, it runs its data-loading,
// GPU and communication stages in the gaps the other's stages leave, one of the other's
// iterations per gap it uses, as the lineage counts them.
func pairSlowdown(j, q *policy.Job) float64 {
	if !opportunistic(j) {
		return 1
	}
	if opportunistic(q) {
		return 2
	}
	t, c := stageSeconds(j.Stages), stageSeconds(q.Stages)
	iters := math.Floor(t[0] / (c[1] + c[2]))
	if extra := math.Mod(t[0], c[1]+c[2]); extra > 0 {
		iters++
		t[1] -= min(t[1], c[2], c[1]+c[2]-extra)
	}
	iters += math.Floor(t[1] / (c[0] + c[2]))
	if extra := math.Mod(t[1], c[0]+c[2]); extra > 0 {
		iters++
		if extra < c[0] {
			t[2] -= min(t[2], c[0]+c[1]-extra)
		}
	}
	iters += math.Floor(t[2] / (c[0] + c[1]))
	if extra := math.Mod(t[2], c[0]+c[1]); extra > c[0] {
		iters++
	}
	return iters * q.Options[q.Opt].Excl.Seconds() / j.Options[j.Opt].Excl.Seconds()
}

// stageSeconds returns stage times in seconds as the lineage reads them: the trace's milliseconds
// as a float, divided by 1000. A Duration holds whole nanoseconds, so ns/1e6 is that float.
func stageSeconds(s *trace.Stages) [3]float64 {
	var out [3]float64
	for k, d := range s.Time {
		out[k] = float64(d) / 1e6 / 1000
	}
	return out
}
