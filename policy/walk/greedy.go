package walk

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// greedy is the authors' scheduling loop (docs/paper.md §4.3, §5.8): walk the runnable jobs in priority
// order, place each one that is not running, and optionally preempt lower-priority running jobs
// for one that does not fit. There is no head-of-line blocking: a job that cannot be placed is
// skipped and the jobs behind it are tried (greedy backfill).
//
// The walk skips work it can prove futile, without changing any decision:
//   - once no running job ranks below the current one, nothing can be preempted any more, and
//     only jobs that ask for at most the free GPUs are walked;
//   - jobs of one family (same options, same GPU count) met in key order can only be harder to
//     place than the first one that failed (for the share check, t_con − t_seq is non-decreasing
//     in the pending job's remaining time), as long as no job was preempted since: placements
//     only take idle GPUs, room, memory and share partners away, so a family that failed stays
//     failed until a preemption (or, when sharing and preempting, any change: see attempt), and
//     its jobs are skipped. With YARN placement, whether a job
//     fits depends on its GPU count alone, and a larger job never fits where a smaller one does
//     not, so a failure rules out every job of as many GPUs or more.
//
// With YARN placement and the authors' victims, a call that follows a walk with only time and
// arrivals in between is answered without a walk where that provably changes nothing but the
// arrivals: with fixed keys (settled.go), and with remaining times as keys (sjf, settled_rem.go).
//
// To skip a family in one step, the walk takes the pending jobs family by family (State.ByFamily),
// merging the families' next jobs in priority order with a heap; a family that fails leaves the
// heap until it may fit again.
type greedy struct {
	d         *policy.Greedy
	name      string
	place     placeFunc
	sc        shortcutSet
	stats     *Stats
	movedCap  int  // see note
	checkLazy bool // see lazyvictims.go
	exclusive bool // the placement never shares, so a job needs idle GPUs
	// bySize: whether a job can be placed depends only on its GPU count, and not on more than
	// a smaller job (YARN placement).
	bySize bool
	// timeless: keys do not change with time (only when the policy says so, see rekey and
	// changed), and neither do placements; then a walk that changed nothing is not repeated
	// until something changes.
	timeless  bool
	still     bool // the last walk changed nothing
	pending   int  // pending jobs at the last walk
	preempt   bool
	tentative bool // victims: preempt only if the job then fits (else the authors' behaviour)
	p         placer
	// keepFails (without preemption) carries failures across calls: fails[f] is family f's
	// last failed job and the time before which it fails again (placer.wait) unless a GPU
	// changed since in a way a placement cannot (see note). A failure rules out the family's
	// jobs from that one on, as within a call (see walk).
	keepFails bool
	fails     []famFail
	// moved logs those GPUs; moved[i] is entry logBase+i, and famFail.pos the first entry
	// after a failure.
	moved   []int
	logBase int

	// Per-call walk state.
	s    *policy.State
	plan *policy.Plan
	out  policy.Plan // the plan of schedule
	dead []uint64    // epoch at which each family last failed (epochs count on across calls)
	// failed is, with bySize, the fewest GPUs a job asked for that failed in this epoch: every
	// job of as many GPUs or more fails too.
	failed int
	// The walk scans State.Pending (scan is the next position, skipped counts the jobs it
	// skipped since it last took one) until it merges the families (merging).
	scan    policy.Pos
	skipped int
	merging bool
	// soon counts the walks left that merge at their first skip (see soonWalks); soonNow: this
	// walk does.
	soon    int
	soonNow bool
	phase1  bool          // some running job may still rank below the walk (see walk)
	cur     []policy.Pos  // each family's next job in State.ByFamily, unless the family lags (below)
	head    []*policy.Job // the job at cur, nil past the end or for a family merge left out
	headK   []ranked      // head's key, submission and ID, for the heap's comparisons
	headI   []int32       // head's Idx, for the heap's comparisons when the queues are kept by index
	heads   binHeap[int32]
	// byKey and byIdx are the heap's orders: by headK, or by index for queues kept by index.
	byKey, byIdx func(a, b int32) bool
	// The walk position: the last job walked (pending or victim) and its key. A family that
	// failed keeps its position until the cluster changes; it then lags behind the walk and
	// jumps ahead when it reaches the heap's top.
	walked bool
	wk     policy.Key
	wj     *policy.Job
	epoch  uint64
	// rs holds the running jobs, lowest priority on top; victims come out of it in order (take).
	// It persists across calls (see sync).
	rs      runSet
	stopped []*policy.Job // the previous plan's victims: out of rs once they stopped
	rekeyed []*policy.Job // running jobs whose key the policy changed since the last sync
	// low holds running jobs popped from rs that cannot be preempted, lowest first; only low[0]
	// is read (below), and a bulk step over fixEarly's range adds only its first job.
	low     []ranked
	runKey  func(*policy.Job) policy.Key // the declaration's Rank at the call's time
	drain   bool                         // runKey is remaining time (runSet.drain)
	starts  []policy.Placement           // the previous plan's, for reuse
	stops   []trace.JobID                // the previous plan's, for reuse
	victims []victim
	// ahead holds the victims not yet walked again: each attempt's, which it took lowest rank
	// first, as a run of victims that the walk takes from its end; best is the run whose next
	// victim ranks first (-1: none).
	ahead []vrun
	best  int
	settledState
	remOn bool // the shortcut of settled_rem.go applies to this policy
	rem   remState
	// lazy: victims may be preempted on paper (lazyvictims.go); lz holds them.
	lazy bool
	lz   lazyState
}

type famFail struct {
	j     *policy.Job // nil: none
	until time.Duration
	pos   int
}

// maxMoved is how many changed GPUs a kept failure is checked against before it is tried again
// instead.
const maxMoved = 64

type ranked struct {
	j *policy.Job
	k policy.Key
	// at is, in a runSet's items, when k was exact, or in a drain set's a bound on the job's
	// finish time (finishBound). Copies of entries that runSet.lowest hands out (victims, low,
	// the rem shortcut's wait) keep their item's at, which nothing reads.
	at  time.Duration
	sub time.Duration // j.Submit and j.ID, for comparisons without loading j
	id  trace.JobID
}

const minVictimIters = policy.MinVictimIters

// victim is a job preempted in this call; the walk reaches it again at its rank and may place it
// back, which cancels the preemption when the placement is the same.
type victim struct {
	ranked
	cancelled bool
	lazy      bool // still on its GPUs (lazyvictims.go)
}

// remIters returns RemIters of running job j at the call's time, which runSet.lowest has mostly
// just computed with j's key (see docs/simulator.md, "Speed").
func (g *greedy) remIters(j *policy.Job) float64 {
	if g.rs.lastJ == j {
		return g.rs.lastIters
	}
	return j.RemIters(g.s.Now)
}

// addVictim appends victim r, lazy or not.
func (g *greedy) addVictim(r *ranked, lazy bool) {
	g.victims = append(g.victims, victim{})
	v := &g.victims[len(g.victims)-1]
	v.j, v.k, v.at, v.sub, v.id, v.lazy = r.j, r.k, r.at, r.sub, r.id, lazy
}

// free returns the GPUs a job could use without preempting: idle ones (lazy victims' among
// them), or ones with room.
func (g *greedy) free() int {
	if g.exclusive {
		return g.s.Cluster.Idle() + g.lz.free
	}
	return g.s.Cluster.Open()
}

// below reports whether a running job ranks below (k, j) and so could be preempted for it.
//
// Jobs set aside (low) rank below every job left in rs, and low[0] answers without rs, unless
// tentative victims were put back: they may rank below low[0].
func (g *greedy) below(k policy.Key, j *policy.Job) bool {
	var r *ranked
	if len(g.low) > 0 && !g.tentative {
		r = &g.low[0]
	} else if r = g.rs.lowest(g.runKey); r == nil {
		return false
	}
	return policy.Compare(r.k, r.j, k, j) > 0
}

// sync brings rs up to date with s: jobs that finished or were preempted leave it, jobs the
// engine re-rated (started ones among them) or the policy re-keyed get their exact key. Every
// Schedule of a preemptive policy on greedy calls it (run does), since the engine hands each
// change to one call only. A live run's measurements move remaining times either way, which
// the bounds in rs do not allow for: it is rebuilt.
func (g *greedy) sync(s *policy.State) {
	runKey := g.runKey
	g.rs.fixed, g.rs.drain = g.timeless, g.drain
	g.rs.grow(len(s.Jobs))
	if s.Resync && !g.timeless {
		g.rs.clear()
		for _, j := range s.Running() {
			g.rs.put(entry(j, runKey(j), s.Now))
		}
		g.stopped, g.rekeyed = g.stopped[:0], g.rekeyed[:0]
		return
	}
	for _, id := range s.Finished {
		if j := s.Lookup(id); j != nil {
			g.rs.remove(j)
		}
	}
	for _, j := range g.stopped {
		if !j.Running {
			g.rs.remove(j)
		}
	}
	g.stopped = g.stopped[:0]
	for k, l := range [2][]*policy.Job{s.Rerated, g.rekeyed} {
		for _, j := range l {
			if k == 0 && g.rs.fixed && j.Running && g.rs.where[j.Idx] >= 0 {
				// A fixed key changes only when the policy re-keys the job (the second list):
				// a new rate leaves the job where it is (the lineage's per-event overhead re-rates
				// every running job at every event).
				continue
			}
			if j.Running {
				g.rs.put(entry(j, runKey(j), s.Now))
			} else {
				g.rs.remove(j)
			}
		}
	}
	g.rekeyed = g.rekeyed[:0]
}

// rekey notes a running job whose key the policy changed (a Tiresias demotion).
func (g *greedy) rekey(j *policy.Job) { g.rekeyed = append(g.rekeyed, j) }

// changed notes a change the walk cannot see in its inputs (pending jobs re-keyed).
func (g *greedy) changed() { g.still, g.settled, g.rem.on = false, false, false }

// newGreedy returns the fast walk of d with the shortcuts sc.
func newGreedy(d *policy.Greedy, sc shortcutSet, o options) *greedy {
	g := &greedy{d: d, name: d.Name, place: placeFor(d, sc.placement), sc: sc, stats: o.stats,
		movedCap: o.movedCap, checkLazy: o.checkLazy, exclusive: sc.exclusive, bySize: sc.bySize,
		timeless: sc.timeless, drain: sc.drain, lazy: sc.lazy, keepFails: sc.keepFails,
		preempt: d.Preempt, tentative: d.Victims == policy.VictimsTentative}
	if g.stats == nil {
		g.stats = &Stats{}
	}
	g.p.ix.on = sc.index
	g.p.anyShare = sc.placement == placeFirstFit
	if g.drain {
		g.runKey = func(j *policy.Job) policy.Key { k, _ := remKeyIters(j, g.s.Now); return k }
	} else if d.Rank != nil {
		g.runKey = func(j *policy.Job) policy.Key { return d.Rank(g.s.Now, j) }
	}
	return g
}

// schedule makes a call's plan, in memory of the last call's plan: the engine is done with a
// plan before it calls again.
func (g *greedy) schedule(s *policy.State) (policy.Plan, error) {
	g.out = policy.Plan{Notes: g.out.Notes[:0], Rekey: g.out.Rekey[:0]}
	plan := &g.out
	h := g.d.Hooks
	if h != nil {
		reranked, walk := h.Before(s, plan)
		for _, j := range reranked {
			g.rekey(j)
		}
		if len(plan.Rekey) > 0 {
			g.changed()
		}
		if !walk {
			if g.preempt {
				// The engine hands each change to one call only: take them in now.
				g.s = s
				g.sync(s)
			}
			return *plan, nil
		}
	}
	if err := g.run(s, plan); err != nil {
		return *plan, err
	}
	if h != nil {
		h.After(s, plan)
	}
	return *plan, nil
}

// run walks the pending jobs in order (and, when preempting, the running jobs ranked by runKey)
// and fills plan.
func (g *greedy) run(s *policy.State, plan *policy.Plan) error {
	// The engine is done with the previous plan: its starts and stops reuse the memory.
	if plan.Start == nil && plan.Stop == nil {
		plan.Start, plan.Stop = g.starts[:0], g.stops[:0]
		defer func() { g.starts, g.stops = plan.Start, plan.Stop }()
	}
	g.p.reset(s)
	if g.keepFails {
		g.note(s)
	}
	g.s, g.plan = s, plan
	g.victims, g.ahead, g.best = g.victims[:0], g.ahead[:0], -1
	g.low = g.low[:0]
	// A walk that changed nothing changes nothing later either while the jobs, their keys and
	// the cluster stay as they were: only time passes, which can only set more running jobs
	// aside as too close to their end, so no job fits that did not (see timeless).
	still := g.still && g.timeless && len(s.Finished) == 0 && len(s.Rerated) == 0 &&
		len(g.rekeyed) == 0 && s.Pending.Len() == g.pending
	quiet := g.quiet(s)
	fix := g.settled && len(s.Finished) > 0 && len(g.rekeyed) == 0 && !s.Resync
	remQuiet := g.remBegin(s)
	g.early = false
	if g.preempt {
		g.sync(s)
	}
	if still {
		g.settle(s)
		return nil
	}
	var arr []*policy.Job
	last := false // settled (settled.go), and the arrivals rank below every other job
	if quiet {
		arr, last = g.arrivals(s)
	}
	var err error
	switch {
	case last:
		// Only the arrivals can change anything.
		g.stats.Settled++
		err = g.placeArrivals(arr)
	case quiet && g.arrivalsFail(s), remQuiet && g.remSkip(s):
		// No arrival fits where the walk would try it, or (sjf) remSkip placed them: nothing else.
		g.stats.Settled++
	default:
		if g.preempt {
			g.rs.start(s.Now, g.runKey)
		}
		if fix {
			g.fixEarly(s)
		}
		err = g.walk()
	}
	if err != nil {
		return err
	}
	g.remSettle(s)
	g.settle(s)
	g.finish()
	g.still, g.pending = len(g.plan.Start) == 0 && len(g.plan.Stop) == 0, s.Pending.Len()
	return nil
}

// walk walks the pending jobs in order, and the victims at their rank, attempting each, but for
// those it can tell fail. While some running job ranks below the next job, every
// job may preempt and is walked (phase 1); from then on nothing can be preempted any more (the
// lowest running job only rises during a call, the walk only descends), so only jobs that fit in
// the free GPUs are walked.
func (g *greedy) walk() error {
	if nf := len(g.s.ByFamily); g.keepFails && len(g.fails) < nf {
		g.fails = append(g.fails, make([]famFail, nf-len(g.fails))...)
	}
	if nf := len(g.s.ByFamily); len(g.dead) < nf {
		g.dead = append(g.dead, make([]uint64, nf-len(g.dead))...)
		g.cur = make([]policy.Pos, nf)
		g.head = make([]*policy.Job, nf)
		g.headK = make([]ranked, nf)
		g.headI = make([]int32, nf)
	}
	g.lz.drop()
	if g.byKey == nil {
		// Compare on copies of the heads' keys (b ranks below a): the comparisons read no job.
		g.byKey = func(a, b int32) bool { return lower(&g.headK[b], &g.headK[a]) }
		// Pending jobs kept by index have the zero key: their order is that of their indices.
		g.byIdx = func(a, b int32) bool { return g.headI[a] < g.headI[b] }
	}
	if g.heads.less = g.byKey; g.s.Pending.KeptByIndex() {
		g.heads.less = g.byIdx
	}
	g.walked, g.merging, g.skipped, g.scan = false, false, 0, policy.Pos{}
	g.soonNow = g.soon > 0
	if g.soonNow {
		g.soon--
	}
	g.revive()
	g.phase1 = g.preempt
	for {
		j := g.next()
		if g.aheadOf(j) {
			if err := g.walkVictim(); err != nil {
				return err
			}
			continue
		}
		if j == nil {
			return nil
		}
		// A job that fits is placed whatever its rank; the running jobs are ranked only when
		// one does not fit and might preempt.
		if g.phase1 && j.GPUs > g.free() && !g.below(j.K, j) {
			g.phase1 = false
			continue
		}
		g.pass(j)
		if err := g.walkPending(j); err != nil {
			return err
		}
	}
}

// scanSkips is how many jobs in a row the walk skips in State.Pending before it merges the
// families instead (merge).
const scanSkips = 32

// soonWalks is how many walks after one that merged on scanSkips merge at their first skip: a
// queue whose head skipped that many jobs usually still does, and the scan up to scanSkips is
// then spent for nothing. They do not renew the count, since a merged walk pays a step per
// family at the merge and at every later change of the cluster: with many GPUs, merging at
// every first skip cost more than the scans it saved.
const soonWalks = 15

// revive starts a new epoch after a change of the cluster: no family has failed in it, and the
// merge, if on, takes every family with jobs ahead again that may fit (merge begins the same
// epoch again, and leaves out the families that failed in it).
func (g *greedy) revive() {
	g.epoch++
	g.failed = math.MaxInt
	if !g.merging {
		return
	}
	g.heads.items = g.heads.items[:0]
	free := g.free()
	for f, h := range g.head {
		if h != nil && g.dead[f] != g.epoch && (g.phase1 || g.s.FamilyGPUs[f] <= free) {
			g.heads.items = append(g.heads.items, int32(f))
		}
	}
	g.heads.init()
}

// viable reports whether pending job j is worth walking: its family has not failed in this
// epoch and, after phase 1, it fits in the free GPUs.
func (g *greedy) viable(j *policy.Job) bool {
	return g.dead[j.Family] != g.epoch && j.GPUs < g.failed && (g.phase1 || j.GPUs <= g.free())
}

// next returns the next pending job worth walking. It scans State.Pending while that skips
// little; then it merges the families' next jobs with a heap, where a family that is not worth
// walking costs one step however many jobs it has.
func (g *greedy) next() *policy.Job {
	if least := g.s.Sizes[0]; g.failed <= least || !g.phase1 && g.free() < least {
		return nil // no pending job is worth walking
	}
	for !g.merging {
		j := g.s.Pending.At(g.scan)
		if j == nil || g.viable(j) || g.aheadOf(j) {
			// A victim to walk first may change the cluster: j is skipped only after it.
			return j
		}
		g.scan = g.s.Pending.Next(g.scan)
		g.walked, g.wk, g.wj = true, j.K, j
		if g.skipped++; g.soonNow || g.skipped >= scanSkips {
			if g.soonNow {
				g.stats.SoonMerges++
			} else {
				g.soon = soonWalks
			}
			g.merge()
		}
	}
	for g.heads.len() > 0 {
		f := g.heads.top()
		h := g.head[f]
		switch {
		case g.walked && policy.Compare(h.K, h, g.wk, g.wj) <= 0:
			// The family lags behind the walk (it failed, or the merge just began).
			q := &g.s.ByFamily[f]
			g.cur[f] = q.After(g.wk, g.wj)
			if g.setHead(int(f), q.At(g.cur[f])) == nil {
				g.heads.pop()
			} else {
				g.heads.down(0)
			}
		case !g.viable(h):
			if h.GPUs >= g.failed || !g.phase1 && h.GPUs > g.free() {
				g.prune()
			} else {
				g.heads.pop()
			}
		default:
			return h
		}
	}
	return nil
}

// prune drops from the heap every family not worth walking. Within an epoch a family only
// stops being worth walking (free GPUs and failed only shrink, dead families only grow), so it
// drops at once the families that would reach the top later only to be popped; when the top
// is too large, most of those are. The heap's top stays the least viable family's head.
func (g *greedy) prune() {
	items := g.heads.items[:0]
	for _, f := range g.heads.items {
		if g.viable(g.head[f]) {
			items = append(items, f)
		}
	}
	g.stats.Pruned += len(g.heads.items) - len(items)
	g.heads.items = items
	g.heads.init()
}

// setHead makes h family f's next job and returns it.
func (g *greedy) setHead(f int, h *policy.Job) *policy.Job {
	g.head[f] = h
	if h != nil {
		g.headK[f], g.headI[f] = ranked{k: h.K, sub: h.Submit, id: h.ID}, h.Idx
	}
	return h
}

// merge switches the walk from scanning State.Pending to merging the families. A family left
// out for its size keeps its earlier failure's log unchecked (failsStill): a later call checks
// a longer one, which can only make it attempt the job instead.
func (g *greedy) merge() {
	g.merging = true
	g.stats.Merges++
	// After phase 1 (always, without preemption) the free GPUs only shrink for the rest of the
	// call: a family that does not fit now never joins the heap (revive), and its next job is
	// not looked up, nor its earlier failure checked (above).
	free := math.MaxInt
	if !g.phase1 {
		free = g.free()
	}
	for f := range g.head {
		g.cur[f] = policy.Pos{}
		if g.s.FamilyGPUs[f] > free {
			g.head[f] = nil
			continue
		}
		h := g.setHead(f, g.s.ByFamily[f].At(policy.Pos{}))
		// A family that still fails from an earlier call stays out of the heap (see revive).
		if h != nil && g.keepFails {
			// An error is left for the attempt to report.
			if ok, _ := g.failsStill(h, false); ok {
				g.dead[f] = g.epoch
			}
		}
	}
	g.epoch-- // revive begins the same epoch again
	g.revive()
}

// pass moves the walk past pending job j, the next one, which it takes.
func (g *greedy) pass(j *policy.Job) {
	g.walked, g.wk, g.wj = true, j.K, j
	if !g.merging {
		g.scan = g.s.Pending.Next(g.scan)
		g.skipped = 0
		return
	}
	f := int(j.Family)
	q := &g.s.ByFamily[f]
	g.cur[f] = q.Next(g.cur[f])
	if g.setHead(f, q.At(g.cur[f])) == nil {
		g.heads.pop()
	} else {
		g.heads.down(0)
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// walkPending tries one pending job; a failure that changed nothing rules its family out until
// the cluster changes.
func (g *greedy) walkPending(j *policy.Job) error {
	f := j.Family
	if g.keepFails {
		// A job of the family that failed in an earlier call, or one behind it, fails still.
		if ok, err := g.failsStill(j, true); err != nil {
			return err
		} else if ok {
			g.dead[f] = g.epoch
			return nil
		}
	}
	ok, changed, err := g.attempt(j, j.K, -1)
	if err != nil {
		return err
	}
	if g.keepFails {
		g.fails[f] = famFail{}
		if !ok && g.p.wait > 0 {
			g.fails[f] = famFail{j, g.s.Now + time.Duration(min(g.p.wait, maxIndexedS)*1e9), g.logBase + len(g.moved)}
		}
	}
	if !ok && !changed {
		g.dead[f] = g.epoch
		if g.bySize {
			g.failed = min(g.failed, j.GPUs)
		}
	}
	return nil
}

// failsStill reports whether pending job j fails as a job of its family did in an earlier call
// (keepFails): it is that job or one behind it, before the time the failure holds; none of the
// GPUs changed since could take it; and skipping its attempt misses no lookup it would make now
// (with now: at this point of the walk; else at any point).
func (g *greedy) failsStill(j *policy.Job, now bool) (bool, error) {
	x := g.fails[j.Family]
	if x.j == nil || g.s.Now >= x.until || x.j != j && policy.Compare(j.K, j, x.j.K, x.j) <= 0 {
		return false, nil
	}
	if x.pos < g.logBase {
		return false, nil // more than maxMoved changes since (note dropped them)
	}
	log := g.moved[x.pos-g.logBase:]
	if len(log) > maxMoved || !g.p.lookedUp(j, now) {
		return false, nil
	}
	for _, gpu := range log {
		if may, err := g.p.mayTake(j, gpu); may || err != nil {
			return false, err
		}
	}
	if x.j == j {
		// The failure now holds with those changes, which need no check again: a GPU's later
		// changes are logged anew, and a check that fails keeps failing (placer.wait).
		g.fails[j.Family].pos = g.logBase + len(g.moved)
	}
	return true, nil
}

// note logs, at the start of a call (keepFails), the GPUs that changed since the last call in a
// way that may let a failed job fit: the GPUs of jobs that ended, and those of running jobs
// whose rate changed while a GPU of their own is left to share (their finish time moved, which
// the share checks assumed). Placements only take GPUs, room and partners away, and a job placed
// in the last call alone on its GPUs runs at the rate the failures after it assumed, or loses
// progress to the lineage's per-event overhead, which never makes its remaining time grow, so a
// check that failed against it keeps failing (those before it never counted on its GPUs, which
// were idle then). Anything else forgets every failure.
func (g *greedy) note(s *policy.State) {
	if s.Resync || g.p.plannedAt == nil || g.p.call <= 1 {
		g.forgetAll()
		return
	}
	if n := len(g.moved); n > g.movedCap {
		copy(g.moved, g.moved[n-maxMoved:])
		g.moved = g.moved[:maxMoved]
		g.logBase += n - maxMoved
		g.stats.Compactions++
	}
	for _, id := range s.Finished {
		j := s.Lookup(id)
		if j == nil {
			g.forgetAll()
			return
		}
		g.moved = append(g.moved, j.On...)
	}
	for _, r := range s.Rerated {
		if !r.Running {
			if r.Done {
				continue // logged above
			}
			g.forgetAll()
			return
		}
		sole, alone := false, true
		for _, gpu := range r.On {
			if s.Cluster.Count(gpu) == 1 {
				sole = true
			} else {
				alone = false
			}
		}
		if sole && !(alone && g.p.plannedAt[r.Idx] == g.p.call-1) {
			g.moved = append(g.moved, r.On...)
		}
	}
}

// forgetAll drops every failure kept and the log.
func (g *greedy) forgetAll() {
	clear(g.fails)
	g.logBase += len(g.moved)
	g.moved = g.moved[:0]
}

// aheadOf reports whether the next victim to walk again ranks before pending job j (nil: after
// every pending job).
func (g *greedy) aheadOf(j *policy.Job) bool {
	if g.best < 0 {
		return false
	}
	v := &g.victims[g.ahead[g.best].hi-1]
	return j == nil || policy.Compare(v.k, v.j, j.K, j) < 0
}

// vrun is a run of victims, g.victims[lo:hi], by rank descending.
type vrun struct{ lo, hi int }

// pick finds the run whose next victim ranks first.
func (g *greedy) pick() {
	g.best = -1
	for i, r := range g.ahead {
		if r.hi == r.lo {
			continue
		}
		if g.best >= 0 {
			x, y := &g.victims[r.hi-1], &g.victims[g.ahead[g.best].hi-1]
			if policy.Compare(x.k, x.j, y.k, y.j) > 0 {
				continue
			}
		}
		g.best = i
	}
}

// walkVictim tries to place back the next victim of this call.
func (g *greedy) walkVictim() error {
	r := &g.ahead[g.best]
	r.hi--
	vi := r.hi
	g.pick()
	v := g.victims[vi]
	g.walked, g.wk, g.wj = true, v.k, v.j
	if v.lazy {
		if g.lazyBack(int(vi)) {
			return nil
		}
		if err := g.materialize(matMoves); err != nil {
			return err
		}
	}
	_, _, err := g.attempt(v.j, v.k, int(vi))
	return err
}

// attempt places j if it fits, else preempts lower-ranked running jobs for it when allowed.
// changed reports a change of the cluster (a new epoch begins).
func (g *greedy) attempt(j *policy.Job, jk policy.Key, v int) (ok, changed bool, err error) {
	cl := g.s.Cluster
	g.p.wait = math.Inf(1)
	// failed: a YARN try of j failed on the idle GPUs as they are now (see yarnStill).
	failed := false
	if j.GPUs <= g.free() {
		if ok, err = g.try(j, v); err != nil {
			return false, false, err
		}
		failed = !ok
	}
	if !ok && g.preempt && g.below(jk, j) {
		// Preempt from the lowest priority upward, retrying after each victim. Jobs too close
		// to their end, jobs that a placement of this pass shares GPUs with (its share check
		// assumed they keep running) and the jobs of fixEarly's range (in one step, earlySkip)
		// are set aside: they stay running and rank lowest.
		mark := cl.Mark()
		lo := len(g.victims) // this attempt's victims follow
		// Victims stay lazy (lazyvictims.go) until j may fit: when it asks for at most the free
		// GPUs and a node of the last victim has the part of j it needs.
		lazy, part := g.lazyOn(), yarnPart(j.GPUs, cl.Shape().GPUsPerNode)
		for !ok {
			r := g.rs.lowest(g.runKey)
			if r == nil || policy.Compare(r.k, r.j, jk, j) <= 0 {
				break
			}
			if n := g.earlySkip(); n > 0 {
				// As many rounds of the set-aside branch below: only the first one's matters.
				if len(g.low) == 0 {
					g.low = append(g.low, *r)
				}
				g.rs.skip(n)
				g.stats.EarlySkipped += n
				continue
			}
			g.rs.take()
			if g.remIters(r.j) <= minVictimIters || g.hostsPlanned(r.j) {
				g.low = append(g.low, *r)
				continue
			}
			if lazy {
				if !g.lazyRelease(r, part) || j.GPUs > g.free() {
					continue
				}
				if err := g.materialize(matFits); err != nil {
					return false, false, err
				}
				lazy = false
			} else {
				if err := cl.Release(r.j.ID); err != nil {
					return false, false, fmt.Errorf("policy %s: preempt job %d: %w", g.name, r.j.ID, err)
				}
				g.addVictim(r, false)
			}
			if j.GPUs <= g.free() && !(failed && g.yarnStill(j, r.j)) {
				if ok, err = g.try(j, v); err != nil {
					return false, false, err
				}
				failed = !ok
			}
		}
		if !ok && g.tentative {
			cl.Rollback(mark)
			for _, x := range g.victims[lo:] {
				g.rs.putBack(x.ranked)
			}
			g.victims = g.victims[:lo]
		} else {
			cl.Commit(mark)
		}
		for _, x := range g.victims[lo:] {
			g.plan.Stop = append(g.plan.Stop, x.j.ID)
		}
		if changed = len(g.victims) > lo; changed {
			g.ahead = append(g.ahead, vrun{lo, len(g.victims)})
			g.pick()
		}
	}
	if changed || ok && g.preempt && !g.exclusive {
		// Preemption freed GPUs: families that failed may fit now. A placement alone never
		// makes a family fit: it only takes GPUs, memory and share partners away. But when
		// sharing and preempting, it makes its partners ineligible as victims, and a failed
		// attempt sets those it meets aside for the rest of the call (hostsPlanned), which
		// later attempts see (below), so every family is walked again.
		g.revive()
	}
	return ok, changed, nil
}

// yarnStill reports, for a job j that YARN placement failed to place, whether it still fails
// once victim r's GPUs are idle too. Only r's nodes changed: a job of at most a node's GPUs
// needs a node with as many idle; a larger one needs as many fully idle nodes as it has whole
// nodes' worth of GPUs, then for the rest a node with that many idle. So while no node of r
// reaches the idle GPUs a part of j asks for, the fully idle nodes and the nodes that could
// take the rest are those that failed.
func (g *greedy) yarnStill(j, r *policy.Job) bool {
	if !g.bySize {
		return false
	}
	cl := g.s.Cluster
	per := cl.Shape().GPUsPerNode
	need := yarnPart(j.GPUs, per)
	for _, gpu := range r.On {
		if cl.NodeIdle(gpu/per) >= need {
			return false
		}
	}
	return true
}

// hostsPlanned reports whether a job placed earlier in this call shares a GPU with running job r.
func (g *greedy) hostsPlanned(r *policy.Job) bool {
	if g.exclusive {
		return false
	}
	for _, gpu := range r.On {
		for _, id := range g.s.Cluster.Jobs(gpu) {
			if id != r.ID && g.p.isPlanned(id) {
				return true
			}
		}
	}
	return false
}

// finish notes the victims that stop (they leave rs at the next sync) and drops cancelled
// preemptions from the plan.
func (g *greedy) finish() {
	for _, v := range g.victims {
		if !v.cancelled {
			g.stopped = append(g.stopped, v.j)
		}
	}
	// The victims are the plan's stops, in order.
	stop := g.plan.Stop[:len(g.plan.Stop)-len(g.victims)]
	for _, v := range g.victims {
		if !v.cancelled {
			stop = append(stop, v.j.ID)
		}
	}
	g.plan.Stop = stop
}

// try places j if it fits now, recording the placement in plan. A preempted job placed again on
// exactly its old GPUs and sub-batch is not preempted at all (the authors' jobs_execute cancels
// the preemption).
func (g *greedy) try(j *policy.Job, v int) (bool, error) {
	s, plan := g.s, g.plan
	if g.lz.n > 0 && g.lazyReach(j.GPUs) {
		// The lazy victims' GPUs could change where j goes: they are released first.
		if err := g.materialize(matPlace); err != nil {
			return false, err
		}
	}
	pl, ok, err := g.place(&g.p, j)
	if err != nil {
		return false, fmt.Errorf("policy %s: job %d: %w", g.name, j.ID, err)
	}
	if !ok {
		return false, nil
	}
	o := j.Options[pl.Opt]
	if err := s.Cluster.PlaceTagged(j.ID, pl.GPUs, o.Mem, o.Tag); err != nil {
		return false, fmt.Errorf("policy %s: job %d: %w", g.name, j.ID, err)
	}
	if g.p.ix.on && !g.p.ix.off {
		g.p.ix.planned = append(g.p.ix.planned, pl.GPUs...)
	}
	pl.Job = j.ID
	back := v >= 0 && pl.Opt == j.Opt && sameSet(pl.GPUs, j.On)
	if !g.exclusive {
		// Share checks of later placements see the job as a partner (exclusive ones never do).
		if back {
			g.p.plan(j, partner{j, j.Opt, j.RemTime(s.Now).Seconds()})
		} else {
			g.p.plan(j, partner{j, pl.Opt, j.RemIters(s.Now) * o.Excl.Seconds()})
		}
	}
	if g.remOn {
		k := j.K
		if v >= 0 {
			k = g.victims[v].k
		}
		g.remPlaced(j, k, !back)
	}
	if back {
		// Back where it was: the job keeps running as before.
		g.victims[v].cancelled = true
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
	if slices.Equal(a, sorted) {
		return true // a placement lists its GPUs in order, but for YARN's rest on an earlier node
	}
	for _, g := range a {
		if _, found := slices.BinarySearch(sorted, g); !found {
			return false
		}
	}
	return true
}

// remKeyIters returns j's SJF key as a running job at now (runRemKey's) and the iterations j
// has left (RemIters), from one RemAt when j runs.
func remKeyIters(j *policy.Job, now time.Duration) (policy.Key, float64) {
	if !j.Running {
		return policy.Key{A: j.RemTime(now).Seconds()}, j.P.Rem
	}
	iters := j.P.RemAt(now)
	return policy.Key{A: policy.RunningRemTime(iters, j.Options[j.Opt].Excl, j.Xi).Seconds()}, iters
}
