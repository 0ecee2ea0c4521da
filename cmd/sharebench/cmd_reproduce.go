package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/sharebench/sharebench/bench"
)

// cmdReproduce implements "sharebench reproduce": it expands the experiments of a label into
// runs, executes them in parallel (each writing its own run directory), and aggregates the run
// directories into tables and figures.
func cmdReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reproduce", "reproduce [--label paper|smoke] [--out DIR] [--jobs N] [--only E2,...] [--run ID|INDEX] [--figures-only] [--list]", stderr)
	label := fs.String("label", bench.LabelPaper, "experiments to run: `paper` (the full reproduction) or smoke (seconds)")
	out := fs.String("out", "", "output `directory` (default results/<label>)")
	jobs := fs.Int("jobs", 0, "runs executed at once (0: GOMAXPROCS)")
	only := fs.String("only", "", "comma-separated `experiments` to run and aggregate (E2 also selects E2-*)")
	one := fs.String("run", "", "execute only the run with this `ID or index` of the plan (see --list) and write its directory; no aggregation")
	figuresOnly := fs.Bool("figures-only", false, "re-render tables and figures from the existing run directories; run nothing")
	list := fs.Bool("list", false, "print the plan (index and run ID, one per line) and exit")
	timeout := fs.Duration("run-timeout", 0, "fail a run that takes longer than this `duration` (0: no limit)")
	sw := addSweepFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	plan := bench.Plan(*label)
	if len(plan) == 0 {
		return fmt.Errorf("reproduce: unknown label %q (known: %s)", *label, strings.Join(bench.Labels(), ", "))
	}
	var sel []string
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			if s = strings.TrimSpace(s); s != "" {
				sel = append(sel, s)
			}
		}
	}
	runs, err := bench.Select(plan, sel)
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	if *list {
		for _, r := range runs {
			fmt.Fprintf(stdout, "%d\t%s\n", r.Index, r.ID)
		}
		return nil
	}
	if *out == "" {
		*out = filepath.Join("results", *label)
	}
	env, err := bench.FindEnv()
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	in := bench.NewInputs(env)
	if *one != "" {
		r, err := bench.Find(plan, *one)
		if err != nil {
			return fmt.Errorf("reproduce: %w", err)
		}
		start := time.Now()
		if err := r.RunWith(ctx, in, *out); err != nil {
			return fmt.Errorf("reproduce: run %s: %w", r.ID, err)
		}
		fmt.Fprintf(stderr, "run %s done in %.1f s\n", r.ID, time.Since(start).Seconds())
		fmt.Fprintf(stdout, "wrote %s\n", r.Dir(*out))
		return nil
	}
	whole := len(sel) == 0
	var failed int
	if !*figuresOnly {
		if whole {
			removed, err := bench.Prune(*out, plan)
			for _, p := range removed {
				fmt.Fprintf(stderr, "removed %s (not in the %s plan)\n", filepath.Join(*out, p), *label)
			}
			if err != nil {
				return fmt.Errorf("reproduce: %w", err)
			}
		}
		outcomes, err := sw.sweep(ctx, in, runs, *out, *label, bench.SweepOptions{
			Jobs: *jobs, RunTimeout: *timeout, Progress: stderr, Terminal: progressTerminal(stderr)})
		if err != nil {
			return fmt.Errorf("reproduce: %w", err)
		}
		for _, o := range outcomes {
			if o.Err != nil {
				failed++
			}
		}
	}
	start := time.Now()
	failures, err := bench.Aggregate(env, *out, runs, bench.AggregateOptions{Label: *label, Whole: whole, ProfileJSON: *label != bench.LabelSmoke})
	if err != nil {
		return fmt.Errorf("reproduce: %w", err)
	}
	fmt.Fprintf(stderr, "tables and figures written in %.1f s\n", time.Since(start).Seconds())
	fmt.Fprintf(stdout, "wrote %s: %d runs of %d experiments (label %s)\n", *out, len(runs), countExperiments(runs), *label)
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Fprintf(stdout, "FAILED %s: %s\n", f.ID, f.Error)
		}
		where := ""
		if whole {
			where = " (listed in " + filepath.Join(*out, "failures.md") + ")"
		}
		return fmt.Errorf("reproduce: %d of %d runs failed or have no output%s", len(failures), len(runs), where)
	}
	if failed > 0 {
		return errors.New("reproduce: some runs failed")
	}
	return nil
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
