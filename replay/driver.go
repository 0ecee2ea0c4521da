package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/policy/external"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// A World runs the jobs a replay starts. The driver calls it from one goroutine.
type World interface {
	// Begin is called once, before anything starts, with the live engine (read-only).
	Begin(l *sim.Live) error
	// Start launches job j's remaining iterations on the flat GPU indices gpus with option opt.
	// It returns once the launch is under way, not when the job has warmed up.
	Start(ctx context.Context, j *policy.Job, gpus []int, opt int) error
	// Stop ends job id's current attempt and returns once it is gone, with the iterations the
	// job has left (its completed steps count, whatever the engine assumed).
	Stop(ctx context.Context, id trace.JobID) (rem float64, err error)
	// Remaining returns the iterations running job id has left now.
	Remaining(id trace.JobID) float64
	// Wait blocks until a job finishes, or until time until when ok, and returns the time and
	// the jobs that finished then (none at the deadline). With !ok and nothing running it
	// returns at once.
	Wait(ctx context.Context, until time.Duration, ok bool) (now time.Duration, finished []trace.JobID, err error)
	// Mark tells the world which jobs running job id shares its GPUs with from now on, and the
	// step time the engine assumes for it there (exclusive time × ξ), for its measurements.
	Mark(id trace.JobID, partners []trace.JobID, profileStep time.Duration, xi float64)
	// Close stops whatever still runs.
	Close() error
}

// Spec is a replay: the inputs of a simulation, played against a world.
type Spec struct {
	Jobs      []trace.Job
	TraceName string
	Shape     cluster.Shape
	// Policy is a built-in policy spec (a key with JSON arguments, or an alias).
	Policy      string
	Profile     *profile.Table
	ProfileName string
	ModelMap    *profile.ModelMap
	Interval    time.Duration
	// Restart is the restart cost the engine's state assumes after a preemption (the world
	// charges the real one).
	Restart sim.RestartCost
	Seed    uint64
	// TimeScale multiplies every submit time (0 or 1: unchanged), so a trace fits a time budget.
	TimeScale float64
	Labels    map[string]string
}

// ScaledJobs returns the trace with its submit times multiplied by the time scale.
func (s *Spec) ScaledJobs() ([]trace.Job, error) {
	k := s.TimeScale
	if k == 0 || k == 1 {
		return slices.Clone(s.Jobs), nil
	}
	if math.IsNaN(k) || k < 0 || k > 1e6 {
		return nil, fmt.Errorf("replay: time scale %g: want a number in (0, 1e6]", k)
	}
	out := slices.Clone(s.Jobs)
	for i := range out {
		v := math.Round(float64(out[i].Submit) * k)
		if v > math.MaxInt64/2 {
			return nil, fmt.Errorf("replay: job %d: scaled submit time out of range", out[i].ID)
		}
		out[i].Submit = time.Duration(v)
	}
	return out, nil
}

// Run replays spec against w: it returns the run's result in the simulator's form (times
// are the world's), with obs receiving the decision log. w is closed on return.
func Run(ctx context.Context, spec Spec, w World, obs sim.Observer) (res *sim.Result, err error) {
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if _, ok := external.Parse(spec.Policy); ok {
		return nil, errors.New("replay: external policies are not supported; use a built-in policy")
	}
	p, err := builtin.Registry().New(spec.Policy)
	if err != nil {
		return nil, err
	}
	jobs, err := spec.ScaledJobs()
	if err != nil {
		return nil, err
	}
	cfg := sim.Config{Shape: spec.Shape, Interval: spec.Interval, Restart: spec.Restart, ModelMap: spec.ModelMap, TraceName: spec.TraceName}
	live, err := sim.NewLive(cfg, jobs, p, spec.Profile, obs)
	if err != nil {
		return nil, err
	}
	if err := w.Begin(live); err != nil {
		return nil, err
	}
	marked := map[trace.JobID][]trace.JobID{}
	for !live.Done() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		until, ok := live.Next()
		now, fin, err := w.Wait(ctx, until, ok)
		if err != nil {
			return nil, err
		}
		if !ok && len(fin) == 0 {
			return nil, fmt.Errorf("replay: %w", live.Stuck())
		}
		ch, err := live.Step(now, fin, w.Remaining)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		for _, id := range ch.Stop {
			rem, err := w.Stop(ctx, id)
			if err != nil {
				return nil, err
			}
			delete(marked, id)
			if err := live.Correct(id, rem); err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
		}
		for _, pl := range ch.Start {
			if err := w.Start(ctx, pl.Job, pl.GPUs, pl.Opt); err != nil {
				return nil, err
			}
		}
		for _, id := range fin {
			delete(marked, id)
		}
		// Tell the world where each running job now stands, for its measurements.
		for _, j := range live.Jobs() {
			if !j.Running {
				continue
			}
			ps := live.Partners(j.ID)
			if old, seen := marked[j.ID]; seen && slices.Equal(old, ps) && !slices.ContainsFunc(ch.Start, func(pl sim.Placement) bool { return pl.Job == j }) {
				continue
			}
			marked[j.ID] = ps
			w.Mark(j.ID, ps, time.Duration(float64(j.Options[j.Opt].Excl)*j.Xi), j.Xi)
		}
	}
	res, err = live.Result()
	if err != nil {
		return nil, err
	}
	s := &res.Summary
	s.Policy = spec.Policy
	if key, args, err := builtin.Registry().Resolve(spec.Policy); err == nil {
		s.PolicySpec = key + string(args)
	}
	s.Seed = spec.Seed
	if spec.Profile != nil {
		s.Profile = filepath.Base(spec.ProfileName)
		s.ProfileSource = spec.Profile.Source
	}
	s.Labels = spec.Labels
	if k := spec.TimeScale; k != 0 && k != 1 {
		s.Notes = append(s.Notes, fmt.Sprintf("submit times are the trace's multiplied by %g", k))
	}
	return res, nil
}
