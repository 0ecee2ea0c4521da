package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/sharebench/sharebench/trace"
)

// placeFunc finds a placement for j on the tentative cluster; ok is false when none exists now.
type placeFunc func(p *placer, j *Job) (pl Placement, ok bool, err error)

// greedy is the authors' scheduling loop (SPEC.md §4.3, §5.8): walk the runnable jobs in priority
// order, place each one that is not running, and optionally preempt lower-priority running jobs
// for one that does not fit. There is no head-of-line blocking: a job that cannot be placed is
// skipped and the jobs behind it are tried (greedy backfill).
//
// The walk skips work it can prove futile, without changing any decision:
//   - once no running job ranks below the current one, nothing can be preempted any more, and
//     only jobs that ask for at most the free GPUs are walked (the pending jobs are indexed by
//     GPU count);
//   - jobs of one family (same options, same GPU count) met in key order can only be harder to
//     place than the first one that failed, as long as the cluster has not changed since (for the
//     share check, t_con − t_seq is non-decreasing in the pending job's remaining time), so they
//     are skipped, and the walk ends once every family still ahead has failed.
type greedy struct {
	name      string
	place     placeFunc
	exclusive bool // the placement never shares, so a job needs idle GPUs
	preempt   bool
	tentative bool // victims: preempt only if the job then fits (else the authors' behaviour)
	mps       bool
	// exhaustive walks every pending job with no shortcut: the same decisions, slower; tests
	// use it to check the shortcuts.
	exhaustive bool
	p          placer

	// Per-call walk state.
	s       *State
	plan    *Plan
	dead    []uint64 // epoch at which each family last failed
	left    []int32  // pending jobs of each family not yet walked
	pos     []int    // next index in each State.BySize list
	epoch   uint64
	alive   int      // families with jobs ahead, not failed this epoch, fitting the free GPUs
	running []ranked // running jobs not preempted; once heaped, the items of heap
	low     []ranked // running jobs popped from the heap that cannot be preempted, lowest first
	runKey  func(*Job) Key
	ranked  bool // running holds the running jobs (built on first need)
	heaped  bool
	heap    binHeap[ranked] // running jobs, lowest priority on top, so victims come out in order
	last    int             // before heaping: index in running of the lowest-priority job
	taken   []ranked
	victims []*victim
	ahead   []*victim // victims not yet walked again, by rank
}

type ranked struct {
	j *Job
	k Key
}

// minVictimIters is the authors' filter: only running jobs with more iterations left than this are
// preempted (schedulers.py jobs_placement).
const minVictimIters = 100

func (g *greedy) mode() string {
	if g.mps {
		return "mps"
	}
	return "timeslice"
}

// victim is a job preempted in this call; the walk reaches it again at its rank and may place it
// back, which cancels the preemption when the placement is the same.
type victim struct {
	ranked
	cancelled bool
}

// free returns the GPUs a job could use without preempting: idle ones, or ones with room.
func (g *greedy) free() int {
	if g.exclusive {
		return g.s.Cluster.Idle()
	}
	return g.s.Cluster.Open()
}

// below reports whether a running job ranks below (k, j) and so could be preempted for it.
func (g *greedy) below(k Key, j *Job) bool {
	if !g.ranked {
		g.rank()
	}
	var r ranked
	switch {
	case len(g.low) > 0:
		r = g.low[0]
	case g.heaped && g.heap.len() > 0:
		r = g.heap.top()
	case !g.heaped && g.last >= 0:
		r = g.running[g.last]
	default:
		return false
	}
	return Compare(r.k, r.j, k, j) > 0
}

// rank collects the running jobs with their keys and finds the lowest-ranked one. Sorting them
// all waits until a victim is needed.
func (g *greedy) rank() {
	g.ranked = true
	for _, j := range g.s.Running {
		g.running = append(g.running, ranked{j, g.runKey(j)})
		if k := len(g.running) - 1; g.last < 0 || Compare(g.running[k].k, j, g.running[g.last].k, g.running[g.last].j) > 0 {
			g.last = k
		}
	}
}

// run walks the pending jobs in order (and, when preempting, the running jobs ranked by runKey)
// and fills plan.
func (g *greedy) run(s *State, runKey func(*Job) Key, plan *Plan) error {
	g.p.reset(s)
	g.s, g.plan = s, plan
	nf := len(s.Families)
	g.dead = resize(g.dead, nf)
	g.left = resize(g.left, nf)
	g.pos = resize(g.pos, len(s.Sizes))
	copy(g.left, s.Families)
	g.epoch = 1
	g.victims, g.ahead = g.victims[:0], g.ahead[:0]
	g.running, g.low, g.last, g.heaped, g.ranked = g.running[:0], g.low[:0], -1, false, false
	g.runKey = runKey
	g.alive = g.families()
	// Phase 1 (preemptive policies): every job that some running job ranks below may preempt,
	// so walk the whole queue in order while that holds.
	pi := 0
	for (g.preempt || g.exhaustive) && pi < len(s.Pending) {
		j := s.Pending[pi]
		if len(g.ahead) > 0 && Compare(g.ahead[0].k, g.ahead[0].j, j.K, j) < 0 {
			if err := g.walkVictim(); err != nil {
				return err
			}
			continue
		}
		// A job that fits is placed whatever its rank; the running jobs are ranked only when
		// one does not fit and might preempt.
		if j.GPUs > g.free() || g.dead[j.Family] == g.epoch {
			if g.preempt && !g.below(j.K, j) && !g.exhaustive {
				break
			}
		}
		pi++
		g.pos[j.Size]++
		if err := g.walkPending(j); err != nil {
			return err
		}
	}
	for g.exhaustive && len(g.ahead) > 0 {
		if err := g.walkVictim(); err != nil {
			return err
		}
	}
	// Phase 2: nothing ranks below any more; walk only jobs that fit in the free GPUs, merging
	// the per-size lists (and the victims) in priority order.
	for !g.exhaustive {
		if g.alive <= 0 && len(g.ahead) == 0 {
			break
		}
		free := g.free()
		var best *Job
		bi := -1
		for i, size := range s.Sizes {
			if size > free {
				break
			}
			l := s.BySize[i]
			for g.pos[i] < len(l) && g.dead[l[g.pos[i]].Family] == g.epoch {
				g.skip(l[g.pos[i]])
				g.pos[i]++
			}
			if g.pos[i] < len(l) {
				if c := l[g.pos[i]]; best == nil || Compare(c.K, c, best.K, best) < 0 {
					best, bi = c, i
				}
			}
		}
		if len(g.ahead) > 0 && (best == nil || Compare(g.ahead[0].k, g.ahead[0].j, best.K, best) < 0) {
			if err := g.walkVictim(); err != nil {
				return err
			}
			continue
		}
		if best == nil {
			break
		}
		g.pos[bi]++
		if err := g.walkPending(best); err != nil {
			return err
		}
	}
	g.finish()
	return nil
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// skip accounts for a pending job passed over without an attempt.
func (g *greedy) skip(j *Job) { g.left[j.Family]-- }

// walkPending tries one pending job.
func (g *greedy) walkPending(j *Job) error {
	f := j.Family
	g.left[f]--
	if g.dead[f] == g.epoch && !g.exhaustive {
		return nil
	}
	if g.left[f] == 0 && g.s.FamilyGPUs[f] <= g.free() {
		g.alive--
	}
	ok, changed, err := g.attempt(j, j.K, nil)
	if err != nil {
		return err
	}
	if !ok && !changed {
		g.dead[f] = g.epoch
		if g.left[f] > 0 && g.s.FamilyGPUs[f] <= g.free() {
			g.alive--
		}
	}
	return nil
}

// walkVictim tries to place back the next victim of this call.
func (g *greedy) walkVictim() error {
	v := g.ahead[0]
	g.ahead = g.ahead[1:]
	_, _, err := g.attempt(v.j, v.k, v)
	return err
}

// attempt places j if it fits, else preempts lower-ranked running jobs for it when allowed.
// changed reports a change of the cluster (a new epoch begins).
func (g *greedy) attempt(j *Job, jk Key, v *victim) (ok, changed bool, err error) {
	cl := g.s.Cluster
	if j.GPUs <= g.free() {
		if ok, err = g.try(j, v); err != nil {
			return false, false, err
		}
	}
	if !ok && g.preempt && g.below(jk, j) {
		// Preempt from the lowest priority upward, retrying after each victim. Jobs too close
		// to their end, and jobs that a placement of this pass shares GPUs with (its share check
		// assumed they keep running), are set aside: they stay running and rank lowest.
		if !g.heaped {
			g.heaped = true
			g.heap = binHeap[ranked]{items: g.running, less: func(x, y ranked) bool { return Compare(x.k, x.j, y.k, y.j) > 0 }}
			g.heap.init()
		}
		mark := cl.Mark()
		taken := g.taken[:0]
		for !ok && g.heap.len() > 0 {
			r := g.heap.top()
			if Compare(r.k, r.j, jk, j) <= 0 {
				break
			}
			g.heap.pop()
			if r.j.RemIters(g.s.Now) <= minVictimIters || g.hostsPlanned(r.j) {
				g.low = append(g.low, r)
				continue
			}
			if err := cl.Release(r.j.ID); err != nil {
				return false, false, fmt.Errorf("policy %s: preempt job %d: %w", g.name, r.j.ID, err)
			}
			taken = append(taken, r)
			if j.GPUs <= g.free() {
				if ok, err = g.try(j, v); err != nil {
					return false, false, err
				}
			}
		}
		if !ok && g.tentative {
			cl.Rollback(mark)
			for _, r := range taken {
				g.heap.push(r)
			}
			taken = taken[:0]
		} else {
			cl.Commit(mark)
		}
		g.taken = taken
		for _, r := range taken {
			nv := &victim{ranked: r}
			g.victims = append(g.victims, nv)
			g.plan.Stop = append(g.plan.Stop, nv.j.ID)
			at, _ := slices.BinarySearchFunc(g.ahead, nv, func(a, b *victim) int { return Compare(a.k, a.j, b.k, b.j) })
			g.ahead = slices.Insert(g.ahead, at, nv)
		}
		changed = len(taken) > 0
	}
	if ok || changed {
		g.epoch++
		g.alive = g.families()
	}
	return ok, changed, nil
}

// families counts the families with pending jobs not yet walked that fit in the free GPUs.
func (g *greedy) families() int {
	n, free := 0, g.free()
	for f, c := range g.left {
		if c > 0 && g.s.FamilyGPUs[f] <= free {
			n++
		}
	}
	return n
}

// hostsPlanned reports whether a job placed earlier in this call shares a GPU with running job r.
func (g *greedy) hostsPlanned(r *Job) bool {
	if g.exclusive {
		return false
	}
	for _, gpu := range r.On {
		for _, id := range g.s.Cluster.Jobs(gpu) {
			if _, ok := g.p.planned[id]; ok && id != r.ID {
				return true
			}
		}
	}
	return false
}

// finish drops cancelled preemptions from the plan.
func (g *greedy) finish() {
	if !slices.ContainsFunc(g.victims, func(v *victim) bool { return v.cancelled }) {
		return
	}
	cancelled := map[trace.JobID]bool{}
	for _, v := range g.victims {
		cancelled[v.j.ID] = v.cancelled
	}
	g.plan.Stop = slices.DeleteFunc(g.plan.Stop, func(id trace.JobID) bool { return cancelled[id] })
}

// try places j if it fits now, recording the placement in plan. A preempted job placed again on
// exactly its old GPUs and sub-batch is not preempted at all (the authors' jobs_execute cancels
// the preemption).
func (g *greedy) try(j *Job, v *victim) (bool, error) {
	s, plan := g.s, g.plan
	pl, ok, err := g.place(&g.p, j)
	if err != nil {
		return false, fmt.Errorf("policy %s: job %d: %w", g.name, j.ID, err)
	}
	if !ok {
		return false, nil
	}
	o := j.Options[pl.Opt]
	if err := s.Cluster.Place(j.ID, pl.GPUs, o.Mem); err != nil {
		return false, fmt.Errorf("policy %s: job %d: %w", g.name, j.ID, err)
	}
	pl.Job = j.ID
	g.p.planned[j.ID] = partner{j, pl.Opt, j.RemIters(s.Now) * o.Excl.Seconds()}
	if v != nil && pl.Opt == j.Opt && sameSet(pl.GPUs, j.On) {
		// Back where it was: the job keeps running as before.
		v.cancelled = true
		g.p.planned[j.ID] = partner{j, j.Opt, j.RemTime(s.Now).Seconds()}
		return true, nil
	}
	plan.Start = append(plan.Start, pl)
	return true, nil
}

// sameSet reports whether a holds the same GPUs as sorted (a job's sorted GPU list).
func sameSet(a, sorted []int) bool {
	if len(a) != len(sorted) {
		return false
	}
	for _, g := range a {
		if _, found := slices.BinarySearch(sorted, g); !found {
			return false
		}
	}
	return true
}

// yarnPlace places a job exclusively with the YARN rule at its fastest sub-batch.
func yarnPlace(p *placer, j *Job) (Placement, bool, error) {
	gpus := p.yarn(j)
	if gpus == nil {
		return Placement{}, false, nil
	}
	pl := Placement{GPUs: gpus, Opt: j.Fast}
	if p.s.Env.Explain {
		pl.Reason = "exclusive (yarn)"
	}
	return pl, true, nil
}

// remKey is the SJF key of a pending job: its remaining exclusive time at its fastest sub-batch.
func remKey(j *Job) Key { return Key{A: j.P.Rem * j.Options[j.Fast].Excl.Seconds()} }

// runRemKey is the SJF key of a running job: its remaining time at its current iteration time.
func runRemKey(now time.Duration) func(*Job) Key {
	return func(j *Job) Key { return Key{A: j.RemTime(now).Seconds()} }
}

func submitKey(*Job) Key { return Key{} }

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
