package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/internal/outdir"
	"github.com/sharebench/sharebench/results"
	"github.com/sharebench/sharebench/sim"
)

// Options are what Execute needs beyond the Spec.
type Options struct {
	// Out is the run directory to write (checked by the caller with internal/outdir).
	Out string
	// NewWorld builds the world; steps is the directory for its raw logs.
	NewWorld func(steps string) (World, error)
	// Backend names the world in the manifest and the notes.
	Backend string
	// Simulate also simulates the same inputs into Out/sim and compares the two (Out/fidelity).
	Simulate bool
	// Manifest is completed and written as replay.json.
	Manifest Manifest
	// Progress receives the decision log as it happens, one line per event (nil: none).
	Progress io.Writer
}

// Outcome is what Execute did.
type Outcome struct {
	Result   *sim.Result
	Sim      *sim.Result
	Fidelity *analysis.FidelityReport
}

// measurer is a world that measured something (Procs).
type measurer interface {
	Attempts() []Attempt
	Segments() []Segment
}

// Execute replays spec into the run directory o.Out: summary.json, jobs.csv, util.csv and
// decisions.jsonl as the simulator writes them, the raw step logs under steps/, segments.csv,
// attempts.csv and replay.json; with o.Simulate also sim/ and fidelity/. The directory is
// written next to o.Out and moved into place at the end; a replay that fails still moves its
// logs there, with failure.json saying why, so nothing measured is lost.
func Execute(ctx context.Context, spec Spec, o Options) (*Outcome, error) {
	dir, err := sim.CreateRunDir(o.Out)
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			dir.Abort()
		}
	}()
	w, err := o.NewWorld(dir.Path(StepsDir))
	if err != nil {
		return nil, err
	}
	f, err := os.Create(dir.Path(sim.DecisionsFile))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("output: %w", err)
	}
	defer f.Close()
	obs, flush := sim.JSONLWriter(f)
	if o.Progress != nil {
		file := obs
		pw, pflush := sim.JSONLWriter(o.Progress)
		obs = func(e sim.Event) {
			file(e)
			if e.Kind != sim.Submit {
				pw(e)
				pflush()
			}
		}
	}
	t0 := time.Now()
	res, runErr := Run(ctx, spec, w, obs)
	wall := time.Since(t0)
	if err := flush(); err != nil && runErr == nil {
		runErr = fmt.Errorf("output: %s: %w", sim.DecisionsFile, err)
	}
	if err := f.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("output: %s: %w", sim.DecisionsFile, err)
	}
	var atts []Attempt
	if m, ok := w.(measurer); ok {
		atts = m.Attempts()
		if err := dir.WriteFile(results.AttemptsFile, func(wr io.Writer) error { return WriteAttempts(wr, atts) }); err != nil && runErr == nil {
			runErr = err
		}
		if err := dir.WriteFile(results.SegmentsFile, func(wr io.Writer) error { return WriteSegments(wr, m.Segments()) }); err != nil && runErr == nil {
			runErr = err
		}
	}
	man := o.Manifest
	man.Backend, man.WallS, man.Attempts = o.Backend, wall.Round(time.Millisecond).Seconds(), len(atts)
	if err := dir.WriteFile(ManifestFile, func(wr io.Writer) error { return WriteManifest(wr, &man) }); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		fail := &Failure{Error: runErr.Error(), AtS: wall.Seconds(), Jobs: len(spec.Jobs)}
		if err := dir.WriteFile(FailureFile, func(wr io.Writer) error { return WriteFailure(wr, fail) }); err != nil {
			return nil, errors.Join(runErr, err)
		}
		if err := commit(dir, o.Out); err != nil {
			return nil, errors.Join(runErr, err)
		}
		committed = true
		return nil, fmt.Errorf("%w (the logs so far are in %s)", runErr, o.Out)
	}
	if len(atts) > 0 {
		Measured(&res.Summary, atts, o.Backend)
	}
	if err := dir.WriteResult(res); err != nil {
		return nil, err
	}
	out := &Outcome{Result: res}
	if o.Simulate {
		jobs, _ := spec.ScaledJobs()
		ss := bench.SimSpec{Jobs: jobs, TraceName: spec.TraceName, Shape: spec.Shape, Policy: spec.Policy, Profile: spec.Profile,
			ProfileName: spec.ProfileName, ModelMap: spec.ModelMap, Interval: spec.Interval, Restart: spec.Restart, Seed: spec.Seed,
			Labels: spec.Labels}
		if out.Sim, err = bench.Simulate(ctx, ss, dir.Path(SimDir), true); err != nil {
			return nil, err
		}
		if out.Fidelity, err = Compare(dir.Path(""), dir.Path(SimDir)); err != nil {
			return nil, err
		}
		if err := WriteFidelity(dir.Path(FidelityDir), out.Fidelity); err != nil {
			return nil, err
		}
	}
	if err := commit(dir, o.Out); err != nil {
		return nil, err
	}
	committed = true
	return out, nil
}

func commit(dir *sim.RunDir, out string) error {
	if err := dir.Commit(); err != nil {
		return err
	}
	return outdir.WriteMarker(out, OutKind)
}

// Compare loads a replay's run directory and a simulation's and compares them.
func Compare(realDir, simDir string) (*analysis.FidelityReport, error) {
	in := analysis.FidelityRuns{}
	var err error
	if in.Real, err = results.LoadRun(realDir); err != nil {
		return nil, err
	}
	if in.Sim, err = results.LoadRun(simDir); err != nil {
		return nil, err
	}
	if in.RealLog, err = results.ReadDecisions(realDir); err != nil {
		return nil, err
	}
	if in.SimLog, err = results.ReadDecisions(simDir); err != nil {
		return nil, err
	}
	if in.Segments, err = results.ReadSegments(realDir); err != nil {
		return nil, err
	}
	if in.Attempts, err = results.ReadAttempts(realDir); err != nil {
		return nil, err
	}
	return analysis.Fidelity(in)
}

// WriteFidelity writes the fidelity tables (fidelity.md, fidelity.csv, fidelity.tex) and
// figures (SVG) into dir.
func WriteFidelity(dir string, f *analysis.FidelityReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	tables := f.Tables()
	for _, x := range []struct {
		name string
		f    analysis.Format
	}{{"fidelity.md", analysis.Markdown}, {"fidelity.tex", analysis.LaTeX}} {
		var buf bytes.Buffer
		if err := analysis.RenderAll(&buf, x.f, tables...); err != nil {
			return err
		}
		if err := analysis.WriteFileAtomic(filepath.Join(dir, x.name), buf.Bytes()); err != nil {
			return err
		}
	}
	for i, name := range []string{"fidelity.csv", "fidelity-jobs.csv"} {
		var buf bytes.Buffer
		if err := tables[i].Render(&buf, analysis.CSV); err != nil {
			return err
		}
		if err := analysis.WriteFileAtomic(filepath.Join(dir, name), buf.Bytes()); err != nil {
			return err
		}
	}
	figs, err := f.Figures()
	if err != nil {
		return err
	}
	for _, nf := range figs {
		if err := nf.Figure.Save(filepath.Join(dir, nf.Name+".svg")); err != nil {
			return err
		}
	}
	return nil
}
