package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/results"
)

// analysisFlags returns a FlagSet for the analysis commands: errors are returned, not fatal,
// and the usage text goes to stderr.
func analysisFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sharebench %s\n\n%s\n\nflags:\n", synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// errAnalysisHelp means -h was given and the usage was printed: the command succeeds.
var errAnalysisHelp = errors.New("help shown")

// parseInterleaved parses flags that may come before, between or after the positional
// arguments (sharebench table RUN_DIR --format md) and returns the positional arguments.
// "--" ends flag parsing.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errAnalysisHelp
			}
			return nil, errUsageShown
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// helpIsSuccess turns errAnalysisHelp into success.
func helpIsSuccess(err error) error {
	if errors.Is(err, errAnalysisHelp) {
		return nil
	}
	return err
}

// loadRunArgs loads the runs named on the command line: each argument is a run directory
// (it holds summary.json) or a root under which run directories are discovered.
func loadRunArgs(paths []string) ([]*results.Run, error) {
	if len(paths) == 0 {
		return nil, errors.New("no run directory given")
	}
	var dirs []string
	seen := map[string]bool{}
	for _, p := range paths {
		found, err := results.Discover(p)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no run directories (with %s) found", p, results.SummaryFile)
		}
		for _, d := range found {
			if c := filepath.Clean(d); !seen[c] {
				seen[c] = true
				dirs = append(dirs, d)
			}
		}
	}
	return results.LoadRuns(dirs...)
}

// runFilter selects runs by experiment, trace and labels; empty fields keep all.
type runFilter struct {
	experiment, trace string
	labels            [][2]string
}

// addFlags registers --experiment, --trace and the repeatable --label KEY=VALUE.
func (f *runFilter) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.experiment, "experiment", "", "keep only runs with this experiment label")
	fs.StringVar(&f.trace, "trace", "", "keep only runs of this trace (the trace label, else the trace file)")
	fs.Func("label", "keep only runs whose label `KEY=VALUE` matches (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", s)
		}
		f.labels = append(f.labels, [2]string{strings.TrimPrefix(k, "labels."), v})
		return nil
	})
}

func (f *runFilter) keep(r *results.Run) bool {
	if f.experiment != "" && r.Experiment() != f.experiment {
		return false
	}
	if f.trace != "" && r.Trace() != f.trace {
		return false
	}
	for _, kv := range f.labels {
		if v, ok := r.Label(kv[0]); !ok || v != kv[1] {
			return false
		}
	}
	return true
}

// apply returns the runs f keeps, or an error naming the experiments and traces present.
func (f *runFilter) apply(runs []*results.Run) ([]*results.Run, error) {
	var out []*results.Run
	exps, traces := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		exps[r.Experiment()] = true
		traces[r.Trace()] = true
		if f.keep(r) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no runs match the filters (experiments: %s; traces: %s)", keyList(exps), keyList(traces))
	}
	return out, nil
}

func keyList(m map[string]bool) string {
	var ks []string
	for k := range m {
		if k == "" {
			k = `""`
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

// writeOutput writes data to path atomically, or to stdout when path is empty or "-".
func writeOutput(path string, data []byte, stdout io.Writer) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	return analysis.WriteFileAtomic(path, data)
}

const tableAbout = `Tabulate simulation run directories. Each RUN_DIR is a run directory (it holds
summary.json) or a root under which run directories are found.

kinds:
  summary  average JCT per experiment × trace × policy with 95% CIs over seeds and
           Δ avg JCT vs the baseline (negative = better), p99, makespan, queueing, util
  claims   the paper's claims (T1 vs tiresias, T2 vs sjf-ffs) beside ours, with a verdict
  jobs     per-job statistics pooled over seeds (JCT and queueing quantiles, shares)`

// cmdTable implements "sharebench table".
func cmdTable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := analysisFlags("table", "table RUN_DIR... [--kind summary|claims|jobs] [--format text|md|csv|latex] [--out FILE]", tableAbout, stderr)
	format := fs.String("format", "text", "output `format`: text, md, csv or latex")
	kind := fs.String("kind", "summary", "table `kind`: summary, claims or jobs")
	out := fs.String("out", "", "write to `FILE` (atomically) instead of standard output")
	baseline := fs.String("baseline", analysis.DefaultBaseline, "`policy` that Δ avg JCT is computed against (summary)")
	var filter runFilter
	filter.addFlags(fs)
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	f, err := analysis.ParseFormat(*format)
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	runs, err := loadRunArgs(paths)
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	if runs, err = filter.apply(runs); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	var t analysis.Table
	switch *kind {
	case "summary":
		t, err = analysis.Summarize(runs, analysis.SummaryOptions{Baseline: *baseline})
	case "claims":
		t, err = analysis.Claims(runs)
	case "jobs":
		t, err = analysis.JobStats(runs)
	default:
		return fmt.Errorf("table: unknown --kind %q (known: summary, claims, jobs)", *kind)
	}
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Render(&buf, f); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	if err := writeOutput(*out, buf.Bytes(), stdout); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	return nil
}

const plotAbout = `Plot simulation run directories; the output format follows the extension of --out
(.png, .svg or .pdf). Each RUN_DIR is a run directory or a root to search.

kinds:
  avg-jct    grouped bars of a metric (average JCT) per trace and policy, 95% CI error bars
  jct-cdf    empirical CDF of JCT, one line per policy (runs of one trace)
  queue-cdf  empirical CDF of queueing delay (runs of one trace)
  util       busy and shared GPUs over time from util.csv (runs of one trace)
  curve      a metric (average JCT) against a numeric label (--x), one line per policy
             or variant, with 95% CI bands`

// cmdPlot implements "sharebench plot".
func cmdPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := analysisFlags("plot", "plot RUN_DIR... --kind avg-jct|jct-cdf|queue-cdf|util|curve [--x LABEL] [--log-x] --out FIG.{png,svg,pdf}", plotAbout, stderr)
	kind := fs.String("kind", "", "figure `kind`: avg-jct, jct-cdf, queue-cdf, util or curve (required)")
	out := fs.String("out", "", "output `file`: .png, .svg or .pdf (required)")
	x := fs.String("x", "", "curve: the numeric `label` on the x axis, e.g. gpu_mem_gib or labels.load")
	metric := fs.String("metric", "avg-jct", "avg-jct and curve: the `metric` plotted: "+metricNames())
	logX := fs.Bool("log-x", false, "log-scale x axis (CDFs, curve)")
	title := fs.String("title", "", "figure title (default: derived from the runs)")
	var filter runFilter
	filter.addFlags(fs)
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if *out == "" {
		return errors.New("plot: --out FILE is required")
	}
	switch ext := strings.ToLower(filepath.Ext(*out)); ext {
	case ".png", ".svg", ".pdf":
	default:
		return fmt.Errorf("plot: --out %s: unknown extension %q (want .png, .svg or .pdf)", *out, ext)
	}
	m, err := analysis.MetricByName(*metric)
	if err != nil {
		return fmt.Errorf("plot: --metric: %w", err)
	}
	runs, err := loadRunArgs(paths)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if runs, err = filter.apply(runs); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	var fig *analysis.Figure
	switch *kind {
	case "avg-jct":
		fig, err = analysis.AvgJCTBars(runs, analysis.BarOptions{Metric: m, Title: *title})
	case "jct-cdf":
		fig, err = analysis.JCTCDF(runs, analysis.CDFOptions{LogX: *logX, Title: *title})
	case "queue-cdf":
		fig, err = analysis.QueueCDF(runs, analysis.CDFOptions{LogX: *logX, Title: *title})
	case "util":
		fig, err = analysis.UtilOverTime(runs, analysis.UtilOptions{Title: *title})
	case "curve":
		if *x == "" {
			return errors.New("plot: --kind curve needs --x LABEL")
		}
		fig, err = analysis.Curve(runs, analysis.CurveOptions{X: *x, Metric: m, LogX: *logX, Title: *title})
	case "":
		return errors.New("plot: --kind is required (avg-jct, jct-cdf, queue-cdf, util or curve)")
	default:
		return fmt.Errorf("plot: unknown --kind %q (known: avg-jct, jct-cdf, queue-cdf, util, curve)", *kind)
	}
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := fig.Save(*out); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func metricNames() string {
	var names []string
	for _, m := range analysis.Metrics() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// ensureDir creates dir (and parents) for output files.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return nil
}
