package schedulers

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// Muri is the Muri simulator's multi-resource interleaving schedules (Rivendile/Muri,
// simulator/run_sim.py multi_resource_blossom_same_sim_jobs; matching.py _Blossom_Same and
// _Packing): Muri-S ("multi-resource-blossom-same-gpu", durations known) and Muri-L
// ("multi-resource-blossom-same-gpu-unaware"). Jobs of the same GPU count share those GPUs in
// groups of up to MaxShare (Muri's packing_num, 4 in its runs), running their stages (data
// loading, GPU computation, communication: trace.Stages) interleaved. At every arrival and
// completion:
//   - order: the jobs that have arrived and not finished sit in one list kept from call to call
//     (arrivals join its tail), sorted stably by key: Muri-S the remaining GPU-time (of a job
//     that never ran, the trace's duration × GPUs), Muri-L the attained GPU-time (wall time
//     run × GPUs);
//   - choice: the list is walked on an empty cluster with YARN (YARNNodes); each job that lands
//     reserves room for itself and the next MaxShare-1 jobs of its GPU count, which are chosen
//     with it; the others wait;
//   - groups: while the chosen jobs need more GPUs than the cluster has, the jobs (then the
//     groups) of each GPU count are paired by a maximum-weight matching (matching.go), the
//     weight of a pair being how busy it keeps the four resources (usedRatio); pairs are merged,
//     in the matching's order, until the jobs fit, in up to MaxShare rounds;
//   - a group that runs slower than its jobs one after another is split again (autopack), and
//     the groups, in order of their smallest key, are walked on an empty cluster with YARN:
//     those that do not land wait;
//   - the groups that landed run, walked by GPU count, largest first: a running job left out is
//     preempted.
//
// The speed of a group is the interleaving model (groupTime): every job of a group runs at the
// group's iteration time. Under the lineage's per-event overhead, a job loses its whole group's
// start overheads at every event (policy.GroupOverhead).
//
// The lineage places every group afresh at every event; here a group stays on the GPUs of one of
// its running jobs and only the others move, each move a stop and a start at the same instant,
// which costs nothing without a restart cost but counts as a preemption where the lineage counts
// none.
type Muri struct {
	name  string
	aware bool // Muri-S: order by remaining GPU-time; Muri-L: by attained GPU-time

	runnable
	keys   []float64
	exec   []float64 // by Job.Idx: attained time in seconds (Muri-L)
	last   float64   // the previous call's time in seconds
	kind   []int32   // by Job.Idx: index into kinds
	kinds  []muriKind
	kindN  map[muriKind]int32
	times  map[[4]int32]float64 // groupTime by sorted kinds, -1 padded
	ratios map[[4]int32]float64 // usedRatio by kinds in order, -1 padded
	nodes  YARNNodes
	match  blossom
}

var (
	_ policy.Policy        = (*Muri)(nil)
	_ policy.Pacer         = (*Muri)(nil)
	_ policy.GroupOverhead = (*Muri)(nil)
)

// NewMuriS returns Muri's "multi-resource-blossom-same-gpu" (Muri-S).
func NewMuriS() *Muri { return &Muri{name: KeyMuriS, aware: true} }

// NewMuriL returns Muri's "multi-resource-blossom-same-gpu-unaware" (Muri-L).
func NewMuriL() *Muri { return &Muri{name: KeyMuriL} }

// Name returns the registry key.
func (m *Muri) Name() string { return m.name }

// EveryEvent asks to be called at every arrival and completion: every job is re-decided.
func (m *Muri) EveryEvent() bool { return true }

// GroupOverhead marks that a job loses its group's overheads at every event.
func (m *Muri) GroupOverhead() {}

// muriKind is what the interleaving model reads of a job: its iteration time alone (seconds, as
// the engine scales it) and its three stage times (seconds, unscaled, as the lineage reads them).
type muriKind struct {
	iter  float64
	stage [3]float64
}

// Interleaving overheads of groups of 2, 3 and 4 jobs (jobs.py itertime_overhead_list, divided
// by the 1.015 the lineage gives a job alone): variables, so that Go divides in float64 as Python.
var (
	muriOverhead = [3]float64{1.33, 1.5, 1.37}
	muriAlone    = 1.015
)

// Key returns job j's place in the order at time now.
func (m *Muri) Key(now time.Duration, j *policy.Job) float64 {
	if !m.aware {
		return m.exec[j.Idx] * float64(j.GPUs)
	}
	if !j.Started {
		// A job that never ran keeps the remaining time it arrived with: the trace's duration.
		return float64(j.Stages.Duration) / 1e6 / 1000 * float64(j.GPUs)
	}
	return j.RemIters(now) * j.Options[j.Fast].Excl.Seconds() * float64(j.GPUs)
}

// muriPack is a group: jobs by index, all of gpus GPUs.
type muriPack struct {
	gpus int
	jobs []int32
}

// muriSize holds the groups of one GPU count.
type muriSize struct {
	gpus  int
	packs []muriPack
}

// Schedule re-decides every job.
func (m *Muri) Schedule(s *policy.State) (policy.Plan, error) {
	var plan policy.Plan
	for len(m.keys) < len(s.Jobs) {
		m.keys = append(m.keys, 0)
		m.kind = append(m.kind, -1)
		m.exec = append(m.exec, 0)
	}
	n, err := m.update(s, m.name)
	if err != nil {
		return plan, err
	}
	for _, i := range m.list[n:] {
		if err := m.see(s.Jobs[i]); err != nil {
			return plan, err
		}
	}
	// Attained time is summed as the lineage sums it, in floating-point seconds from one event
	// to the next, so that jobs that ran as long in different spells tie, or not, as there.
	now := s.Now.Seconds()
	for _, i := range m.list[:n] {
		if s.Jobs[i].Running {
			m.exec[i] = m.exec[i] + now - m.last
		}
	}
	m.last = now
	for _, i := range m.list {
		m.keys[i] = m.Key(s.Now, s.Jobs[i])
	}
	slices.SortStableFunc(m.list, func(a, b int32) int { return cmpFloat(m.keys[a], m.keys[b]) })

	sh := s.Cluster.Shape()
	if sh.MaxShare > len(muriOverhead)+1 {
		return plan, fmt.Errorf("policy %s: max-share %d: the interleaving model runs groups of at most %d jobs", m.name, sh.MaxShare, len(muriOverhead)+1)
	}
	total, most := sh.Nodes*sh.GPUsPerNode, max(1, sh.MaxShare)
	sizes := m.choose(s, sh.Nodes, sh.GPUsPerNode, most)
	required := 0
	for _, sz := range sizes {
		required += len(sz.packs) * sz.gpus
	}
	for range most {
		sizes, required = m.pairRound(sizes, required, total, most)
		if required <= total {
			break
		}
	}
	groups := m.autopack(sizes, sh.Nodes, sh.GPUsPerNode)

	// The groups that run: the list, largest GPU count first, on an empty cluster; a group lands
	// at its first job's turn (the lineage places that job and gives its GPUs to the others).
	slices.SortStableFunc(m.list, func(a, b int32) int { return cmp.Compare(s.Jobs[b].GPUs, s.Jobs[a].GPUs) })
	in := make(map[int32]int, len(m.list))
	for g, p := range groups {
		for _, i := range p.jobs {
			in[i] = g
		}
	}
	landed := make([]int8, len(groups)) // 0 not tried, 1 landed, -1 did not
	var order []int
	m.nodes.Reset(sh.Nodes, sh.GPUsPerNode)
	for _, i := range m.list {
		g, ok := in[i]
		if !ok {
			continue
		}
		if landed[g] == 0 {
			landed[g] = -1
			if m.nodes.Take(s.Jobs[i].GPUs) {
				landed[g] = 1
				order = append(order, g)
			}
		}
	}
	var run []muriPack
	for _, g := range order {
		run = append(run, groups[g])
	}
	return plan, m.apply(s, run, &plan)
}

// see records job j's kind on its arrival and refuses what the model cannot run.
func (m *Muri) see(j *policy.Job) error {
	if j.Stages == nil {
		return fmt.Errorf("policy %s: job %d has no stage times (resource_time_0..2 of Muri's dialect), which the interleaving model needs", m.name, j.ID)
	}
	k := muriKind{iter: j.Options[j.Fast].Excl.Seconds(), stage: stageSeconds(j.Stages)}
	if k.stage[0]+k.stage[1]+k.stage[2] <= 0 {
		return fmt.Errorf("policy %s: job %d: its stage times are all 0", m.name, j.ID)
	}
	if m.kindN == nil {
		m.kindN = map[muriKind]int32{}
		m.times = map[[4]int32]float64{}
		m.ratios = map[[4]int32]float64{}
	}
	id, ok := m.kindN[k]
	if !ok {
		id = int32(len(m.kinds))
		m.kinds = append(m.kinds, k)
		m.kindN[k] = id
	}
	m.kind[j.Idx] = id
	return nil
}

// choose walks the list on an empty cluster: a job that lands takes itself and the next most-1
// jobs of its GPU count. It returns the chosen jobs, one group each, by GPU count in order of
// first appearance.
func (m *Muri) choose(s *policy.State, nodes, per, most int) []muriSize {
	var sizes []muriSize
	at := map[int]int{}
	for _, i := range m.list {
		g := s.Jobs[i].GPUs
		k, ok := at[g]
		if !ok {
			k = len(sizes)
			at[g] = k
			sizes = append(sizes, muriSize{gpus: g})
		}
		sizes[k].packs = append(sizes[k].packs, muriPack{gpus: g, jobs: []int32{i}})
	}
	chosen := make([]int, len(sizes))
	used := make(map[int32]bool)
	m.nodes.Reset(nodes, per)
	for _, i := range m.list {
		if used[i] {
			continue
		}
		k := at[s.Jobs[i].GPUs]
		if m.nodes.Take(s.Jobs[i].GPUs) {
			up := min(chosen[k]+most, len(sizes[k].packs))
			for _, p := range sizes[k].packs[chosen[k]:up] {
				used[p.jobs[0]] = true
			}
			chosen[k] = up
		}
	}
	for k := range sizes {
		sizes[k].packs = sizes[k].packs[:chosen[k]]
	}
	return sizes
}

// pairRound is one round of matching.py blossom_one_round: the groups of each GPU count are
// matched; while the jobs need more than total GPUs, each matched pair, in the order the
// matching lists them, merges into one group. It returns the new groups and GPUs needed.
func (m *Muri) pairRound(sizes []muriSize, required, total, most int) ([]muriSize, int) {
	type ready struct{ size, a, b int } // b < 0: a alone
	var rs []ready
	for k, sz := range sizes {
		packs := sz.packs
		// The weight of two groups depends on their kinds alone: it is worked out once for
		// each two classes of groups with the same kinds in the same order.
		class := make([]int, len(packs))
		var first []int // a group of each class
		seen := map[[4]int32]int{}
		for p, pk := range packs {
			key := [4]int32{-1, -1, -1, -1}
			for j, i := range pk.jobs {
				key[j] = m.kind[i]
			}
			c, ok := seen[key]
			if !ok {
				c = len(first)
				seen[key] = c
				first = append(first, p)
			}
			class[p] = c
		}
		nc := len(first)
		weight := make([]float64, nc*nc)
		for c1, p1 := range first {
			for c2, p2 := range first {
				if a, b := packs[p1].jobs, packs[p2].jobs; len(a)+len(b) <= most {
					weight[c1*nc+c2] = m.usedRatio(a, b)
				}
			}
		}
		mates := m.match.matchKinds(class, nc, weight)
		for u := 1; u <= len(packs); u++ {
			switch v := mates[u]; {
			case v > 0 && mates[v] == u:
				if v < u {
					rs = append(rs, ready{k, v - 1, u - 1})
				}
			default:
				rs = append(rs, ready{k, u - 1, -1})
			}
		}
	}
	var out []muriSize
	at := map[int]int{}
	for _, r := range rs {
		sz := sizes[r.size]
		k, ok := at[sz.gpus]
		if !ok {
			k = len(out)
			at[sz.gpus] = k
			out = append(out, muriSize{gpus: sz.gpus})
		}
		a := sz.packs[r.a]
		switch {
		case r.b < 0:
			out[k].packs = append(out[k].packs, a)
		case required <= total:
			out[k].packs = append(out[k].packs, a, sz.packs[r.b])
		default:
			merged := muriPack{gpus: a.gpus, jobs: slices.Concat(a.jobs, sz.packs[r.b].jobs)}
			out[k].packs = append(out[k].packs, merged)
			required -= sz.gpus
		}
	}
	return out, required
}

// autopack splits every group that runs slower than its jobs would one after another, sorts the
// groups by their smallest key and keeps those that land on an empty cluster with YARN.
func (m *Muri) autopack(sizes []muriSize, nodes, per int) []muriPack {
	type cand struct {
		p   muriPack
		key float64
	}
	var cs []cand
	for _, sz := range sizes {
		for _, p := range sz.packs {
			if len(p.jobs) > 1 {
				sum := 0.0
				for _, i := range p.jobs {
					sum += m.kinds[m.kind[i]].iter
				}
				if m.groupTime(p.jobs)/sum > 1 {
					for _, i := range p.jobs {
						cs = append(cs, cand{muriPack{gpus: p.gpus, jobs: []int32{i}}, m.keys[i]})
					}
					continue
				}
			}
			key := m.keys[p.jobs[0]]
			for _, i := range p.jobs[1:] {
				key = min(key, m.keys[i])
			}
			cs = append(cs, cand{p, key})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmpFloat(a.key, b.key) })
	m.nodes.Reset(nodes, per)
	var out []muriPack
	for _, c := range cs {
		if m.nodes.Take(c.p.gpus) {
			out = append(out, c.p)
		}
	}
	return out
}

// usedRatio is the weight of merging groups a and b (matching.py calc_used_ratio): the share of
// the four resources' time that the merged group's stages fill in one of its iterations.
func (m *Muri) usedRatio(a, b []int32) float64 {
	// The weight depends on the kinds in order (the sum's order), so it is kept by them.
	key := [4]int32{-1, -1, -1, -1}
	k := 0
	for _, g := range [][]int32{a, b} {
		for _, i := range g {
			key[k] = m.kind[i]
			k++
		}
	}
	if w, ok := m.ratios[key]; ok {
		return w
	}
	used := 0.0
	for _, id := range key[:k] {
		s := m.kinds[id].stage
		used += s[0] + s[1] + s[2]
	}
	w := used / (m.groupTime(slices.Concat(a, b)) * 4)
	m.ratios[key] = w
	return w
}

// groupTime is the iteration time of a group of jobs (given by index) that interleave their
// stages (matching.py calc_iteration_time, best ordering): a job alone runs at its own iteration
// time; a group at the shortest cycle over the orders of its jobs (cycle), times the lineage's
// overhead for its size.
func (m *Muri) groupTime(jobs []int32) float64 {
	if len(jobs) == 1 {
		return m.kinds[m.kind[jobs[0]]].iter
	}
	key := [4]int32{-1, -1, -1, -1}
	for k, i := range jobs {
		key[k] = m.kind[i]
	}
	slices.Sort(key[:len(jobs)])
	if t, ok := m.times[key]; ok {
		return t
	}
	ks := make([]muriKind, len(jobs))
	for k, id := range key[:len(jobs)] {
		ks[k] = m.kinds[id]
	}
	t := interleave(ks)
	m.times[key] = t
	return t
}

// interleave is the iteration time of 2 to 4 jobs of kinds ks interleaving their stages.
func interleave(ks []muriKind) float64 {
	best := -1.0
	permute(ks, 0, func(p []muriKind) {
		if t := cycle(p); best < 0 || t < best {
			best = t
		}
	})
	if len(ks) == 2 {
		// Two jobs may also run each one's first stage beside the other's last two.
		a, b := ks[0].stage, ks[1].stage
		if t := max(a[0], b[1]+b[2]) + max(b[0], a[1]+a[2]); t < best {
			best = t
		}
	}
	return best * (muriOverhead[len(ks)-2] / muriAlone)
}

// GroupIterTime is the interleaving model's iteration time, in seconds, of 2 to 4 jobs sharing
// their GPUs whose stages (data loading, GPU computation, communication) take stages seconds per
// iteration: the time muri-s and muri-l run such a group at (the lineage's overhead for the
// group's size included).
func GroupIterTime(stages ...[3]float64) float64 {
	if len(stages) < 2 || len(stages) > 4 {
		panic(fmt.Sprintf("schedulers: GroupIterTime of %d jobs (want 2 to 4)", len(stages)))
	}
	ks := make([]muriKind, len(stages))
	for k, st := range stages {
		ks[k].stage = st
	}
	return interleave(ks)
}

// permute calls f with every order of ks (in place).
func permute(ks []muriKind, k int, f func([]muriKind)) {
	if k == len(ks) {
		f(ks)
		return
	}
	for i := k; i < len(ks); i++ {
		ks[k], ks[i] = ks[i], ks[k]
		permute(ks, k+1, f)
		ks[k], ks[i] = ks[i], ks[k]
	}
}

// cycle is the period of jobs p taking turns on the lineage's four resource slots in that order
// (matching.py, multi_resource 4 with three stage times): fi[i] is when slot step i ends, each
// step waiting for the stage the job due in it runs there after its previous stage; the period
// is read once two successive steps a cycle apart agree within 0.1%, else after two cycles.
func cycle(p []muriKind) float64 {
	var fi [9]float64
	n := len(p)
	for i := range 8 {
		if (i+1)%4 < n {
			fi[i+1] = max(fi[i+1], fi[i]+p[(i+1)%4].stage[2])
		}
		if (i+2)%4 < n {
			fi[i+1] = max(fi[i+1], fi[i]+p[(i+2)%4].stage[1])
		}
		if i > 0 && (i+3)%4 < n {
			fi[i+1] = max(fi[i+1], fi[i-1]+p[(i+3)%4].stage[0])
		}
		if i >= 4 && isClose(fi[i+1]-fi[i-3], fi[i]-fi[i-4], 1e-3) {
			if t := fi[i+1] - fi[i-3]; t > 0 {
				return t
			}
			break
		}
	}
	return fi[8] - fi[4]
}

// Slowdown is how much running job j slows in its group: the group's iteration time over j's own.
func (m *Muri) Slowdown(j *policy.Job, partners []*policy.Job) float64 {
	jobs := make([]int32, 0, 1+len(partners))
	jobs = append(jobs, j.Idx)
	for _, q := range partners {
		jobs = append(jobs, q.Idx)
	}
	return m.groupTime(jobs) / j.Options[j.Opt].Excl.Seconds()
}

// apply turns the groups that run into plan. A group stays on the GPUs of one of its running
// jobs that no earlier group kept (the first such job in group order); the jobs there that are
// not in it stop, and its other jobs join it. A group with no such GPUs starts on the
// lowest-numbered idle GPUs once the stopped jobs have left.
func (m *Muri) apply(s *policy.State, run []muriPack, plan *policy.Plan) error {
	cl := s.Cluster
	claimed := make(map[int]bool)
	home := make([][]int, len(run))
	for g, p := range run {
		for _, i := range p.jobs {
			j := s.Jobs[i]
			if j.Running && !claimed[j.On[0]] {
				home[g] = slices.Clone(j.On)
				for _, x := range j.On {
					claimed[x] = true
				}
				break
			}
		}
	}
	stay := make(map[int32]bool)
	for g, p := range run {
		for _, i := range p.jobs {
			if j := s.Jobs[i]; j.Running && home[g] != nil && slices.Equal(j.On, home[g]) {
				stay[i] = true
			}
		}
	}
	for _, j := range s.Running() {
		if stay[j.Idx] {
			continue
		}
		if err := cl.Release(j.ID); err != nil {
			return fmt.Errorf("policy %s: preempt job %d: %w", m.name, j.ID, err)
		}
		plan.Stop = append(plan.Stop, j.ID)
	}
	for g, p := range run {
		on := home[g]
		if on == nil {
			on = cl.AppendIdle(nil, p.gpus)
			if len(on) < p.gpus {
				return fmt.Errorf("policy %s: %d idle GPUs for a group of %d (the walk's count of free GPUs is off)", m.name, len(on), p.gpus)
			}
		}
		// The group's jobs already on its GPUs: those that stay, then those started before.
		var there []trace.JobID
		for _, i := range p.jobs {
			if stay[i] {
				there = append(there, s.Jobs[i].ID)
			}
		}
		for _, i := range p.jobs {
			if stay[i] {
				continue
			}
			j := s.Jobs[i]
			if err := cl.Place(j.ID, on, j.Options[j.Fast].Mem); err != nil {
				return fmt.Errorf("policy %s: job %d: %w", m.name, j.ID, err)
			}
			pl := policy.Placement{Job: j.ID, GPUs: on, Opt: j.Fast, Partners: slices.Clone(there)}
			if s.Env.Explain {
				pl.Reason = "runs alone on its GPUs"
				if len(p.jobs) > 1 {
					pl.Reason = fmt.Sprintf("in a group of %d interleaving their stages", len(p.jobs))
				}
			}
			plan.Start = append(plan.Start, pl)
			there = append(there, j.ID)
		}
	}
	return nil
}
