package replay

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// Virtual is a world that progresses exactly as the profile says, in virtual time: a job runs
// at 1/(t_solo·ξ) iterations per second, ξ the largest profiled slowdown among the jobs on its
// GPUs, and sits out the restart cost after a preemption. It reads its step times and slowdowns
// from the profile itself (the trace's iteration time for a model the profile lacks), not
// from the engine, and keeps its own progress; a replay against it must therefore give the
// decision log and jobs.csv of sim.Run, or the two code paths disagree.
type Virtual struct {
	prof    *profile.Table
	mm      *profile.ModelMap
	restart sim.RestartCost
	mode    profile.Mode
	now     time.Duration
	jobs    map[trace.JobID]*vjob
	on      map[int][]trace.JobID // jobs per flat GPU index
}

type vjob struct {
	j       *policy.Job
	cfg     profile.Config // Model "" when the job runs at the trace's iteration time
	excl    time.Duration
	p       policy.Progress // the engine's progress arithmetic (Exec unused)
	gpus    []int
	running bool
	started bool
	end     time.Duration // predicted completion while running
}

// NewVirtual returns a virtual world for prof (nil: the trace's iteration times, no sharing),
// the model map and the restart cost the simulation charges.
func NewVirtual(prof *profile.Table, mm *profile.ModelMap, restart sim.RestartCost) *Virtual {
	return &Virtual{prof: prof, mm: mm, restart: restart, jobs: map[trace.JobID]*vjob{}, on: map[int][]trace.JobID{}}
}

// Begin takes the sharing mode from the engine (the policy's or the configuration's).
func (v *Virtual) Begin(l *sim.Live) error {
	v.mode = l.Mode()
	return nil
}

// Start places j's remaining iterations on gpus at option opt.
func (v *Virtual) Start(_ context.Context, j *policy.Job, gpus []int, opt int) error {
	vj := v.jobs[j.ID]
	if vj == nil {
		vj = &vjob{j: j, p: policy.Progress{Rem: float64(j.Iters)}}
		v.jobs[j.ID] = vj
	}
	if vj.running {
		return fmt.Errorf("virtual world: job %d started twice", j.ID)
	}
	o := j.Options[opt]
	model, _ := v.mm.Resolve(j.Model, j.Batch)
	vj.cfg, vj.excl = profile.Config{}, j.Job.IterTime
	if v.prof != nil {
		c := profile.Config{Model: model, Batch: o.Batch, SubBatch: o.SubBatch}
		if d, ok := v.prof.IterTime(c, j.GPUs); ok {
			vj.cfg, vj.excl = c, d
		}
	}
	if vj.excl <= 0 {
		return fmt.Errorf("virtual world: job %d: no step time for %s at sub-batch %d", j.ID, model, o.SubBatch)
	}
	for _, id := range v.sharing(gpus) {
		v.settle(v.jobs[id])
	}
	vj.gpus = slices.Clone(gpus)
	vj.running, vj.p.At, vj.p.Overhead = true, v.now, 0
	if vj.started {
		vj.p.Overhead = v.restart.RestartOf(v.prof, j.Model, model, j.GPUs)
	}
	vj.started = true
	for _, g := range gpus {
		v.on[g] = append(v.on[g], j.ID)
	}
	if err := v.rate(vj); err != nil {
		return err
	}
	for _, id := range v.partners(vj) {
		if err := v.rate(v.jobs[id]); err != nil {
			return err
		}
	}
	return nil
}

// Stop takes job id off its GPUs now and returns its remaining iterations.
func (v *Virtual) Stop(_ context.Context, id trace.JobID) (float64, error) {
	vj := v.jobs[id]
	if vj == nil || !vj.running {
		return 0, fmt.Errorf("virtual world: stop of job %d, which is not running", id)
	}
	if err := v.remove(vj); err != nil {
		return 0, err
	}
	vj.p.Overhead = 0
	return vj.p.Rem, nil
}

// Remaining returns the iterations running job id has left now.
func (v *Virtual) Remaining(id trace.JobID) float64 {
	vj := v.jobs[id]
	if vj == nil {
		return 0
	}
	if !vj.running {
		return vj.p.Rem
	}
	return vj.p.RemAt(v.now)
}

// Wait jumps to the next predicted completion when it comes no later than until (or there is
// no until), completing every job that finishes at that instant, else to until.
func (v *Virtual) Wait(_ context.Context, until time.Duration, ok bool) (time.Duration, []trace.JobID, error) {
	first, any := time.Duration(math.MaxInt64), false
	for _, vj := range v.jobs {
		if vj.running && vj.end < first {
			first, any = vj.end, true
		}
	}
	if !any || ok && first > until {
		if ok {
			v.now = max(v.now, until)
		}
		return v.now, nil, nil
	}
	v.now = first
	var done []trace.JobID
	for again := true; again; {
		again = false
		for _, id := range v.runningIDs() {
			vj := v.jobs[id]
			if vj.end != first {
				continue
			}
			if err := v.remove(vj); err != nil {
				return 0, nil, err
			}
			vj.p.Rem = 0
			done = append(done, id)
			again = true // a partner's new prediction may fall on the same instant
		}
	}
	slices.Sort(done)
	return v.now, done, nil
}

// Mark records nothing: the virtual world measures nothing.
func (v *Virtual) Mark(trace.JobID, []trace.JobID, time.Duration, float64) {}

// Close does nothing.
func (v *Virtual) Close() error { return nil }

// remove settles vj and the jobs sharing its GPUs, takes it off them and re-rates those jobs.
func (v *Virtual) remove(vj *vjob) error {
	ps := v.partners(vj)
	v.settle(vj)
	for _, id := range ps {
		v.settle(v.jobs[id])
	}
	for _, g := range vj.gpus {
		v.on[g] = slices.DeleteFunc(v.on[g], func(id trace.JobID) bool { return id == vj.j.ID })
	}
	vj.running, vj.gpus = false, nil
	for _, id := range ps {
		if err := v.rate(v.jobs[id]); err != nil {
			return err
		}
	}
	return nil
}

// settle brings a running job's progress up to now.
func (v *Virtual) settle(vj *vjob) {
	if vj.running && v.now > vj.p.At {
		vj.p.Advance(v.now)
	}
}

// rate sets a running job's speed from the slowdowns of the jobs on its GPUs and predicts its
// completion.
func (v *Virtual) rate(vj *vjob) error {
	xi := 1.0
	for _, id := range v.partners(vj) {
		q := v.jobs[id]
		if vj.cfg.Model == "" || q.cfg.Model == "" || v.prof == nil {
			return fmt.Errorf("virtual world: jobs %d and %d share a GPU but one of them is not in the profile", vj.j.ID, id)
		}
		x, ok := v.prof.Slowdown(vj.cfg, q.cfg, vj.j.GPUs, v.mode)
		if !ok {
			return fmt.Errorf("virtual world: the profile has no slowdown of %s next to %s", vj.cfg, q.cfg)
		}
		xi = max(xi, max(x, 1))
	}
	vj.p.Rate = 1 / (vj.excl.Seconds() * xi)
	vj.end = v.now + vj.p.Overhead + time.Duration(math.Round(vj.p.Rem/vj.p.Rate*1e9))
	return nil
}

// partners lists the other jobs on vj's GPUs, by ID.
func (v *Virtual) partners(vj *vjob) []trace.JobID {
	var out []trace.JobID
	for _, id := range v.sharing(vj.gpus) {
		if id != vj.j.ID {
			out = append(out, id)
		}
	}
	return out
}

// sharing lists the jobs on any of gpus, by ID.
func (v *Virtual) sharing(gpus []int) []trace.JobID {
	var out []trace.JobID
	for _, g := range gpus {
		for _, id := range v.on[g] {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

func (v *Virtual) runningIDs() []trace.JobID {
	var out []trace.JobID
	for id, vj := range v.jobs {
		if vj.running {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
