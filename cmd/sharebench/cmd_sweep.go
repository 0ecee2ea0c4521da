package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/internal/outdir"
)

const sweepLong = `Run one experiment spec (docs/experiments.md): expand its grid of traces, clusters, profiles,
policies and seeds into runs, execute them in parallel (each writing its own run directory
below --out), and aggregate them into the tables (md, csv, LaTeX) and figures the spec asks
for. The paper's experiments are such specs (bench/experiments/paper/): copy one and edit it.

A run whose directory already holds a finished run of the same specification is skipped, so an
interrupted sweep resumes where it stopped; --rerun recomputes everything (do so after changing
sharebench itself). Relative paths in the spec are relative to the spec file; "data:" names
the public data directory and "repo:" the sharebench repository.`

// sweepOpts are the flags of "sharebench sweep".
type sweepOpts struct {
	out, one                        string
	jobs                            int
	rerun, list, figuresOnly, force bool
	timeout                         time.Duration
	sw                              *sweepFlags
}

func newSweepCmd() *cobra.Command {
	var o sweepOpts
	cmd := &cobra.Command{
		Use:   "sweep SPEC.yaml --out DIR [--jobs N] [--rerun] [--backend local|slurm]",
		Short: "run an experiment spec: its runs, tables and figures",
		Long:  sweepLong,
		Example: "  sharebench sweep bench/experiments/paper/E2.yaml --out runs/e2\n" +
			"  sharebench sweep my-experiment.yaml --out runs/mine --jobs 2 --list",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.out, "out", "", "output `directory` (required)")
	fs.IntVar(&o.jobs, "jobs", 0, "runs executed at once (0: GOMAXPROCS)")
	fs.BoolVar(&o.rerun, "rerun", false, "recompute runs whose directory already holds a finished run of the same specification")
	fs.StringVar(&o.one, "run", "", "execute only the run with this `ID or index` (see --list) and write its directory; no aggregation")
	fs.BoolVar(&o.list, "list", false, "print the plan (index and run ID, one per line) and exit")
	fs.BoolVar(&o.figuresOnly, "figures-only", false, "re-render tables and figures from the existing run directories; run nothing")
	fs.BoolVar(&o.force, "force", false, "write into a non-empty --out that is not a sharebench sweep")
	fs.DurationVar(&o.timeout, "run-timeout", 0, "fail a run that takes longer than this `duration` (0: no limit)")
	o.sw = addSweepFlags(fs)
	completeFiles(cmd, []string{"yaml", "yml"})
	completeValues(cmd, "backend", "local", "slurm")
	completeDirs(cmd, "out", "slurm-dir")
	return cmd
}

func (o *sweepOpts) run(ctx context.Context, specPath string, stdout, stderr io.Writer) error {
	defer batchGC()()
	e, err := bench.LoadSpecFile(specPath)
	if err != nil {
		return err
	}
	exps := []bench.Experiment{e}
	plan, err := bench.PlanOf(exps)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if o.list {
		for _, r := range plan {
			fmt.Fprintf(stdout, "%d\t%s\n", r.Index, r.ID)
		}
		return nil
	}
	if o.out == "" {
		return usagef("sweep: --out is required")
	}
	env, err := bench.FindEnvOptional()
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	in := bench.NewInputs(env)
	inputs := append(reproduceInputs(env, plan), specPath)
	dirOpts := outdir.Options{Kind: outdir.Sweep, Inputs: inputs, Force: o.force}
	if o.one != "" {
		r, err := bench.Find(plan, o.one)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		if err := prepareRunOnly(o.out, r.Dir(o.out), dirOpts); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		if err := r.RunWith(ctx, in, o.out); err != nil {
			return fmt.Errorf("sweep: run %s: %w", r.ID, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", r.Dir(o.out))
		return nil
	}
	if _, err := outdir.Prepare(o.out, dirOpts); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	failed := 0
	if !o.figuresOnly {
		if _, err := bench.Prune(o.out, plan); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		todo := plan
		if !o.rerun {
			todo = nil
			for _, r := range plan {
				if !r.Completed(o.out) {
					todo = append(todo, r)
				}
			}
			if skipped := len(plan) - len(todo); skipped > 0 {
				fmt.Fprintf(stderr, "%d of %d runs already done (--rerun recomputes them)\n", skipped, len(plan))
			}
		}
		abs, err := filepath.Abs(specPath)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		outcomes, err := o.sw.sweep(ctx, in, todo, o.out, e.Name, []string{"sweep", abs}, bench.SweepOptions{
			Jobs: o.jobs, RunTimeout: o.timeout, Progress: stderr, Terminal: progressTerminal(stderr)})
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		for _, oc := range outcomes {
			if oc.Err != nil {
				failed++
			}
		}
	}
	failures, err := bench.Aggregate(env, o.out, plan, bench.AggregateOptions{Label: e.Name, Whole: true, Experiments: exps})
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d runs of %s\n", o.out, len(plan), e.Name)
	if len(failures) > 0 || failed > 0 {
		for _, f := range failures {
			fmt.Fprintf(stdout, "FAILED %s: %s\n", f.ID, f.Error)
		}
		return fmt.Errorf("sweep: %d of %d runs failed or have no output (listed in %s)", len(failures), len(plan), filepath.Join(o.out, "failures.md"))
	}
	return nil
}

// batchGC lets the garbage collector of a sweep run less often (GOGC=400) unless the user set
// GOGC: a sweep's live memory is small and it spent about 5 % of its time collecting. A soft
// limit of 2 GiB (unless GOMEMLIMIT is set) makes it collect more often near that. It returns
// the function that restores the settings.
func batchGC() (restore func()) {
	// SetGCPercent reads the setting only by changing it; SetMemoryLimit(-1) just reads.
	gc, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(gc)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
	return func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	}
}
