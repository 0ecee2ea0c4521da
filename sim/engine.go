package sim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// Config describes a simulation apart from the trace, the policy and the profile.
type Config struct {
	Shape cluster.Shape
	// Interval schedules in periodic rounds (150 s reproduces the authors' testbed); 0 schedules
	// at every arrival, completion and requested wake-up.
	Interval time.Duration
	// Mode selects the slowdown column; a policy implementing policy.Moder overrides it.
	Mode profile.Mode
	// Restart is what a preempted job pays when it starts again (zero: nothing).
	Restart RestartCost
	// IterScale multiplies every exclusive step time (0 or 1: unchanged). The Muri simulator
	// multiplies the trace's iteration times by 1.015.
	IterScale float64
	// OverheadEveryEvent reproduces a lineage effect of the Muri simulator: at every event each
	// running job loses min(Δ, overhead) seconds of progress, Δ being the time since the previous
	// event and overhead its restart cost from the lineage's table (see RestartLineage).
	OverheadEveryEvent bool
	// ModelMap maps trace models onto profile models; nil is the identity.
	ModelMap *profile.ModelMap
	// TraceName labels errors and outputs.
	TraceName string
	// Progress, if not nil, hears how many of the run's jobs have finished, at every finish.
	// It must not touch the run.
	Progress func(done, total int)
	// redo (tests) makes apply redo every plan on the cluster as it was before the policy's
	// call, never keeping the policy's own changes (see reflects).
	redo bool
	// queueMoves (tests) sends the jobs a plan stops and starts again through the pending queues
	// and the event queue (see apply).
	queueMoves bool
	// famKeys (tests) makes the families' pending queues of a zero-key policy keep their zero
	// keys, as when their bits would exceed famIndexBytes.
	famKeys bool
}

// Run simulates jobs under p on the cluster cfg.Shape using prof (nil: the trace's iteration
// times, no sharing). obs, if not nil, receives the decision log. The error reports bad input,
// an illegal plan (naming the policy and job) or cancellation.
func Run(ctx context.Context, cfg Config, jobs []trace.Job, p policy.Policy, prof *profile.Table, obs Observer) (*Result, error) {
	e, err := newEngine(cfg, jobs, p, prof, obs)
	if err != nil {
		return nil, err
	}
	if err := e.loop(ctx); err != nil {
		return nil, err
	}
	return e.result(), nil
}

type engine struct {
	cfg   Config
	pol   policy.Policy
	keyer policy.Keyer
	pacer policy.Pacer // slowdowns of sharing jobs from the policy, not the profile
	// groupLoss: under OverheadEveryEvent, a job loses its whole group's overheads
	// (policy.GroupOverhead).
	groupLoss bool
	cl        *cluster.Cluster
	env       *policy.Env
	obs       Observer
	names     []string      // GPU names for events, made on first need
	allNamed  bool          // every GPU is in names (gpuNames)
	jobs      []*policy.Job // in arrival order
	byIDs     []int32       // job indices sorted by job ID, for lookups
	// dense maps ID-minID to a job index (-1: none) when the IDs are compact, as they
	// usually are, so that lookups skip the binary search.
	dense []int32
	minID trace.JobID
	stats []jobStats
	ver   []uint32
	q     queue
	now   time.Duration
	next  int // next arrival
	done  int
	pend  policy.Queue   // pending jobs, in policy order
	fam   []policy.Queue // pending jobs by family, in policy order
	// run holds the running jobs in no order: a start appends, a stop moves the last one into
	// the gap (runIdx[k] is run[k]'s index, runAt[i] job i's place or -1). running sorts them
	// by ID when read after a change, which most policies never ask for.
	run       []*policy.Job
	runIdx    []int32
	runAt     []int32
	runByID   []*policy.Job
	runSorted bool
	state     policy.State
	tick      time.Duration // scheduled tick, or -1
	wake      time.Duration // latest requested wake, or 0
	util      utilAcc
	notes     []string
	shared    int           // jobs that ran co-located at some point
	subShared int           // jobs that shared at a smaller sub-batch because their largest did not fit
	finished  []trace.JobID // since the last policy call
	rerated   []*policy.Job // running jobs re-rated since the last policy call, once each
	listed    []bool        // by job index: in rerated
	// moving[i]: job i is stopped and started again by the plan being applied (apply); movers
	// lists the marked jobs.
	moving []bool
	movers []int32
	// seen[i] == stamp marks job i as checked in the current reflects.
	seen  []uint32
	stamp uint32
	kept  int // calls whose changes the cluster kept as the plan
	moves int // stops of jobs the same plan started again, which skipped the queues
	// Scratch lists of jobs whose rates change (touch, rerate), reused from event to event.
	touched, partnered, again []*policy.Job
	nSched                    int
	restartTotal              time.Duration // restart time charged
	// everyEvent calls the policy at every arrival and completion, even with no job waiting.
	everyEvent bool
	cancel     <-chan struct{} // the run's ctx.Done()
	live       bool            // driven by a world (Live): its completions, not the engine's predictions
}

type jobStats struct {
	start, end time.Duration
	sharedFor  time.Duration
	sharedNow  bool
	everShared bool
	subShared  bool          // shared at a smaller sub-batch because the largest did not fit
	solo       time.Duration // iterations × fastest exclusive step time
	restart    time.Duration // restart cost after a preemption
	eventLoss  time.Duration // progress lost at every event (OverheadEveryEvent)
	lastRem    float64       // iterations left at the previous event (OverheadEveryEvent)
	// ratedAt is when the job's rate last changed and prevRate the rate before that change:
	// the rate it ran at since the previous event, if the change was now (OverheadEveryEvent).
	ratedAt  time.Duration
	prevRate float64
	prevLoss time.Duration // eventLoss before that change
}

func newEngine(cfg Config, jobs []trace.Job, p policy.Policy, prof *profile.Table, obs Observer) (*engine, error) {
	if err := cfg.Shape.Validate(); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("sim: %s: no jobs", cfg.TraceName)
	}
	if s := cfg.IterScale; s < 0 || math.IsNaN(s) || math.IsInf(s, 0) || s > 1e6 {
		return nil, fmt.Errorf("sim: step-time scale %g: want a number in (0, 1e6]", s)
	}
	if r := cfg.Restart; r.Source == RestartFixed && (r.Fixed < 0 || r.Fixed > simtime.MaxRestart) {
		return nil, fmt.Errorf("sim: restart cost %v: want at most %s", r.Fixed, simtime.Format(simtime.MaxRestart))
	}
	if iv := cfg.Interval; iv != 0 && (iv < MinInterval || iv > MaxInterval) {
		return nil, fmt.Errorf("sim: scheduling interval %v: want 0 (event-driven) or %v to %s", iv, MinInterval, simtime.Format(MaxInterval))
	}
	mode := cfg.Mode
	if mode == "" {
		mode = profile.Timeslice
	}
	if m, ok := p.(policy.Moder); ok {
		mode = m.Mode()
	}
	s := &setup{cfg: cfg, prof: prof, cfgIdx: map[string]int{}, noProf: map[string]int{}, fams: map[famKey]int{}, cache: map[optKey]optEntry{}, memSrc: map[string]int{},
		slab: make([]policy.Job, 0, len(jobs))}
	e := &engine{cfg: cfg, pol: p, cl: cluster.New(cfg.Shape), obs: obs, tick: -1}
	restartSrc := map[string]int{}
	e.keyer, _ = p.(policy.Keyer)
	e.pacer, _ = p.(policy.Pacer)
	_, grouped := p.(policy.GroupOverhead)
	e.groupLoss = cfg.OverheadEveryEvent && e.pacer != nil && grouped
	s.paced = e.pacer != nil
	if ev, ok := p.(policy.EveryEventer); ok {
		e.everyEvent = ev.EveryEvent()
	}
	sorted := jobs // read only; a copy only when it needs sorting (readers return sorted traces)
	if !slices.IsSortedFunc(jobs, trace.Compare) {
		sorted = slices.Clone(jobs)
		trace.Sort(sorted)
	}
	e.jobs = make([]*policy.Job, len(sorted))
	e.byIDs = make([]int32, len(sorted))
	e.stats = make([]jobStats, len(sorted))
	e.ver = make([]uint32, len(sorted))
	e.listed = make([]bool, len(sorted))
	e.moving = make([]bool, len(sorted))
	e.runAt = make([]int32, len(sorted))
	for i := range e.runAt {
		e.runAt[i] = -1
	}
	e.seen = make([]uint32, len(sorted))
	e.q.grow(len(sorted))
	for i, t := range sorted {
		if t.GPUs > cfg.Shape.GPUs() || t.GPUs <= 0 || t.Iters <= 0 || t.Submit < 0 {
			return nil, fmt.Errorf("sim: %s: job %d asks for %d GPUs and %d iterations at %v; the cluster has %d GPUs", cfg.TraceName, t.ID, t.GPUs, t.Iters, t.Submit, cfg.Shape.GPUs())
		}
		if t.Submit > Horizon {
			return nil, fmt.Errorf("sim: %s: %s", where(cfg.TraceName, t), simtime.ErrBeyond("submits after", t.Submit))
		}
		j, rs, err := s.job(t, cfg.TraceName)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		j.Idx = int32(i)
		e.jobs[i] = j
		e.byIDs[i] = int32(i)
		e.stats[i].start, e.stats[i].end = -1, -1
		e.stats[i].solo = solo(j)
		if end := simtime.Add(t.Submit, e.stats[i].solo); end > Horizon {
			return nil, fmt.Errorf("sim: %s: %d × %s per step (%s) %s", where(cfg.TraceName, t), t.Iters,
				simtime.Format(j.Options[j.Fast].Excl), s.names[j.Options[j.Fast].Cfg], simtime.ErrBeyond("ends after", end))
		}
		e.stats[i].restart, e.stats[i].eventLoss = rs.cost, rs.loss
	}
	if cfg.Restart.Source != RestartOff {
		for _, r := range s.restarts {
			restartSrc[r.src] += r.jobs
		}
	}
	slices.SortFunc(e.byIDs, func(a, b int32) int { return cmp.Compare(e.jobs[a].ID, e.jobs[b].ID) })
	for k := 1; k < len(e.byIDs); k++ {
		if e.jobs[e.byIDs[k]].ID == e.jobs[e.byIDs[k-1]].ID {
			return nil, fmt.Errorf("sim: %s: duplicate job id %d", cfg.TraceName, e.jobs[e.byIDs[k]].ID)
		}
	}
	lo, hi := e.jobs[e.byIDs[0]].ID, e.jobs[e.byIDs[len(e.byIDs)-1]].ID
	if span := uint64(hi - lo); span < 4*uint64(len(e.jobs)) {
		e.minID, e.dense = lo, make([]int32, span+1)
		for k := range e.dense {
			e.dense[k] = -1
		}
		for i, j := range e.jobs {
			e.dense[j.ID-lo] = int32(i)
		}
		e.cl.Dense(lo, len(e.dense))
	}
	e.env = s.env(mode)
	e.env.Explain = obs != nil
	for _, name := range slices.Sorted(maps.Keys(s.noProf)) {
		share := "never share"
		if s.paced {
			share = "share as the policy paces them"
		}
		e.notes = append(e.notes, fmt.Sprintf("%d jobs of %s are not in the profile: they use the trace's iteration time and %s", s.noProf[name], name, share))
	}
	if len(restartSrc) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(restartSrc)) {
			parts = append(parts, fmt.Sprintf("%s for %d jobs", k, restartSrc[k]))
		}
		e.notes = append(e.notes, fmt.Sprintf("restart cost after a preemption (%s): %s", cfg.Restart, strings.Join(parts, ", ")))
	}
	if cfg.OverheadEveryEvent {
		e.notes = append(e.notes, "lineage effect on: every running job loses min(Δ, its lineage overhead) of progress at every event (Muri simulator)")
	}
	if cfg.IterScale != 0 && cfg.IterScale != 1 {
		e.notes = append(e.notes, fmt.Sprintf("every step time is multiplied by %g", cfg.IterScale))
	}
	for _, note := range slices.Sorted(maps.Keys(s.memSrc)) {
		e.notes = append(e.notes, fmt.Sprintf("%s (%d jobs)", note, s.memSrc[note]))
	}
	if s.estMem {
		e.notes = append(e.notes, "GPU memory per job comes from an estimate in the profile (mem_estimated), not a measurement")
	}
	e.fam = make([]policy.Queue, len(s.fams))
	if e.keyer == nil {
		// Every key is zero: the queues keep job indices, which are in (Submit, ID) order, as
		// bits. The families' queues do so too unless their bits would take too much memory;
		// they then keep the zero keys, in the same order.
		e.pend.ByIndex(e.jobs)
		if !cfg.famKeys && len(e.fam)*policy.IndexBytes(len(e.jobs)) <= famIndexBytes {
			for f := range e.fam {
				e.fam[f].ByIndex(e.jobs)
			}
		}
	}
	famGPUs := make([]int, len(s.fams))
	for k, f := range s.fams {
		famGPUs[f] = k.gpus
	}
	var sizes []int
	for _, j := range e.jobs {
		if !slices.Contains(sizes, j.GPUs) {
			sizes = append(sizes, j.GPUs)
		}
	}
	slices.Sort(sizes)
	for _, j := range e.jobs {
		j.Size = int32(slices.Index(sizes, j.GPUs))
	}
	e.state = policy.State{Cluster: e.cl, Env: e.env, Pending: &e.pend, ByFamily: e.fam, FamilyGPUs: famGPUs,
		Sizes: sizes, Lookup: e.lookup, Jobs: e.jobs, Running: e.running}
	e.util.init(cfg.Shape.GPUs())
	return e, nil
}

// famIndexBytes bounds the memory of the families' pending queues kept by index: 64 MiB is 5,000
// families at 10^5 jobs and 500 at 10^6.
const famIndexBytes = 64 << 20

// Horizon is the latest instant a schedule may reach (internal/simtime): a run whose next event
// lies beyond it ends with an error naming a job.
const Horizon = simtime.Horizon

// Bounds of Config.Interval: rounds of at least a millisecond (a finer one only multiplies the
// scheduling passes) and at most a year.
const (
	MinInterval = time.Millisecond
	MaxInterval = 365 * 24 * time.Hour
)

// IntervalFromSeconds converts a scheduling interval in seconds to a Config.Interval: 0, or
// between MinInterval and MaxInterval.
func IntervalFromSeconds(s float64) (time.Duration, error) {
	if s == 0 {
		return 0, nil
	}
	if !(s >= MinInterval.Seconds() && s <= MaxInterval.Seconds()) {
		return 0, fmt.Errorf("interval %g s: want 0 (event-driven) or seconds in [%g, %g]", s, MinInterval.Seconds(), MaxInterval.Seconds())
	}
	return simtime.FromSeconds(s), nil
}

// loop runs events until every job has finished, the schedule passes the horizon or ctx is done.
func (e *engine) loop(ctx context.Context) error {
	e.cancel = ctx.Done()
	for steps := 0; e.done < len(e.jobs); steps++ {
		if steps&63 == 0 && e.cancelled() {
			return fmt.Errorf("sim: %w", ctx.Err())
		}
		t, ok := e.nextTime()
		if !ok {
			return e.stuck()
		}
		if t > Horizon {
			return e.pastHorizon()
		}
		e.advance(t)
		woke, ticked, changed := false, false, false
		for e.next < len(e.jobs) && e.jobs[e.next].Submit == t {
			e.arrive(int32(e.next))
			e.next++
			changed = true
		}
		for e.q.len() > 0 && e.q.peek() == t {
			ev := e.q.pop()
			switch ev.kind {
			case evFinish:
				if ev.ver == e.ver[ev.job] && e.jobs[ev.job].Running {
					e.finish(ev.job)
					changed = true
				}
			case evWake:
				if t == e.wake {
					e.wake, woke = 0, true
				}
			case evTick:
				e.tick, ticked = -1, true
			}
		}
		if e.cfg.OverheadEveryEvent && (changed || woke || ticked) {
			e.eventLosses()
		}
		var sched bool
		if e.cfg.Interval > 0 {
			sched = ticked
		} else {
			sched = changed && (e.pend.Len() > 0 || e.everyEvent) || woke
		}
		if sched {
			if err := e.schedule(); err != nil {
				if e.cancelled() {
					return fmt.Errorf("sim: %w", ctx.Err())
				}
				return err
			}
		}
		if e.cfg.Interval > 0 && e.pend.Len() > 0 && e.tick < 0 {
			// The next round: the first multiple of the interval after now (or now itself when
			// a job arrived exactly on a round boundary that has not run yet).
			next := (t/e.cfg.Interval + 1) * e.cfg.Interval
			if !ticked && t%e.cfg.Interval == 0 {
				next = t
			}
			e.tick = next
			e.q.push(event{t: next, kind: evTick})
		}
	}
	return nil
}

// cancelled reports whether the run's context is done, without blocking.
func (e *engine) cancelled() bool {
	if e.cancel == nil { // a context that is never done
		return false
	}
	select {
	case <-e.cancel:
		return true
	default:
		return false
	}
}

// pastHorizon reports a schedule whose next event lies beyond the horizon, naming the running
// job that would end last, or else the first waiting job.
func (e *engine) pastHorizon() error {
	var last *policy.Job
	var lastEnd time.Duration
	for _, j := range e.running() {
		end := simtime.Add(j.P.At, simtime.Add(j.P.Overhead, simtime.FromNanos(j.P.Rem/j.P.Rate*1e9)))
		if last == nil || end > lastEnd {
			last, lastEnd = j, end
		}
	}
	head := fmt.Sprintf("the schedule of policy %s runs past the %d-year horizon", e.pol.Name(), simtime.HorizonYears)
	switch {
	case last != nil:
		return fmt.Errorf("sim: %s: %s: the job %s", where(e.cfg.TraceName, last.Job), head, simtime.ErrBeyond("would end after", lastEnd))
	case e.pend.Len() > 0:
		for j := range e.pend.All() {
			return fmt.Errorf("sim: %s: %s: the job still waits after %s", where(e.cfg.TraceName, j.Job), head, simtime.Format(e.now))
		}
	}
	return fmt.Errorf("sim: %s: %s", e.cfg.TraceName, head)
}

// where names a job by file, line and ID for error messages.
func where(file string, t trace.Job) string {
	if t.Line == 0 {
		return fmt.Sprintf("%s: job %d", file, t.ID)
	}
	return fmt.Sprintf("%s:%d: job %d", file, t.Line, t.ID)
}

func (e *engine) nextTime() (time.Duration, bool) {
	t, ok := time.Duration(math.MaxInt64), false
	if e.next < len(e.jobs) {
		t, ok = e.jobs[e.next].Submit, true
	}
	if e.q.len() > 0 && (e.q.peek() < t || !ok) { // a saturated event lies at MaxInt64 itself
		t, ok = e.q.peek(), true
	}
	return t, ok
}

// stuck reports jobs the policy left waiting although nothing else can happen.
func (e *engine) stuck() error {
	var ids []trace.JobID
	for j := range e.pend.All() {
		ids = append(ids, j.ID)
		if len(ids) == 10 {
			break
		}
	}
	return fmt.Errorf("sim: policy %s left %d jobs waiting with nothing left to happen (first: %v)", e.pol.Name(), e.pend.Len(), ids)
}

// lookup finds a job by ID for policies.
func (e *engine) lookup(id trace.JobID) *policy.Job {
	if e.dense != nil {
		if d := uint64(id - e.minID); d < uint64(len(e.dense)) && e.dense[d] >= 0 {
			return e.jobs[e.dense[d]]
		}
		return nil
	}
	k, ok := slices.BinarySearchFunc(e.byIDs, id, func(i int32, id trace.JobID) int { return cmp.Compare(e.jobs[i].ID, id) })
	if !ok {
		return nil
	}
	return e.jobs[e.byIDs[k]]
}
