package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// Files a run directory holds besides the simulator's (sim.SummaryFile, sim.JobsFile,
// sim.UtilFile, sim.DecisionsFile).
const (
	// RunFile is run.json: the resolved run specification and the trace's statistics.
	RunFile = "run.json"
	// FailureFile is failure.json, the only file of a failed run's directory.
	FailureFile = "failure.json"
)

// RunRecord is the content of run.json: what was run, and the trace as the simulator saw it.
type RunRecord struct {
	// Spec is the run specification.
	Spec *RunSpec `json:"spec"`
	// Profile is the profile file name recorded in summary.json.
	Profile string `json:"profile"`
	// TraceStats describes the trace under the run's profile.
	TraceStats TraceStats `json:"trace_stats"`
	// OfferedLoad is the trace's offered load on the run's cluster.
	OfferedLoad float64 `json:"offered_load"`
	// Candidates lists the offered load on other cluster sizes (Spec.LoadCandidates).
	Candidates []LoadAt `json:"load_candidates,omitempty"`
	// JobsKept is the number of jobs in jobs.csv (all, or the sample Spec.Keep asks for).
	JobsKept int `json:"jobs_kept"`
	// PolicyCommand is the command line of an external policy.
	PolicyCommand string `json:"policy_command,omitempty"`
}

// LoadAt is the offered load of a trace on a cluster of GPUs GPUs.
type LoadAt struct {
	GPUs        int     `json:"gpus"`
	OfferedLoad float64 `json:"offered_load"`
}

// Failure records a run that failed: the content of failure.json, and an entry of the
// aggregated failures list.
type Failure struct {
	// ID is the run's ID.
	ID string `json:"id"`
	// Error is the error message ("missing" for a planned run with no output).
	Error string `json:"error"`
}

// Completed reports whether the run's directory below outRoot holds a finished run of exactly
// this specification (its run.json and summary.json), so that a resumed sweep can skip it.
func (r *RunSpec) Completed(outRoot string) bool {
	dir := r.Dir(outRoot)
	if !fileExists(filepath.Join(dir, sim.SummaryFile)) {
		return false
	}
	data, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return false
	}
	var rec struct {
		Spec json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(data, &rec) != nil {
		return false
	}
	want, err := json.Marshal(r)
	if err != nil {
		return false
	}
	var a, b any
	return json.Unmarshal(rec.Spec, &a) == nil && json.Unmarshal(want, &b) == nil && reflect.DeepEqual(a, b)
}

// Run executes the run alone, reading inputs through FindEnv, and writes its directory below
// outRoot (see RunWith).
func (r *RunSpec) Run(ctx context.Context, outRoot string) error {
	env, err := FindEnv()
	if err != nil {
		return err
	}
	return r.RunWith(ctx, NewInputs(env), outRoot)
}

// RunWith executes the run with the inputs in, and writes its directory outRoot/ID
// atomically, replacing an older one: summary.json, jobs.csv, util.csv, run.json and, if
// asked for, decisions.jsonl. A failure of the run itself is recorded in a directory that
// holds only failure.json, and returned; the sweep goes on. Cancellation of ctx is returned
// without a record.
func (r *RunSpec) RunWith(ctx context.Context, in *Inputs, outRoot string) error {
	err := r.execute(ctx, in, outRoot)
	if err == nil || ctx.Err() != nil {
		return err
	}
	if rerr := writeFailure(r.Dir(outRoot), Failure{ID: r.ID, Error: err.Error()}); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// writeFailure replaces the run directory dir by one holding failure.json.
func writeFailure(dir string, f Failure) error {
	d, err := sim.CreateRunDir(dir)
	if err != nil {
		return err
	}
	if err := d.WriteFile(FailureFile, func(w io.Writer) error { return writeJSON(w, f) }); err != nil {
		d.Abort()
		return err
	}
	if err := d.Commit(); err != nil {
		d.Abort()
		return err
	}
	return nil
}

func (r *RunSpec) execute(ctx context.Context, in *Inputs, outRoot string) error {
	mm, err := in.ModelMap(r.Profile.ModelMap)
	if err != nil {
		return err
	}
	prof, err := in.Profile(r.Profile)
	if err != nil {
		return err
	}
	shape := r.Cluster.Shape()
	if err := shape.Validate(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	jobs, stats, err := in.memo.runInputs(r, func() ([]trace.Job, TraceStats, error) {
		jobs, err := in.Jobs(r.Trace, r.Seed, prof, mm, shape.GPUs(), shape.GPUMemBytes)
		if err != nil {
			return nil, TraceStats{}, err
		}
		stats, err := Stats(jobs, prof, mm, shape.GPUMemBytes)
		if err != nil {
			return nil, TraceStats{}, fmt.Errorf("bench: trace %s: %w", r.Trace.Name, err)
		}
		return jobs, stats, nil
	})
	if err != nil {
		return err
	}
	rec := RunRecord{Spec: r, Profile: r.Profile.Name(), TraceStats: stats, OfferedLoad: round6(stats.OfferedLoad(shape.GPUs())),
		PolicyCommand: policyCommand(r.Policy)}
	for _, g := range r.LoadCandidates {
		rec.Candidates = append(rec.Candidates, LoadAt{GPUs: g, OfferedLoad: round6(stats.OfferedLoad(g))})
	}

	dir, err := sim.CreateRunDir(r.Dir(outRoot))
	if err != nil {
		return err
	}
	defer func() {
		if dir != nil {
			dir.Abort()
		}
	}()
	restart, err := r.Engine.restart()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	spec := SimSpec{Jobs: jobs, TraceName: r.traceName(), Shape: shape, Policy: r.Policy, Profile: prof,
		ProfileName: rec.Profile, ModelMap: mm, Interval: time.Duration(r.Interval), DropOversized: r.DropOversized,
		Restart: restart, IterScale: r.Engine.IterTimeScale, OverheadEveryEvent: r.Engine.OverheadEveryEvent,
		Seed: r.Seed, Labels: r.Labels, share: in.memo.share(r)}
	var flush func() error
	var logFile *os.File
	if r.Keep.DecisionsUpTo > 0 && len(jobs) <= r.Keep.DecisionsUpTo {
		if logFile, err = os.Create(dir.Path(sim.DecisionsFile)); err != nil {
			return fmt.Errorf("output: %w", err)
		}
		defer logFile.Close()
		spec.Observer, flush = sim.JSONLBackground(logFile)
		defer flush() // ends the writer before the file closes, also when the run fails
	}
	res, err := Simulate(ctx, spec, "", false)
	if err != nil {
		return err
	}
	if flush != nil {
		if err := flush(); err != nil {
			return fmt.Errorf("output: %s: %w", sim.DecisionsFile, err)
		}
		if err := logFile.Close(); err != nil {
			return fmt.Errorf("output: %s: %w", sim.DecisionsFile, err)
		}
	}
	every := r.Keep.jobsEvery(len(res.Jobs))
	kept := sampleJobs(res.Jobs, every)
	rec.JobsKept = len(kept)
	if every > 1 {
		res.Summary.Notes = append(res.Summary.Notes, fmt.Sprintf(
			"jobs.csv keeps 1 job in %d, in job-id order (%d of %d: a systematic sample that keeps committed outputs small); summary.json covers every job", every, len(kept), len(res.Jobs)))
	}
	util := coarsenUtil(res.Util, res.Summary.Makespan, r.Keep.UtilRows)
	files := []struct {
		name string
		fn   func(io.Writer) error
	}{
		{sim.SummaryFile, func(w io.Writer) error { return writeSummary(w, res, r.Profile.counterfactual()) }},
		{sim.JobsFile, func(w io.Writer) error { return sim.WriteJobs(w, kept) }},
		{sim.UtilFile, func(w io.Writer) error { return sim.WriteUtil(w, util) }},
		{RunFile, func(w io.Writer) error { return writeJSON(w, rec) }},
	}
	for _, f := range files {
		if err := dir.WriteFile(f.name, f.fn); err != nil {
			return err
		}
	}
	if err := dir.Commit(); err != nil {
		return err
	}
	dir = nil
	return nil
}

// traceName is the trace's file name, or a description of a generated trace.
func (r *RunSpec) traceName() string {
	if r.Trace.Gen != nil {
		return "generated from " + filepath.Base(strings.TrimPrefix(r.Trace.Gen.Pool, "data:"))
	}
	return filepath.Base(strings.TrimPrefix(r.Trace.File, "data:"))
}

// sampleJobs returns every n-th job (all when n ≤ 1).
func sampleJobs(jobs []sim.JobResult, n int) []sim.JobResult {
	if n <= 1 {
		return jobs
	}
	out := make([]sim.JobResult, 0, (len(jobs)+n-1)/n)
	for i := 0; i < len(jobs); i += n {
		out = append(out, jobs[i])
	}
	return out
}

// coarsenUtil merges the simulator's equal-width utilization buckets k at a time into at most
// maxRows buckets (0: unchanged). Each merged value is the time-weighted average of its
// buckets, so it equals the average over the merged span; only the last bucket, cut at the
// makespan, is narrower than the others.
func coarsenUtil(rows []sim.UtilRow, makespanS float64, maxRows int) []sim.UtilRow {
	if maxRows <= 0 || len(rows) <= maxRows || len(rows) < 2 {
		return rows
	}
	k := (len(rows) + maxRows - 1) / maxRows
	width := (rows[1].T - rows[0].T).Seconds()
	end := makespanS
	out := make([]sim.UtilRow, 0, maxRows)
	for i := 0; i < len(rows); i += k {
		var m sim.UtilRow
		m.T = rows[i].T
		var total float64
		for _, r := range rows[i:min(i+k, len(rows))] {
			w := math.Max(0, math.Min(width, end-r.T.Seconds()))
			total += w
			m.Busy += r.Busy * w
			m.Shared += r.Shared * w
			m.Running += r.Running * w
			m.Pending += r.Pending * w
		}
		if total > 0 {
			m.Busy, m.Shared, m.Running, m.Pending = m.Busy/total, m.Shared/total, m.Running/total, m.Pending/total
		}
		out = append(out, m)
	}
	return out
}

// writeJSON writes v as indented JSON with a trailing newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
