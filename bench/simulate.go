package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// SimSpec describes one simulation run.
type SimSpec struct {
	// Jobs is the trace; TraceName labels it in outputs and errors.
	Jobs      []trace.Job
	TraceName string
	Shape     cluster.Shape
	// Policy is a registry key, a key with JSON arguments, or an alias.
	Policy      string
	Profile     *profile.Table
	ProfileName string
	ModelMap    *profile.ModelMap
	Interval    time.Duration
	// DropOversized drops jobs larger than the cluster instead of failing.
	DropOversized bool
	Restart       sim.RestartCost
	// IterScale and OverheadEveryEvent are the Muri simulator's lineage effects (sim.Config).
	IterScale          float64
	OverheadEveryEvent bool
	Seed               uint64
	Labels             map[string]string
	// Observer, when set, also receives the decision log.
	Observer sim.Observer
	// Progress, when set, hears of finished jobs (sim.Config.Progress); not when the result
	// comes from a sweep's memo.
	Progress func(done, total int)
	// share, when set, runs the simulation through a sweep's memo (memo.go).
	share shareFunc
}

// Simulate runs spec. When out is not empty it writes the run directory there atomically,
// including the decision log when decisions is set.
func Simulate(ctx context.Context, spec SimSpec, out string, decisions bool) (*sim.Result, error) {
	p, err := builtin.Registry().New(spec.Policy)
	if err != nil {
		return nil, err
	}
	if spec.Profile != nil {
		if err := CheckModels(spec.Jobs, spec.TraceName, spec.Profile, spec.ModelMap); err != nil {
			return nil, err
		}
	}
	jobs, dropped, err := trace.DropOversized(spec.Jobs, spec.TraceName, spec.Shape.GPUs(), spec.DropOversized)
	if err != nil {
		return nil, fmt.Errorf("%w (the cluster has %d GPUs; --drop-oversized drops such jobs)", err, spec.Shape.GPUs())
	}
	cfg := sim.Config{Shape: spec.Shape, Interval: spec.Interval, Restart: spec.Restart, IterScale: spec.IterScale, OverheadEveryEvent: spec.OverheadEveryEvent,
		ModelMap: spec.ModelMap, TraceName: spec.TraceName, Progress: spec.Progress}
	var dir *sim.RunDir
	var obs sim.Observer
	var flush func() error
	var logFile io.WriteCloser
	if out != "" {
		if dir, err = sim.CreateRunDir(out); err != nil {
			return nil, err
		}
		defer func() {
			if dir != nil {
				dir.Abort()
			}
		}()
		if decisions {
			f, err := createFile(dir.Path(sim.DecisionsFile))
			if err != nil {
				return nil, err
			}
			logFile = f
			defer logFile.Close()
			obs, flush = sim.JSONLBackground(f)
			defer flush() // ends the writer before the file closes, also when the run fails
		}
	}
	if o := spec.Observer; o != nil {
		if prev := obs; prev != nil {
			obs = func(e sim.Event) { prev(e); o(e) }
		} else {
			obs = o
		}
	}
	run := func() (*sim.Result, error) {
		res, err := sim.Run(ctx, cfg, jobs, p, spec.Profile, obs)
		return res, endPolicy(p, res, err)
	}
	var res *sim.Result
	if spec.share != nil && obs == nil {
		key, kerr := simKey(jobs, spec.Profile)
		if kerr != nil {
			return nil, kerr
		}
		res, err = spec.share(ctx, key, run)
	} else {
		res, err = run()
	}
	if err != nil {
		return nil, err
	}
	s := &res.Summary
	s.Policy = policyLabel(spec.Policy)
	if key, args, err := builtin.Registry().Resolve(spec.Policy); err == nil {
		s.PolicySpec = key + string(args)
	}
	s.Seed = spec.Seed
	s.DroppedJobs = dropped
	if dropped > 0 {
		s.Notes = append([]string{fmt.Sprintf("%d jobs asked for more than the cluster's %d GPUs and were dropped", dropped, spec.Shape.GPUs())}, s.Notes...)
	}
	if spec.Profile != nil {
		s.Profile = filepath.Base(spec.ProfileName)
		s.ProfileSource = spec.Profile.Source
	}
	s.Labels = spec.Labels
	if dir == nil {
		return res, nil
	}
	// While the decision log's last lines are written.
	if err := dir.WriteFile(sim.SummaryFile, func(w io.Writer) error { return writeSummary(w, res, "") }); err != nil {
		return nil, err
	}
	if err := dir.WriteFile(sim.JobsFile, func(w io.Writer) error { return sim.WriteJobs(w, res.Jobs) }); err != nil {
		return nil, err
	}
	if err := dir.WriteFile(sim.UtilFile, func(w io.Writer) error { return sim.WriteUtil(w, res.Util) }); err != nil {
		return nil, err
	}
	if flush != nil {
		if err := flush(); err != nil {
			return nil, fmt.Errorf("output: %s: %w", sim.DecisionsFile, err)
		}
		if err := logFile.Close(); err != nil {
			return nil, fmt.Errorf("output: %s: %w", sim.DecisionsFile, err)
		}
	}
	if err := dir.Commit(); err != nil {
		return nil, err
	}
	dir = nil
	return res, nil
}

// CheckModels returns trace.CheckModels' error for the first job whose model, renamed through
// the model map (nil: none), the profile does not know. It copies no job, and checks each
// model and batch once (a trace repeats a few of them over all its jobs).
func CheckModels(jobs []trace.Job, file string, prof *profile.Table, mm *profile.ModelMap) error {
	known := prof.ModelNames()
	type modelBatch struct {
		model string
		batch int
	}
	checked := make(map[modelBatch]bool)
	for _, j := range jobs {
		k := modelBatch{j.Model, j.Batch}
		if checked[k] {
			continue
		}
		if j.Model, _ = mm.Resolve(j.Model, j.Batch); !slices.Contains(known, j.Model) {
			return fmt.Errorf("%w (use --model-map to map trace models onto the profile)", trace.CheckModels([]trace.Job{j}, file, known))
		}
		checked[k] = true
	}
	return nil
}
