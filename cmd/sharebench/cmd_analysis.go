package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gonum.org/v1/plot/vg"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/results"
)

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
func (f *runFilter) addFlags(fs *pflag.FlagSet) {
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

// tableOpts are the flags of "sharebench table".
type tableOpts struct {
	format, kind, out, baseline string
	filter                      runFilter
}

func newTableCmd() *cobra.Command {
	var o tableOpts
	cmd := &cobra.Command{
		Use:   "table RUN_DIR... [--kind summary|claims|jobs] [--format text|md|csv|latex] [--out FILE]",
		Short: "tabulate simulation run directories (md, csv, latex)",
		Long:  tableAbout,
		Example: "  sharebench table runs/ --format md\n" +
			"  sharebench table results/paper/E2 --kind claims --format latex --out claims.tex",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output `format`: text, md, csv or latex")
	f.StringVar(&o.kind, "kind", "summary", "table `kind`: summary, claims or jobs")
	f.StringVar(&o.out, "out", "", "write to `FILE` (atomically) instead of standard output")
	f.StringVar(&o.baseline, "baseline", analysis.DefaultBaseline, "`policy` that Δ avg JCT is computed against (summary)")
	o.filter.addFlags(f)
	completeValues(cmd, "format", "text", "md", "csv", "latex")
	completeValues(cmd, "kind", "summary", "claims", "jobs")
	completeFiles(cmd, nil, "out")
	return cmd
}

// run implements "sharebench table".
func (o *tableOpts) run(paths []string, stdout io.Writer) error {
	if len(paths) == 0 {
		return usagef("table: no run directory given")
	}
	if !slices.Contains([]string{"summary", "claims", "jobs"}, o.kind) {
		return usagef("table: unknown --kind %q (known: summary, claims, jobs)", o.kind)
	}
	f, err := analysis.ParseFormat(o.format)
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	runs, err := loadRunArgs(paths)
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	if runs, err = o.filter.apply(runs); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	var t analysis.Table
	switch o.kind {
	case "summary":
		t, err = analysis.Summarize(runs, analysis.SummaryOptions{Baseline: o.baseline})
	case "claims":
		t, err = analysis.Claims(runs)
	case "jobs":
		t, err = analysis.JobStats(runs)
	}
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Render(&buf, f); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	if err := writeOutput(o.out, buf.Bytes(), stdout); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	return nil
}

const plotAbout = `Plot simulation run directories into a PNG, SVG or PDF figure. The format is
--format, else the extension of --out. Each RUN_DIR is a run directory or a root to search.

kinds:
  avg-jct    grouped bars of a metric (average JCT) per trace and policy, 95% CI error bars
  jct-cdf    empirical CDF of JCT, one line per policy (runs of one trace)
  queue-cdf  empirical CDF of queueing delay (runs of one trace)
  util       busy and shared GPUs over time from util.csv (runs of one trace)
  curve      a metric (average JCT) against a numeric label (--x), one line per policy
             or variant, with 95% CI bands
  forest     every row of the paper's claims table: Δ average JCT with its 95% CI, one
             panel per comparison, the paper's claimed range shaded

--normalize POLICY divides every run's metric by that of POLICY's run with the same setting
and seed (avg-jct and curve): ratios paired by seed, on a linear axis with a line at 1.

Axes are logarithmic where the values span more than a decade (the y axis of avg-jct and
curve, the x axis of the CDFs); --log-x / --log-y force a log axis, --log-x=false /
--log-y=false a linear one. Every policy has the same colour, pattern and marker in every
figure.`

// plotOpts are the flags of "sharebench plot".
type plotOpts struct {
	kind, out, x, metric, title, format string
	normalize                           string
	width, height                       string
	fontSize                            float64
	logX, logY                          bool
	filter                              runFilter
}

func newPlotCmd() *cobra.Command {
	var o plotOpts
	cmd := &cobra.Command{
		Use:   "plot RUN_DIR... --kind avg-jct|jct-cdf|queue-cdf|util|curve|forest [--x LABEL] --out FIG.{png,svg,pdf}",
		Short: "plot simulation run directories (png, svg, pdf)",
		Long:  plotAbout,
		Example: "  sharebench plot runs/ --kind jct-cdf --out jct.svg\n" +
			"  sharebench plot results/paper/E6-load --kind curve --x labels.load --out load.pdf\n" +
			"  sharebench plot results/paper/E2 --kind avg-jct --width 8.5cm --height 6cm --font-size 7 --out e2.pdf",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(args, cmd.Flags(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kind, "kind", "", "figure `kind`: avg-jct, jct-cdf, queue-cdf, util, curve or forest (required)")
	f.StringVar(&o.normalize, "normalize", "", "avg-jct and curve: divide by this `policy`'s run of the same setting and seed")
	f.StringVar(&o.out, "out", "", "output `file` (.png, .svg or .pdf), or - for standard output with --format (required)")
	f.StringVar(&o.format, "format", "", "figure `format`: png, svg or pdf (default: the extension of --out)")
	f.StringVar(&o.x, "x", "", "curve: the numeric `label` on the x axis, e.g. gpu_mem_gib or labels.load")
	f.StringVar(&o.metric, "metric", "avg-jct", "avg-jct and curve: the `metric` plotted: "+metricNames())
	f.BoolVar(&o.logX, "log-x", false, "log-scale x axis (CDFs, curve); --log-x=false forces linear (default: log for CDFs spanning more than a decade)")
	f.BoolVar(&o.logY, "log-y", false, "log-scale y axis (avg-jct, curve); --log-y=false forces linear (default: log when the values span more than a decade)")
	f.StringVar(&o.width, "width", "", "figure `width`, e.g. 16cm, 6.3in, 450pt (a bare number is cm; default: the kind's own)")
	f.StringVar(&o.height, "height", "", "figure `height`, like --width")
	f.Float64Var(&o.fontSize, "font-size", 0, "size of tick labels and legend text in `points`; titles and axis labels scale with it (default 8.5)")
	f.StringVar(&o.title, "title", "", "figure title (default: derived from the runs)")
	o.filter.addFlags(f)
	required(cmd, "kind", "out")
	completeValues(cmd, "kind", "avg-jct", "jct-cdf", "queue-cdf", "util", "curve", "forest")
	completeValues(cmd, "format", "png", "svg", "pdf")
	completeFiles(cmd, []string{"png", "svg", "pdf"}, "out")
	var metrics []string
	for _, m := range analysis.Metrics() {
		metrics = append(metrics, m.Name)
	}
	completeValues(cmd, "metric", metrics...)
	return cmd
}

// parseLength parses a figure dimension: a number with a unit cm, mm, in or pt, or a bare
// number of centimetres.
func parseLength(s string) (vg.Length, error) {
	units := []struct {
		suffix string
		unit   vg.Length
	}{{"cm", vg.Centimeter}, {"mm", vg.Millimeter}, {"in", vg.Inch}, {"pt", vg.Points(1)}, {"", vg.Centimeter}}
	t := strings.TrimSpace(strings.ToLower(s))
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				break
			}
			l := vg.Length(v) * u.unit
			if l < 2*vg.Centimeter || l > 200*vg.Centimeter {
				return 0, fmt.Errorf("%q is outside 2–200 cm", s)
			}
			return l, nil
		}
	}
	return 0, fmt.Errorf("want a positive length such as 16cm, 160mm, 6.3in or 450pt, got %q", s)
}

// scaleFlag turns a boolean --log-x/--log-y into an axis scale: auto when not given.
func scaleFlag(fs *pflag.FlagSet, name string, v bool) analysis.Scale {
	switch {
	case !fs.Changed(name):
		return analysis.ScaleAuto
	case v:
		return analysis.ScaleLog
	}
	return analysis.ScaleLinear
}

// run implements "sharebench plot".
func (o *plotOpts) run(paths []string, fs *pflag.FlagSet, stdout io.Writer) error {
	if len(paths) == 0 {
		return usagef("plot: no run directory given")
	}
	format := strings.ToLower(o.format)
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(o.out)), ".")
	switch {
	case format != "" && !slices.Contains([]string{"png", "svg", "pdf"}, format):
		return usagef("plot: unknown --format %q (known: png, svg, pdf)", o.format)
	case format == "" && o.out == "-":
		return usagef("plot: --out - needs --format png, svg or pdf")
	case format == "" && !slices.Contains([]string{"png", "svg", "pdf"}, ext):
		return usagef("plot: --out %s: unknown extension %q (want .png, .svg or .pdf, or give --format)", o.out, filepath.Ext(o.out))
	case format != "" && o.out != "-" && slices.Contains([]string{"png", "svg", "pdf"}, ext) && ext != format:
		return usagef("plot: --format %s does not match --out %s", format, o.out)
	case format == "":
		format = ext
	}
	switch {
	case o.kind == "":
		return usagef("plot: --kind is required (avg-jct, jct-cdf, queue-cdf, util, curve or forest)")
	case !slices.Contains([]string{"avg-jct", "jct-cdf", "queue-cdf", "util", "curve", "forest"}, o.kind):
		return usagef("plot: unknown --kind %q (known: avg-jct, jct-cdf, queue-cdf, util, curve, forest)", o.kind)
	case o.normalize != "" && !slices.Contains([]string{"avg-jct", "curve"}, o.kind):
		return usagef("plot: --normalize applies to avg-jct and curve, not %s", o.kind)
	case o.kind == "curve" && o.x == "":
		return usagef("plot: --kind curve needs --x LABEL")
	case fs.Changed("log-x") && !slices.Contains([]string{"jct-cdf", "queue-cdf", "curve"}, o.kind):
		return usagef("plot: --log-x applies to jct-cdf, queue-cdf and curve, not %s", o.kind)
	case fs.Changed("log-y") && !slices.Contains([]string{"avg-jct", "curve"}, o.kind):
		return usagef("plot: --log-y applies to avg-jct and curve, not %s", o.kind)
	case fs.Changed("font-size") && !(o.fontSize >= 4 && o.fontSize <= 40):
		return usagef("plot: --font-size %v: want 4–40 points", o.fontSize)
	}
	var width, height vg.Length
	for _, d := range []struct {
		flag, v string
		dst     *vg.Length
	}{{"width", o.width, &width}, {"height", o.height, &height}} {
		if d.v == "" {
			continue
		}
		l, err := parseLength(d.v)
		if err != nil {
			return usagef("plot: --%s: %w", d.flag, err)
		}
		*d.dst = l
	}
	m, err := analysis.MetricByName(o.metric)
	if err != nil {
		return usagef("plot: --metric: %w", err)
	}
	runs, err := loadRunArgs(paths)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if runs, err = o.filter.apply(runs); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	xScale, yScale := scaleFlag(fs, "log-x", o.logX), scaleFlag(fs, "log-y", o.logY)
	var fig *analysis.Figure
	switch o.kind {
	case "avg-jct":
		fig, err = analysis.AvgJCTBars(runs, analysis.BarOptions{Metric: m, YScale: yScale, Title: o.title, Normalize: o.normalize})
	case "jct-cdf":
		fig, err = analysis.JCTCDF(runs, analysis.CDFOptions{XScale: xScale, Title: o.title})
	case "queue-cdf":
		fig, err = analysis.QueueCDF(runs, analysis.CDFOptions{XScale: xScale, Title: o.title})
	case "util":
		fig, err = analysis.UtilOverTime(runs, analysis.UtilOptions{Title: o.title})
	case "curve":
		fig, err = analysis.Curve(runs, analysis.CurveOptions{X: o.x, Metric: m, LogX: xScale == analysis.ScaleLog, YScale: yScale, Title: o.title,
			Normalize: o.normalize})
	case "forest":
		var set *analysis.ClaimSet
		if set, err = analysis.CheckClaims(runs); err == nil {
			fig, err = analysis.ForestPlot(set)
		}
	}
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if width > 0 {
		fig.Width = width
	}
	if height > 0 {
		fig.Height = height
	}
	if o.fontSize > 0 {
		fig.SetFontSize(vg.Points(o.fontSize))
	}
	var buf bytes.Buffer
	if err := fig.Encode(&buf, format); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := writeOutput(o.out, buf.Bytes(), stdout); err != nil {
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
