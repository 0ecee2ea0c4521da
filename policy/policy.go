package policy

import (
	"cmp"
	"math"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// A Policy decides which pending jobs start where and which running jobs stop. Schedule must be
// a deterministic function of the States it has been given; a policy may keep private state
// between calls (Tiresias queues) but no clocks, globals or map-order dependence. A plan is the
// caller's until the next call, which may reuse its slices (the built-in policies do).
type Policy interface {
	Name() string
	Schedule(s *State) (Plan, error)
}

// Exclusive is implemented by policies that never place a job on a GPU another job uses. Nothing
// in their decisions or in the simulation of them reads a profile's slowdowns (ξ), so runs that
// differ only in the slowdowns have the same outputs, and a sweep simulates them once (bench).
type Exclusive interface{ Exclusive() }

// Key is a job's priority: lower keys go first, compared by A then B; equal keys fall back to
// (Submit, ID).
type Key struct {
	A float64
	B int64
}

// Compare orders keys, then submit times, then IDs: the order of State.Pending.
func Compare(ka Key, a *Job, kb Key, b *Job) int {
	// Early returns: the walks compare a lot, and most keys differ in A.
	if c := cmpA(ka.A, kb.A); c != 0 {
		return c
	}
	if ka.B != kb.B {
		return cmp.Compare(ka.B, kb.B)
	}
	if a.Submit != b.Submit {
		return cmp.Compare(a.Submit, b.Submit)
	}
	return cmp.Compare(a.ID, b.ID)
}

// cmpA is cmp.Compare on first keys (a NaN before every number, NaNs equal), with the common
// case, no NaN, tested first: the queues compare keys at every insertion.
func cmpA(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case a != a && b != b:
		return 0
	case a != a:
		return -1
	}
	return 1
}

// Keyer is implemented by policies that order pending jobs by a key fixed while a job waits.
// The engine keeps State.Pending sorted by (Key, Submit, ID), evaluating Key when a job enters
// the queue and again for the jobs a Plan lists in Rekey, so no policy sorts on every call.
// Policies that are not Keyers see pending jobs by (Submit, ID).
type Keyer interface {
	Key(j *Job) Key
}

// EveryEventer is implemented by policies that must see every arrival and completion, even
// when no job is waiting (the lineage's Tiresias checks demotions at every event).
type EveryEventer interface {
	EveryEvent() bool
}

// Pacer is implemented by policies that set the slowdowns of jobs sharing a GPU themselves, from
// what the trace says of the jobs rather than from a profile (the Muri simulator's AntMan and
// Muri-S/L read each job's stage times, trace.Job.Stages). The engine takes a running job's
// slowdown as Slowdown(j, partners), partners being the running jobs that share a GPU with it
// (never empty), at least 1, and gives every job 1/MaxShare of a GPU's memory, whatever a profile
// says (the lineage's AntMan and Muri assume memory is enough).
type Pacer interface {
	Slowdown(j *Job, partners []*Job) float64
}

// GroupOverhead is implemented by Pacers whose jobs lose, under the Muri simulator's per-event
// overhead (sim.Config.OverheadEveryEvent), the start overheads of their whole group at every
// event, their own and their partners' on the job's GPU count (Muri's interleaving schedules),
// rather than their own alone.
type GroupOverhead interface {
	GroupOverhead()
}

// Moder is implemented by policies that choose the sharing mode whose slowdowns apply.
type Moder interface {
	Mode() profile.Mode
}

// State is what a policy sees at a scheduling instant. Policies must not modify jobs; they may
// place and release jobs on Cluster tentatively.
type State struct {
	Now time.Duration
	// Pending holds the pending jobs in Keyer order when the policy is a Keyer, else by
	// (Submit, ID).
	Pending *Queue
	// Running returns the running jobs by ID; the list stays valid during the call. The engine
	// sorts it only when asked (most policies keep their own view of the running jobs).
	Running func() []*Job
	// Sizes lists the distinct GPU counts of the trace, ascending (Job.Size indexes it).
	Sizes []int
	// ByFamily[f] holds the pending jobs of family f (see Job.Family) in the order of Pending;
	// FamilyGPUs gives the GPU count of each family.
	ByFamily   []Queue
	FamilyGPUs []int
	Cluster    *cluster.Cluster
	Env        *Env
	// Jobs lists every job of the trace by Job.Idx (arrival order).
	Jobs []*Job
	// Lookup finds any job of the trace by ID (nil if unknown).
	Lookup func(trace.JobID) *Job
	// Finished lists the jobs that finished since the previous call, so policies can drop state.
	Finished []trace.JobID
	// Rerated lists, once each, the jobs whose progress or rate the engine set since the previous
	// call (they started, a partner came or went, or the lineage effect), so policies can keep
	// derived orders of running jobs; a listed job may have stopped since.
	Rerated []*Job
	// Resync says that the progress of running jobs may also have changed outside Rerated (a
	// live run sets it from measurements): what a policy derived from it must be rebuilt.
	Resync bool
}

// Plan is a policy's decision. The engine applies Stop first (preemption), then Start. It is done
// with a plan when it calls the policy again, so policies may reuse a plan's memory.
type Plan struct {
	Stop  []trace.JobID
	Start []Placement
	// Wake asks to be called again at this absolute time even if nothing happens
	// (Tiresias demotions); 0 means only on events.
	Wake time.Duration
	// Notes are logged with the decision: queue changes and similar.
	Notes []Note
	// Rekey lists pending jobs whose Key changed (Tiresias promotions); the engine re-sorts them.
	Rekey []trace.JobID
}

// Placement starts one job.
type Placement struct {
	Job  trace.JobID
	GPUs []int // flat GPU indices; a GPU that already holds a job is shared
	Opt  int   // index into the job's Options (sub-batch choice)
	// Partners lists the running jobs the placement shares GPUs with, for the decision log.
	Partners []trace.JobID
	// Reason explains the decision; filled only when Env.Explain is set.
	Reason string
}

// Note is a policy event for the decision log, such as a Tiresias demotion.
type Note struct {
	Job    trace.JobID
	Event  string // "demote", "promote"
	Reason string
}

// Option is one way to run a job: a sub-batch, its exclusive step time on the job's GPU count
// and its memory per GPU.
type Option struct {
	// Batch is the configuration's global batch per GPU (the profile's, through the model map);
	// SubBatch < Batch means gradient accumulation.
	Batch    int
	SubBatch int
	Excl     time.Duration
	Mem      int64
	Cfg      int // configuration index in Env; shared by all jobs of the same model/batch/sub-batch
	// Tag indexes Env.Tags: the option's configuration, GPU-count class and memory, which
	// placements pass to the cluster (Cluster.PlaceTagged).
	Tag int32
}

// Tag is what a GPU's resident means to a job that would share the GPU: its configuration and
// GPU-count class (its slowdowns) and its memory (the room it leaves).
type Tag struct {
	Cfg, GC int
	Mem     int64
}

// Job is a trace job with its simulation state. Options, Fast, GC, Family and Size are set
// when the run begins; Idx, K and the running state are owned by the engine.
//
// The fields are ordered so that what the walks read of a running job (P, Xi, Opt, Running,
// Options) and of a waiting one (K, Family, Size, On, ID, Submit, GPUs) lie together
// (docs/simulator.md, "Speed"; TestJobLayout).
type Job struct {
	P       Progress
	Xi      float64 // current slowdown (≥ 1) while running
	Opt     int     // option of the current or last placement
	Running bool
	Done    bool // finished
	Started bool // has run at least once
	// Idx is the job's index in the engine's arrival-ordered job list.
	Idx int32
	// Options lists the feasible sub-batch configurations (those that fit on an idle GPU),
	// largest sub-batch first.
	Options []Option
	// Fast indexes the option with the shortest exclusive step time (ties: the larger
	// sub-batch): the one a job runs at alone, and the one its waiting time is counted at.
	Fast int
	// K is the job's key when it entered the pending queue.
	K Key
	// Family groups jobs with the same options and GPU count: whether such jobs can be placed
	// depends on the cluster and, at most, monotonically on their remaining work.
	Family int32
	// Size indexes State.Sizes: the job's GPU count.
	Size int32
	On   []int // flat GPU indices while running
	trace.Job
	// GC is the GPU-count class of the job in Env's slowdown matrices.
	GC       int
	Preempts int           // times preempted
	Since    time.Duration // when the job last entered its current state (pending or running)
	LastRun  time.Duration // when it last stopped running; 0 if never
}

// Progress is the engine's lazily advanced progress of a job: at time At the job had Rem
// iterations left and Overhead of restart time to sit out before progressing at Rate
// iterations per second.
type Progress struct {
	Rem      float64
	At       time.Duration
	Rate     float64
	Overhead time.Duration
	Exec     time.Duration // wall time run before At (attained service)
}

// RemIters returns the iterations left at time now.
func (j *Job) RemIters(now time.Duration) float64 {
	if !j.Running {
		return j.P.Rem
	}
	return j.P.RemAt(now)
}

// RemAt returns the iterations left at now of a job running since At: none of the time before
// At+Overhead advances it.
func (p *Progress) RemAt(now time.Duration) float64 {
	dt := now - p.At - p.Overhead
	if dt <= 0 {
		return p.Rem
	}
	return max(0, p.Rem-dt.Seconds()*p.Rate)
}

// Advance brings the progress of a job that ran from At to now (after At) up to now: the
// restart overhead is paid first, then iterations go at Rate. The engine and the replay's
// virtual world both settle with it, so the two agree to the last bit.
func (p *Progress) Advance(now time.Duration) {
	dt := now - p.At
	p.Exec += dt
	run := dt
	if p.Overhead > 0 {
		u := min(run, p.Overhead)
		p.Overhead -= u
		run -= u
	}
	p.Rem -= run.Seconds() * p.Rate
	if p.Rem < 0 {
		p.Rem = 0
	}
	p.At = now
}

// Executed returns the wall time the job has run so far (its attained service in time).
func (j *Job) Executed(now time.Duration) time.Duration {
	if !j.Running {
		return j.P.Exec
	}
	return j.P.Exec + now - j.P.At
}

// IterTime returns the job's current time per iteration: exclusive time times its slowdown
// while running, the fastest option's exclusive time while pending.
func (j *Job) IterTime() time.Duration {
	if j.Running {
		if ns := float64(j.Options[j.Opt].Excl) * j.Xi; ns < 0x1p63 {
			return time.Duration(ns) // truncated, as always
		}
		return simtime.Never
	}
	return j.Options[j.Fast].Excl
}

// RemTime returns the remaining time at the current iteration time (docs/paper.md §9.3: the SJF key
// of a running job includes its current slowdown).
func (j *Job) RemTime(now time.Duration) time.Duration {
	// In seconds, then nanoseconds: the same float operations as ever, so the same keys.
	if j.Running {
		return RunningRemTime(j.P.RemAt(now), j.Options[j.Opt].Excl, j.Xi)
	}
	return simtime.FromNonNegNanos(j.P.Rem * float64(j.Options[j.Fast].Excl) / 1e9 * 1e9)
}

// RunningRemTime is RemTime of a running job with iters iterations left, exclusive iteration
// time excl and slowdown xi: the one expression, for executors that keep copies of running jobs.
func RunningRemTime(iters float64, excl time.Duration, xi float64) time.Duration {
	return simtime.FromNonNegNanos(iters * float64(excl) * xi / 1e9 * 1e9)
}

// Env holds the run's static facts that policies consult: slowdowns by configuration, the
// sharing mode, and switches for explanations. It also records pairs a policy looked up and
// did not find.
type Env struct {
	MaxShare int
	Mode     profile.Mode
	// Explain asks policies to fill Placement.Reason (set when a decision log is written).
	Explain bool
	// Tags lists the options' tags by Option.Tag (tag 0 stands for none).
	Tags []Tag
	// NCfg is the number of configurations; CfgName names them for messages.
	NCfg    int
	CfgName []string
	// xi[gc][a*NCfg+b] is ξ of configuration a next to b for a job of GPU-count class gc;
	// NaN when the profile lacks the pair.
	xi      [][]float64
	missing map[[2]int]struct{}
	clamped map[[2]int]struct{}
	lookups int64 // pairs looked up
}

// NewEnv returns an Env with nCfg configurations and nGC GPU-count classes, no pairs known.
func NewEnv(maxShare int, mode profile.Mode, names []string, nGC int) *Env {
	n := len(names)
	e := &Env{MaxShare: maxShare, Mode: mode, NCfg: n, CfgName: names,
		xi: make([][]float64, nGC), missing: map[[2]int]struct{}{}, clamped: map[[2]int]struct{}{}}
	for g := range e.xi {
		e.xi[g] = make([]float64, n*n)
		for i := range e.xi[g] {
			e.xi[g][i] = math.NaN()
		}
	}
	return e
}

// SetXi records ξ of configuration a next to b for GPU-count class gc.
func (e *Env) SetXi(gc, a, b int, xi float64) { e.xi[gc][a*e.NCfg+b] = xi }

// Xi returns the slowdown of job a (at option oa) next to job b (at option ob), clamped to ≥ 1.
// ok is false, and the pair is recorded as missing, when the profile lacks either direction:
// such a pair is not shareable.
func (e *Env) Xi(a *Job, oa int, b *Job, ob int) (float64, bool) {
	return e.Pair(a.GC, a.Options[oa].Cfg, b.GC, b.Options[ob].Cfg)
}

// Pair is Xi by GPU-count classes and configurations.
func (e *Env) Pair(gca, ca, gcb, cb int) (float64, bool) {
	e.lookups++
	x := e.xi[gca][ca*e.NCfg+cb]
	y := e.xi[gcb][cb*e.NCfg+ca]
	if math.IsNaN(x) || math.IsNaN(y) {
		if math.IsNaN(x) {
			e.missing[[2]int{ca, cb}] = struct{}{}
		}
		if math.IsNaN(y) {
			e.missing[[2]int{cb, ca}] = struct{}{}
		}
		return 0, false
	}
	if x < 1 {
		e.clamped[[2]int{ca, cb}] = struct{}{}
		x = 1
	}
	return x, true
}

// Classes returns the number of GPU-count classes (values of Job.GC).
func (e *Env) Classes() int { return len(e.xi) }

// RawXi returns ξ of configuration a next to b for GPU-count class gc as the profile gives it:
// NaN when missing, not clamped, and recorded nowhere (for handing the matrices to policies
// outside the process, which then look pairs up themselves).
func (e *Env) RawXi(gc, a, b int) float64 {
	e.lookups++
	return e.xi[gc][a*e.NCfg+b]
}

// Lookups returns how many slowdowns were looked up (Xi, RawXi and the share checks).
func (e *Env) Lookups() int64 { return e.lookups }

// Missing returns the number of distinct ordered configuration pairs looked up and not found.
func (e *Env) Missing() int { return len(e.missing) }

// MissingPairs returns the missing pairs as "a | b" strings.
func (e *Env) MissingPairs() [][2]int {
	out := make([][2]int, 0, len(e.missing))
	for k := range e.missing {
		out = append(out, k)
	}
	return out
}

// Clamped returns the number of distinct pairs whose measured ξ < 1 was used as 1.
func (e *Env) Clamped() int { return len(e.clamped) }
