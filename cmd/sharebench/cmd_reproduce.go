package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/internal/outdir"
)

const reproduceLong = `Run the paper's experiments (REPRODUCE.md): expand the experiments of a label into runs,
execute them in parallel (each writing its own run directory below --out), and aggregate the
run directories into tables (md, csv, LaTeX) and figures. "make reproduce" runs the paper label
into results/paper; "make smoke" runs the smoke label and compares it with results/smoke.

--out must be new, empty or a reproduction sharebench wrote (with the .sharebench marker, or
the README.md reproduce writes); --force writes into another directory anyway. Reproduce
replaces there only what it writes: the run directories of the plan, each experiment's tables/
and figures/, profiles/, README.md, claims.* and failures.*. A directory holding an input
(the module root, the data directory, a profile or trace of the plan) is never accepted.`

// reproduceOpts are the flags of "sharebench reproduce".
type reproduceOpts struct {
	label, out, only, one    string
	profile, modelMap, exps  string
	jobs                     int
	figuresOnly, list, force bool
	timeout                  time.Duration
	sw                       *sweepFlags
}

func newReproduceCmd() *cobra.Command {
	var o reproduceOpts
	cmd := &cobra.Command{
		Use:   "reproduce [--label paper|smoke] [--out DIR] [--jobs N] [--only E2,...] [--run ID|INDEX] [--figures-only] [--list]",
		Short: "run the paper's experiments and write tables and figures",
		Long:  reproduceLong,
		Example: "  sharebench reproduce --label smoke --out /tmp/smoke\n" +
			"  sharebench reproduce --only E2 --jobs 2\n" +
			"  sharebench reproduce --list",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.label, "label", bench.LabelPaper, "`label` of the experiments to run: paper (the full reproduction) or smoke (seconds); with --profile, any name for the results (results/LABEL)")
	fs.StringVar(&o.profile, "profile", "", "rerun the paper's experiments with this profile `file` instead of the shipped Gavel V100 one (e.g. one measured by sharebench profile run)")
	fs.StringVar(&o.exps, "experiments", bench.LabelPaper, "with --profile: the shipped `experiments` to rerun (paper or smoke)")
	fs.StringVar(&o.modelMap, "model-map", "", "with --profile: the model-map `file` from the traces' models onto the profile's (default: none, the profile names the authors' models)")
	fs.StringVar(&o.out, "out", "", "output `directory` (default results/<label>)")
	fs.IntVar(&o.jobs, "jobs", 0, "runs executed at once (0: GOMAXPROCS)")
	fs.StringVar(&o.only, "only", "", "comma-separated `experiments` to run and aggregate (E2 also selects E2-*)")
	fs.StringVar(&o.one, "run", "", "execute only the run with this `ID or index` of the plan (see --list) and write its directory; no aggregation")
	fs.BoolVar(&o.figuresOnly, "figures-only", false, "re-render tables and figures from the existing run directories; run nothing")
	fs.BoolVar(&o.list, "list", false, "print the plan (index and run ID, one per line) and exit")
	fs.BoolVar(&o.force, "force", false, "write into a non-empty --out that is not a sharebench reproduction")
	fs.DurationVar(&o.timeout, "run-timeout", 0, "fail a run that takes longer than this `duration` (0: no limit)")
	o.sw = addSweepFlags(fs)
	completeLabels(cmd)
	completeValues(cmd, "backend", "local", "slurm")
	completeDirs(cmd, "out", "slurm-dir")
	return cmd
}

// run implements "sharebench reproduce": it expands the experiments of a label into runs,
// executes them in parallel (each writing its own run directory), and aggregates the run
// directories into tables and figures.
func (o *reproduceOpts) run(ctx context.Context, stdout, stderr io.Writer) error {
	defer batchGC()()
	exps, err := o.experiments()
	if err != nil {
		return err
	}
	plan, err := bench.PlanOf(exps)
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	var sel []string
	if o.only != "" {
		for _, s := range strings.Split(o.only, ",") {
			if s = strings.TrimSpace(s); s != "" {
				sel = append(sel, s)
			}
		}
	}
	runs, err := bench.Select(plan, sel)
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	if o.list {
		for _, r := range runs {
			fmt.Fprintf(stdout, "%d\t%s\n", r.Index, r.ID)
		}
		return nil
	}
	if o.out == "" {
		o.out = filepath.Join("results", o.label)
	}
	env, err := bench.FindEnv()
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	in := bench.NewInputs(env)
	dirOpts := outdir.Options{Kind: outdir.Reproduce, Inputs: reproduceInputs(env, plan), Force: o.force}
	if o.one != "" {
		r, err := bench.Find(plan, o.one)
		if err != nil {
			return fmt.Errorf("reproduce: %w", err)
		}
		if err := prepareRunOnly(o.out, r.Dir(o.out), dirOpts); err != nil {
			return fmt.Errorf("reproduce: %w", err)
		}
		start := time.Now()
		if err := r.RunWith(ctx, in, o.out); err != nil {
			return fmt.Errorf("reproduce: run %s: %w", r.ID, err)
		}
		fmt.Fprintf(stderr, "run %s done in %.1f s\n", r.ID, time.Since(start).Seconds())
		fmt.Fprintf(stdout, "wrote %s\n", r.Dir(o.out))
		return nil
	}
	if _, err := outdir.Prepare(o.out, dirOpts); err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	whole := len(sel) == 0
	var failed int
	if !o.figuresOnly {
		if whole {
			removed, err := bench.Prune(o.out, plan)
			for _, p := range removed {
				fmt.Fprintf(stderr, "removed %s (not in the %s plan)\n", filepath.Join(o.out, p), o.label)
			}
			if err != nil {
				return fmt.Errorf("reproduce: %w", err)
			}
		}
		outcomes, err := o.sw.sweep(ctx, in, runs, o.out, o.label, o.taskCommand(), bench.SweepOptions{
			Jobs: o.jobs, RunTimeout: o.timeout, Progress: stderr, Terminal: progressTerminal(stderr)})
		if err != nil {
			return fmt.Errorf("reproduce: %w", err)
		}
		for _, oc := range outcomes {
			if oc.Err != nil {
				failed++
			}
		}
	}
	start := time.Now()
	failures, err := bench.Aggregate(env, o.out, runs, bench.AggregateOptions{Label: o.label, Whole: whole, ProfileJSON: o.label != bench.LabelSmoke, Experiments: exps})
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	fmt.Fprintf(stderr, "tables and figures written in %.1f s\n", time.Since(start).Seconds())
	fmt.Fprintf(stdout, "wrote %s: %d runs of %d experiments (label %s)\n", o.out, len(runs), countExperiments(runs), o.label)
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Fprintf(stdout, "FAILED %s: %s\n", f.ID, f.Error)
		}
		where := ""
		if whole {
			where = " (listed in " + filepath.Join(o.out, "failures.md") + ")"
		}
		return fmt.Errorf("reproduce: %d of %d runs failed or have no output%s", len(failures), len(runs), where)
	}
	if failed > 0 {
		return errors.New("reproduce: some runs failed")
	}
	return nil
}

// experiments returns the experiments to run: the shipped ones of the label, or with --profile
// the paper's, with the profile (and model map) in place of the shipped default.
func (o *reproduceOpts) experiments() ([]bench.Experiment, error) {
	shipped := slices.Contains(bench.Labels(), o.label)
	switch {
	case o.profile == "" && o.modelMap != "":
		return nil, usagef("reproduce: --model-map needs --profile")
	case o.profile == "" && !shipped:
		return nil, usagef("reproduce: unknown label %q (known: %s; any other label needs --profile)", o.label, strings.Join(bench.Labels(), ", "))
	case o.profile == "":
		return bench.Experiments(o.label), nil
	case shipped:
		return nil, usagef("reproduce: --profile writes its own results: give it a --label other than %s (e.g. the GPU's name)", strings.Join(bench.Labels(), " or "))
	}
	abs := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("reproduce: %w", err)
		}
		return filepath.Abs(p)
	}
	prof, err := abs(o.profile)
	if err != nil {
		return nil, err
	}
	mm, err := abs(o.modelMap)
	if err != nil {
		return nil, err
	}
	o.profile, o.modelMap = prof, mm
	if !slices.Contains(bench.Labels(), o.exps) {
		return nil, usagef("reproduce: --experiments %q: want one of %s", o.exps, strings.Join(bench.Labels(), ", "))
	}
	// Inside the repository the runs name their inputs as "repo:" names, as the shipped
	// experiments do, so that committed results carry no path of the machine that ran them.
	env, err := bench.FindEnvOptional()
	if err != nil {
		return nil, fmt.Errorf("reproduce: %w", err)
	}
	return bench.WithProfile(bench.Experiments(o.exps), repoName(env.Root, prof), repoName(env.Root, mm)), nil
}

// repoName returns the "repo:" name of the absolute path p when it lies inside the module root
// root, else p.
func repoName(root, p string) string {
	if root == "" || p == "" {
		return p
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return "repo:" + filepath.ToSlash(rel)
}

// taskCommand is the sharebench invocation a batch task runs one run of the plan with.
func (o *reproduceOpts) taskCommand() []string {
	cmd := []string{"reproduce", "--label", o.label}
	if o.profile != "" {
		cmd = append(cmd, "--experiments", o.exps, "--profile", o.profile)
		if o.modelMap != "" {
			cmd = append(cmd, "--model-map", o.modelMap)
		}
	}
	return cmd
}

// reproduceInputs lists what a plan reads: the module root, the data directories, and every
// trace, profile and model map the runs name. The output directory may contain none of them.
func reproduceInputs(env bench.Env, plan []bench.RunSpec) []string {
	inputs := []string{env.Root, env.Data, env.Fallback}
	seen := map[string]bool{}
	for _, r := range plan {
		for _, name := range []string{r.Trace.File, r.Profile.File, r.Profile.ModelMap} {
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			if p, err := env.Path(name); err == nil {
				inputs = append(inputs, p)
			}
		}
	}
	return inputs
}

// prepareRunOnly checks the output of "reproduce --run": the one run directory it replaces
// must be new, empty or a run directory; the root, which a batch of such tasks shares, only
// must not hold an input, and gets its marker when it is new.
func prepareRunOnly(root, runDir string, opt outdir.Options) error {
	rootOpt := opt
	rootOpt.Force = true // the tasks write below a root their submitter has checked
	st, err := outdir.Check(root, rootOpt)
	if err != nil {
		return err
	}
	runOpt := opt
	runOpt.Kind = outdir.Run
	if _, err := outdir.Check(runDir, runOpt); err != nil {
		return err
	}
	if st == outdir.New {
		_, err = outdir.Prepare(root, opt)
	}
	return err
}

// countExperiments counts the distinct experiments of runs.
func countExperiments(runs []bench.RunSpec) int {
	seen := map[string]bool{}
	for _, r := range runs {
		seen[r.Experiment] = true
	}
	return len(seen)
}

// progressTerminal reports whether w is a terminal: the sweep draws a progress bar there, and
// plain lines otherwise.
func progressTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
