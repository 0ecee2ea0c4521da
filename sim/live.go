package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// Live is the engine driven by an outside world instead of its own progress model: the caller
// owns the clock and reports which jobs finished and how many iterations each running job has
// left; the engine makes arrivals, policy wake-ups and scheduling rounds happen as Run would,
// builds the same policy.State, validates and applies the policy's plans, and says which
// processes to stop and start (docs/replay.md). Its own predicted completions are never used.
//
// Between two calls to Step the engine's progress figures are stale; Step replaces those of the
// running jobs with the world's before every policy call, so a policy sees the world's figures
// exactly where Run would show its own.
type Live struct {
	e *engine
}

// Placement is one job to start, as Live.Step returns it.
type Placement struct {
	Job  *policy.Job
	GPUs []int // flat GPU indices, ascending
	Opt  int   // index into Job.Options
}

// Changes is what the world must do after a Step: stop these jobs, then start these.
type Changes struct {
	Stop  []trace.JobID
	Start []Placement
}

// NewLive sets a live engine up exactly as Run would set up its simulation (same jobs, options,
// slowdown matrices, notes). Config.OverheadEveryEvent is a property of a simulator, not of a
// world, and is refused.
func NewLive(cfg Config, jobs []trace.Job, p policy.Policy, prof *profile.Table, obs Observer) (*Live, error) {
	if cfg.OverheadEveryEvent {
		return nil, errors.New("sim: the per-event overhead of the Muri simulator has no meaning in a live run")
	}
	e, err := newEngine(cfg, jobs, p, prof, obs)
	if err != nil {
		return nil, err
	}
	e.live = true
	return &Live{e: e}, nil
}

// Now is the engine's time: that of the latest Step.
func (l *Live) Now() time.Duration { return l.e.now }

// Done reports whether every job has finished.
func (l *Live) Done() bool { return l.e.done == len(l.e.jobs) }

// Mode is the sharing mode whose slowdowns apply (the policy's, else Config.Mode).
func (l *Live) Mode() profile.Mode { return l.e.env.Mode }

// Jobs lists the jobs in arrival order. They are the engine's: read them, never modify them.
func (l *Live) Jobs() []*policy.Job { return l.e.jobs }

// Job returns the job with this ID, or nil.
func (l *Live) Job(id trace.JobID) *policy.Job { return l.e.lookup(id) }

// GPUName names a flat GPU index as the decision log does ("node-index").
func (l *Live) GPUName(g int) string { return l.e.gpuName(g) }

// Partners returns the running jobs that share a GPU with running job id, by ID.
func (l *Live) Partners(id trace.JobID) []trace.JobID {
	j := l.e.lookup(id)
	if j == nil || !j.Running {
		return nil
	}
	var out []trace.JobID
	for _, q := range l.e.partners(j, nil) {
		out = append(out, q.ID)
	}
	slices.Sort(out)
	return out
}

// Next returns the time of the engine's next own event (an arrival, a policy wake-up or a
// scheduling round); ok is false when there is none, so only the world can move things on.
func (l *Live) Next() (t time.Duration, ok bool) {
	e := l.e
	t = time.Duration(math.MaxInt64)
	if e.next < len(e.jobs) {
		t, ok = e.jobs[e.next].Submit, true
	}
	for _, ev := range e.q.ev {
		if ev.kind != evFinish && ev.t < t {
			t, ok = ev.t, true
		}
	}
	return t, ok
}

// Stuck is the error of a run in which nothing can happen any more while jobs wait.
func (l *Live) Stuck() error { return l.e.stuck() }

// Step moves the engine to time t (never backwards): the jobs in finished completed (the world
// says so), the arrivals due by t arrive, due wake-ups and rounds fire, and the policy is called
// where Run would call it, after the running jobs' remaining iterations have been set from
// rem. It returns the plan's effect on the world.
//
// Jobs that finish at the same instant are completed in the order Run would pop their
// predicted completions (the order of the engine's latest prediction for each), so a world that
// behaves as the profile says gets Run's decision log.
func (l *Live) Step(t time.Duration, finished []trace.JobID, rem func(trace.JobID) float64) (Changes, error) {
	e := l.e
	t = max(t, e.now)
	if t > Horizon {
		return Changes{}, e.pastHorizon()
	}
	e.advance(t)
	changed, woke, ticked := false, false, false
	for e.next < len(e.jobs) && e.jobs[e.next].Submit <= t {
		e.arrive(int32(e.next))
		e.next++
		changed = true
	}
	left := slices.Clone(finished)
	for len(left) > 0 {
		k := l.firstPredicted(left)
		id := left[k]
		left = slices.Delete(left, k, k+1)
		j := e.lookup(id)
		if j == nil || !j.Running {
			return Changes{}, fmt.Errorf("sim: live: job %d reported finished but is not running", id)
		}
		j.P.Rem = 0
		e.finish(j.Idx)
		changed = true
	}
	for e.q.len() > 0 && e.q.peek() <= t {
		ev := e.q.pop()
		switch ev.kind {
		case evWake:
			if ev.t == e.wake {
				e.wake, woke = 0, true
			}
		case evTick:
			e.tick, ticked = -1, true
		}
	}
	var sched bool
	if e.cfg.Interval > 0 {
		sched = ticked
	} else {
		sched = changed && (e.pend.Len() > 0 || e.everyEvent) || woke
	}
	var ch Changes
	if sched {
		before := make(map[trace.JobID]int, len(e.run))
		for _, j := range e.running() {
			e.settle(j.Idx) // time-based accounting (attained service, restart time) up to now
			r := rem(j.ID)
			if math.IsNaN(r) || r < 0 {
				return Changes{}, fmt.Errorf("sim: live: job %d: remaining iterations %g", j.ID, r)
			}
			j.P.Rem = r
			before[j.ID] = j.Preempts
		}
		if err := e.schedule(); err != nil {
			return Changes{}, err
		}
		ch = l.diff(before)
	}
	if e.cfg.Interval > 0 && e.pend.Len() > 0 && e.tick < 0 {
		next := (t/e.cfg.Interval + 1) * e.cfg.Interval
		if !ticked && t%e.cfg.Interval == 0 {
			next = t
		}
		e.tick = next
		e.q.push(event{t: next, kind: evTick})
	}
	return ch, nil
}

// firstPredicted returns the index in ids of the job whose latest predicted completion the
// engine pushed first; jobs without a live prediction come last, by ID.
func (l *Live) firstPredicted(ids []trace.JobID) int {
	e := l.e
	best, bestSeq := 0, uint64(math.MaxUint64)
	for k, id := range ids {
		j := e.lookup(id)
		if j == nil {
			return k
		}
		seq := uint64(math.MaxUint64)
		if k := e.q.pos[j.Idx]; k >= 0 {
			seq = e.q.ev[k].seq
		}
		if seq < bestSeq || seq == bestSeq && id < ids[best] {
			best, bestSeq = k, seq
		}
	}
	return best
}

// diff lists the jobs a plan stopped and started, given the running jobs before it with their
// preemption counts. A job preempted and placed again by the same plan is both.
func (l *Live) diff(before map[trace.JobID]int) Changes {
	var ch Changes
	for _, j := range l.e.jobs {
		pre, was := before[j.ID]
		restarted := was && j.Preempts > pre
		if was && (!j.Running || restarted) {
			ch.Stop = append(ch.Stop, j.ID)
		}
		if j.Running && (!was || restarted) {
			ch.Start = append(ch.Start, Placement{Job: j, GPUs: slices.Clone(j.On), Opt: j.Opt})
		}
	}
	slices.Sort(ch.Stop)
	return ch
}

// Correct sets the remaining iterations of a job the world stopped to the world's count, as it
// stood when the job's process was gone (a stopped process may finish the step it is in), and
// re-sorts it if it waits (a plan may also have placed it again at once).
func (l *Live) Correct(id trace.JobID, rem float64) error {
	j := l.e.lookup(id)
	if j == nil || j.Done {
		return fmt.Errorf("sim: live: correction of job %d, which is not pending", id)
	}
	if math.IsNaN(rem) || rem < 0 || rem > float64(j.Iters) {
		return fmt.Errorf("sim: live: job %d: remaining iterations %g", id, rem)
	}
	if rem == j.P.Rem {
		return nil
	}
	j.P.Rem = rem
	if j.Running {
		return nil
	}
	return l.e.rekey(id)
}

// Result is the run's outcome in Run's form; it fails until every job has finished.
func (l *Live) Result() (*Result, error) {
	if !l.Done() {
		return nil, fmt.Errorf("sim: live: %d of %d jobs have not finished", len(l.e.jobs)-l.e.done, len(l.e.jobs))
	}
	return l.e.result(), nil
}

// RestartOf returns the restart cost Run charges a job of trace model traceModel (profile model
// profModel) on gpus GPUs after a preemption, so that a world can behave as the simulation does.
func (r RestartCost) RestartOf(prof *profile.Table, traceModel, profModel string, gpus int) time.Duration {
	d, _ := r.restartOf(prof, traceModel, profModel, gpus)
	return d
}
