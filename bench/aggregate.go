package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/results"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
	"golang.org/x/sync/errgroup"
)

// FigureFormats returns the figure formats drawn for a label: SVG only for the smoke goldens
// (byte-stable, diffable, small), PNG, SVG and PDF otherwise.
func FigureFormats(label string) []string {
	if label == LabelSmoke {
		return []string{"svg"}
	}
	return []string{"png", "svg", "pdf"}
}

// tableFormats returns the table formats written, with their file extensions.
func tableFormats() []struct {
	f   analysis.Format
	ext string
} {
	return []struct {
		f   analysis.Format
		ext string
	}{{analysis.Markdown, "md"}, {analysis.CSV, "csv"}, {analysis.LaTeX, "tex"}}
}

// AggregateOptions configures Aggregate.
type AggregateOptions struct {
	// Label is the plan's label (for the index and the figure formats).
	Label string
	// Formats are the figure formats; empty means FigureFormats(Label).
	Formats []string
	// Whole writes the top-level files too (README.md, claims.*, failures.*, profiles/): set it
	// when the selection is the whole plan.
	Whole bool
	// ProfileJSON also writes derived profiles as JSON to profiles/ (about 1 MB each).
	ProfileJSON bool
	// Experiments are the experiments of the plan; empty means the shipped ones of Label.
	Experiments []Experiment
}

// Aggregate is the deterministic aggregation step: from the run directories of the planned
// runs below outRoot (and the committed profiles), it writes per experiment the tables
// (tables/) and figures (figures/), and for the whole plan the index, the claims table, the
// failures list and the profile figures. It reads only the files runs write, so merging run
// directories produced anywhere (one batch task per run) gives the same bytes as a local
// sweep. Planned runs without output are reported as missing. It returns the failed or missing
// runs in plan order.
func Aggregate(env Env, outRoot string, plan []RunSpec, opt AggregateOptions) ([]Failure, error) {
	exps := opt.Experiments
	if len(exps) == 0 {
		exps = Experiments(opt.Label)
	}
	return aggregate(env, outRoot, plan, exps, opt)
}

// aggregate is Aggregate for the runs of the given experiments.
func aggregate(env Env, outRoot string, plan []RunSpec, table []Experiment, opt AggregateOptions) ([]Failure, error) {
	formats := opt.Formats
	if len(formats) == 0 {
		formats = FigureFormats(opt.Label)
	}
	exps := map[string]Experiment{}
	for _, e := range table {
		exps[e.Name] = e
	}
	var failures []Failure
	loaded := map[string]*results.Run{}
	for i := range plan {
		r := &plan[i]
		run, fail, err := loadRun(r.Dir(outRoot), r.ID)
		if err != nil {
			return nil, err
		}
		if fail != nil {
			failures = append(failures, *fail)
			continue
		}
		loaded[r.ID] = run
	}
	fw := newFigureWriter()
	failures, err := aggregateAll(env, outRoot, plan, exps, opt, formats, failures, loaded, fw)
	// Every figure queued is written (or has failed) before aggregate returns, even on error.
	if ferr := fw.wait(); err == nil && ferr != nil {
		return nil, ferr
	}
	return failures, err
}

// aggregateAll writes the tables of the experiments and of the whole plan; figs draws their
// figures (fw).
func aggregateAll(env Env, outRoot string, plan []RunSpec, exps map[string]Experiment, opt AggregateOptions, formats []string, failures []Failure, loaded map[string]*results.Run, fw *figureWriter) ([]Failure, error) {
	var claimRuns []*results.Run
	var index []indexEntry
	for _, name := range experimentNames(plan) {
		e, ok := exps[name]
		if !ok {
			return nil, fmt.Errorf("bench: aggregate: experiment %s is not in the table", name)
		}
		var specs []*RunSpec
		for i := range plan {
			if plan[i].Experiment == name {
				specs = append(specs, &plan[i])
			}
		}
		runs, err := aggregateExperiment(filepath.Join(outRoot, name), e, specs, loaded, formats, fw)
		if err != nil {
			return nil, fmt.Errorf("bench: aggregate %s: %w", name, err)
		}
		if e.Analysis.Claims {
			claimRuns = append(claimRuns, runs...)
		}
		index = append(index, indexEntry{e: e, specs: specs, done: len(runs)})
	}
	if !opt.Whole {
		return failures, nil
	}
	if len(claimRuns) > 0 {
		set, err := analysis.CheckClaims(claimRuns)
		if err != nil {
			return nil, fmt.Errorf("bench: aggregate: claims: %w", err)
		}
		claims := set.Table()
		claims.Title = "Paper claims vs this reproduction (average JCT), every experiment that checks them"
		if err := writeTable(outRoot, "claims", claims); err != nil {
			return nil, err
		}
		if len(set.Rows) > 0 {
			fig, err := analysis.ForestPlot(set)
			if err != nil {
				return nil, fmt.Errorf("bench: aggregate: forest plot: %w", err)
			}
			if err := fw.save(outRoot, "forest", fig, formats); err != nil {
				return nil, err
			}
		}
	}
	if err := writeFailures(outRoot, failures); err != nil {
		return nil, err
	}
	if err := writeProfiles(env, filepath.Join(outRoot, "profiles"), plan, formats, opt.ProfileJSON, fw); err != nil {
		return nil, err
	}
	if err := writeIndex(outRoot, opt.Label, index, failures, len(claimRuns) > 0); err != nil {
		return nil, err
	}
	return failures, nil
}

// loadRun loads a run directory: the run, or its failure record, or a "missing" failure.
func loadRun(dir, id string) (*results.Run, *Failure, error) {
	if _, err := os.Stat(filepath.Join(dir, sim.SummaryFile)); err == nil {
		run, err := results.LoadRun(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: aggregate: %w", err)
		}
		return run, nil, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, FailureFile))
	switch {
	case err == nil:
		var f Failure
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, nil, fmt.Errorf("bench: aggregate: %s: %w", filepath.Join(dir, FailureFile), err)
		}
		f.ID = id
		return nil, &f, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Failure{ID: id, Error: "missing: the run has no output directory (run it with: sharebench reproduce --run " + id + ")"}, nil
	default:
		return nil, nil, fmt.Errorf("bench: aggregate: %w", err)
	}
}

// aggregateExperiment writes one experiment's tables and figures and returns its loaded runs.
func aggregateExperiment(dir string, e Experiment, specs []*RunSpec, loaded map[string]*results.Run, formats []string, fw *figureWriter) ([]*results.Run, error) {
	var runs []*results.Run
	bySetting := map[string][]*results.Run{}
	var settings []string
	traces := map[string][]*results.Run{}
	var traceNames []string
	for _, r := range specs {
		run, ok := loaded[r.ID]
		if !ok {
			continue
		}
		runs = append(runs, run)
		if _, seen := bySetting[r.Setting]; !seen {
			settings = append(settings, r.Setting)
		}
		bySetting[r.Setting] = append(bySetting[r.Setting], run)
		if _, seen := traces[r.Trace.Name]; !seen {
			traceNames = append(traceNames, r.Trace.Name)
		}
		traces[r.Trace.Name] = append(traces[r.Trace.Name], run)
	}
	for _, sub := range []string{tablesDir, figuresDir} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	tdir, fdir := filepath.Join(dir, tablesDir), filepath.Join(dir, figuresDir)
	for i, b := range e.Analysis.Baselines {
		sum, err := analysis.Summarize(runs, analysis.SummaryOptions{Baseline: b})
		if err != nil {
			return nil, err
		}
		sum.Title = fmt.Sprintf("Average job completion time — %s: %s", e.Name, e.Title)
		name := "summary"
		if i > 0 {
			name = "summary-vs-" + b
		}
		if err := writeTable(tdir, name, sum); err != nil {
			return nil, err
		}
	}
	if e.Analysis.Claims {
		t, err := analysis.Claims(runs)
		if err != nil {
			return nil, err
		}
		t.Title = "Paper claims vs this reproduction (average JCT) — " + e.Name
		if err := writeTable(tdir, "claims", t); err != nil {
			return nil, err
		}
	}
	bd, err := analysis.Breakdown(runs)
	if err != nil {
		return nil, err
	}
	bd.Title = "Average JCT and queueing delay by model and GPU demand — " + e.Name
	if err := writeTable(tdir, "breakdown", bd); err != nil {
		return nil, err
	}
	if e.Analysis.Jobs {
		t, err := analysis.JobStats(runs)
		if err != nil {
			return nil, err
		}
		t.Title = "Per-job statistics — " + e.Name
		if err := writeTable(tdir, "jobs", t); err != nil {
			return nil, err
		}
	}
	norm := ""
	if len(e.Analysis.Baselines) > 0 {
		norm = e.Analysis.Baselines[0]
	}
	if e.Analysis.Bars {
		opt := analysis.BarOptions{Title: "Average JCT per policy — " + e.Name}
		name := "avg-jct"
		if norm != "" {
			// A ratio to the baseline on a linear axis reads at a glance; raw times of traces
			// hours and months long would need a log axis.
			opt = analysis.BarOptions{Title: "Average JCT ÷ " + norm + "'s — " + e.Name, Normalize: norm, OffScale: offScale}
			name = "avg-jct-vs-" + norm
		}
		fig, err := analysis.AvgJCTBars(runs, opt)
		if err != nil {
			return nil, err
		}
		if err := fw.save(fdir, name, fig, formats); err != nil {
			return nil, err
		}
	}
	if e.Analysis.PerCell {
		for _, s := range settings {
			if len(e.Analysis.CellSettings) > 0 && !slices.Contains(e.Analysis.CellSettings, s) {
				continue
			}
			rs := bySetting[s]
			cell := e.Name + " / " + s
			sample := ""
			if sampled(rs) {
				sample = " (sample of jobs)"
			}
			figs := []struct {
				name string
				make func() (*analysis.Figure, error)
			}{
				{"jct-cdf-" + s, func() (*analysis.Figure, error) {
					return analysis.JCTCDF(rs, analysis.CDFOptions{LogX: true, Title: "JCT distribution — " + cell + sample})
				}},
				{"queue-cdf-" + s, func() (*analysis.Figure, error) {
					return analysis.QueueCDF(rs, analysis.CDFOptions{LogX: true, Title: "Queueing delay distribution — " + cell + sample})
				}},
				{"util-" + s, func() (*analysis.Figure, error) {
					return analysis.UtilOverTime(rs, analysis.UtilOptions{Title: "Cluster occupancy — " + cell})
				}},
			}
			for _, f := range figs {
				fig, err := f.make()
				if err != nil {
					return nil, err
				}
				if err := fw.save(fdir, f.name, fig, formats); err != nil {
					return nil, err
				}
			}
		}
	}
	if x := e.Analysis.CurveX; x != "" {
		for _, tr := range traceNames {
			fig, err := analysis.Curve(traces[tr], curveOptions(x, norm, e.Name+" / "+tr))
			if err != nil {
				return nil, err
			}
			if err := fw.save(fdir, "curve-"+x+"-"+tr, fig, formats); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
}

// offScale is the largest ratio to the baseline a normalized figure shows: a series above it
// (fifo, many times Tiresias under overload) is left out and named in the title.
const offScale = 3

// curveOptions returns the options of an experiment's curve along x, normalized to the
// baseline norm when there is one: the interference axis says what it scales and marks the
// measured ξ, and a curve relative to a claim's baseline shades the claimed range.
func curveOptions(x, norm, cell string) analysis.CurveOptions {
	opt := analysis.CurveOptions{X: x, Normalize: norm, OffScale: offScale}
	if norm == "" {
		return opt
	}
	opt.Title = "Average JCT ÷ " + norm + "'s — " + cell
	if x == "xi_scale" {
		one := 1.0
		opt.MarkX, opt.MarkXLabel = &one, "measured ξ"
	}
	for _, c := range analysis.PaperClaims() {
		if c.Baseline == norm && c.Policy == analysis.PolicySJFBSBF {
			band := [2]float64{1 - c.Hi/100, 1 - c.Lo/100}
			if c.UpTo {
				band[1] = 1
			}
			opt.Band, opt.BandLabel = &band, c.ID+" (sjf-bsbf): "+c.PaperRange()+"%"
			break
		}
	}
	return opt
}

// sampled reports whether some run keeps only a sample of its jobs in jobs.csv.
func sampled(runs []*results.Run) bool {
	for _, r := range runs {
		if len(r.Jobs) < r.Summary.Jobs {
			return true
		}
	}
	return false
}

// writeTable writes t as dir/name.md, .csv and .tex.
func writeTable(dir, name string, t analysis.Table) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for _, f := range tableFormats() {
		var buf bytes.Buffer
		if err := t.Render(&buf, f.f); err != nil {
			return fmt.Errorf("bench: table %s: %w", name, err)
		}
		if err := analysis.WriteFileAtomic(filepath.Join(dir, name+"."+f.ext), buf.Bytes()); err != nil {
			return fmt.Errorf("bench: table %s: %w", name, err)
		}
	}
	return nil
}

// figureWriter draws and encodes figures on every core while the tables are written: PNG
// encoding is most of an aggregation's time. Each figure is its own file, so the bytes do not
// depend on the order the figures are written in.
type figureWriter struct {
	g    errgroup.Group
	mu   sync.Mutex
	errs []error // by the order the figures were queued in
}

func newFigureWriter() *figureWriter {
	w := &figureWriter{}
	w.g.SetLimit(runtime.GOMAXPROCS(0))
	return w
}

// save queues fig to be written as dir/name.<format> for every format; fig must not change
// afterwards.
func (w *figureWriter) save(dir, name string, fig *analysis.Figure, formats []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w.mu.Lock()
	k := len(w.errs)
	w.errs = append(w.errs, nil)
	w.mu.Unlock()
	w.g.Go(func() error {
		for _, f := range formats {
			if err := fig.Save(filepath.Join(dir, name+"."+f)); err != nil {
				w.mu.Lock()
				w.errs[k] = fmt.Errorf("bench: figure %s: %w", name, err)
				w.mu.Unlock()
				break
			}
		}
		return nil
	})
	return nil
}

// wait waits for every figure queued and returns the error of the first one queued that
// failed, so that the error reported does not depend on timing.
func (w *figureWriter) wait() error {
	w.g.Wait()
	for _, err := range w.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFailures writes failures.json and failures.md (also when nothing failed).
func writeFailures(outRoot string, failures []Failure) error {
	var js bytes.Buffer
	if failures == nil {
		failures = []Failure{}
	}
	if err := writeJSON(&js, failures); err != nil {
		return err
	}
	if err := analysis.WriteFileAtomic(filepath.Join(outRoot, "failures.json"), js.Bytes()); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	var md bytes.Buffer
	md.WriteString("# Failed runs\n\n")
	if len(failures) == 0 {
		md.WriteString("No run failed; every planned run has its output.\n")
	} else {
		fmt.Fprintf(&md, "%d planned runs failed or have no output. Rerun one with `sharebench reproduce --run ID`.\n\n| run | error |\n|---|---|\n", len(failures))
		for _, f := range failures {
			fmt.Fprintf(&md, "| %s | %s |\n", f.ID, strings.ReplaceAll(strings.ReplaceAll(f.Error, "|", `\|`), "\n", " "))
		}
	}
	if err := analysis.WriteFileAtomic(filepath.Join(outRoot, "failures.md"), md.Bytes()); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// writeProfiles writes, for the profiles the plan uses (without ξ scaling): their tables, ξ
// heat maps, and for derived profiles the profile itself (JSON) and the sub-batch figures of
// the models the trace models map onto.
func writeProfiles(env Env, dir string, plan []RunSpec, formats []string, withJSON bool, fw *figureWriter) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	in := NewInputs(env)
	seen := map[string]bool{}
	for _, r := range plan {
		spec := r.Profile
		spec.XiScale = nil
		name := strings.TrimSuffix(spec.Name(), ".json")
		if seen[name] {
			continue
		}
		seen[name] = true
		t, err := in.Profile(spec)
		if err != nil {
			return err
		}
		tables := analysis.ProfileTables(t, spec.Name())
		if slices.Contains(strings.Split(spec.Derive, "+"), DeriveSubBatch) {
			tables = tables[:1] // the configurations; the ξ matrix of every derived pair is too large to read
			if withJSON {
				var buf bytes.Buffer
				if err := t.Write(&buf); err != nil {
					return fmt.Errorf("bench: profile %s: %w", name, err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return fmt.Errorf("bench: %w", err)
				}
				if err := analysis.WriteFileAtomic(filepath.Join(dir, spec.Name()), buf.Bytes()); err != nil {
					return fmt.Errorf("bench: %w", err)
				}
			}
			mm, err := in.ModelMap(spec.ModelMap)
			if err != nil {
				return err
			}
			for _, m := range mappedModels(t, mm) {
				if len(t.SubBatches(m, t.DefaultBatch(m))) < 2 && !hasAccumulation(t, m) {
					continue
				}
				fig, err := analysis.SubBatchFigure(t, m)
				if err != nil {
					return err
				}
				if err := fw.save(dir, name+"-"+m, fig, formats); err != nil {
					return err
				}
			}
		} else {
			figs, err := analysis.XiFigures(t)
			if err != nil {
				return err
			}
			for _, f := range figs {
				if err := fw.save(dir, name+"-"+f.Name, f.Figure, formats); err != nil {
					return err
				}
			}
		}
		var md bytes.Buffer
		if err := analysis.RenderAll(&md, analysis.Markdown, tables...); err != nil {
			return fmt.Errorf("bench: profile %s: %w", name, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if err := analysis.WriteFileAtomic(filepath.Join(dir, name+".md"), md.Bytes()); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// mappedModels returns the profile models the authors' eight models map onto, sorted.
func mappedModels(t *profile.Table, mm *profile.ModelMap) []string {
	var out []string
	for _, m := range trace.DefaultModels() {
		name, _ := mm.Resolve(m.Name, m.Batch)
		if t.Model(name) != nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// hasAccumulation reports whether a model has a configuration with sub-batch < batch.
func hasAccumulation(t *profile.Table, model string) bool {
	m := t.Model(model)
	return m != nil && slices.ContainsFunc(m.Configs, func(s profile.Solo) bool { return s.SubBatch < s.Batch })
}

// indexEntry is one experiment of the index.
type indexEntry struct {
	e     Experiment
	specs []*RunSpec
	done  int
}

// writeIndex writes README.md: what the directory holds and where.
func writeIndex(outRoot, label string, index []indexEntry, failures []Failure, claims bool) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# sharebench reproduction outputs (label %q)\n\n", label)
	fmt.Fprintf(&b, "Generated by `sharebench reproduce --label %s`; do not edit. REPRODUCE.md at the module root explains\n", label)
	b.WriteString("every experiment, its inputs, the paper's numbers next to ours, and the deviations.\n\n")
	if label == LabelSmoke {
		b.WriteString("The smoke label runs reduced settings of the experiments (the 61-job testbed trace and small\n")
		b.WriteString("synthetic traces drawn from it), so that the whole pipeline runs in seconds without the public data\n")
		b.WriteString("sets. Its outputs are the goldens of `make smoke`, not results.\n\n")
	}
	b.WriteString("| experiment | runs (with output / planned) | settings | what |\n|---|---:|---:|---|\n")
	total, done := 0, 0
	for _, x := range index {
		settings := map[string]bool{}
		for _, r := range x.specs {
			settings[r.Setting] = true
		}
		fmt.Fprintf(&b, "| [%s](%s/) | %d / %d | %d | %s |\n", x.e.Name, x.e.Name, x.done, len(x.specs), len(settings), x.e.Title)
		total += len(x.specs)
		done += x.done
	}
	fmt.Fprintf(&b, "| total | %d / %d | | |\n\n", done, total)
	b.WriteString("Layout:\n\n")
	b.WriteString("- `<experiment>/<setting>/<policy or variant>/seed-<n>/`: one run directory each — `summary.json`\n")
	b.WriteString("  (metrics over every job, labels), `jobs.csv` (per job; a systematic sample where the summary notes say so),\n")
	b.WriteString("  `util.csv` (occupancy over time), `run.json` (the run specification and the trace's offered load),\n")
	b.WriteString("  `decisions.jsonl` (the decision log, small traces only). docs/results-format.md describes the files.\n")
	b.WriteString("- `<experiment>/tables/`: `summary`, `claims`, `jobs` (and `summary-vs-<baseline>`) as `.md`, `.csv`, `.tex`.\n")
	b.WriteString("- `<experiment>/figures/`: average JCT ÷ the first baseline's (bars, `avg-jct-vs-<baseline>`), per-setting JCT and\n")
	b.WriteString("  queueing-delay CDFs and occupancy, curves (normalised the same way).\n")
	if claims {
		b.WriteString("- `claims.{md,csv,tex}`: the paper's claims next to ours, per experiment, trace and setting, with the draws behind\n")
		b.WriteString("  each row, whether it is a sensitivity row and whether the tally counts it; `forest.{png,svg,pdf}`: every row at a glance.\n")
	}
	b.WriteString("- `profiles/`: the interference profiles the runs use (tables, ξ heat maps, the derived sub-batch profile).\n")
	fmt.Fprintf(&b, "- `failures.{md,json}`: failed or missing runs (%d).\n", len(failures))
	return analysis.WriteFileAtomic(filepath.Join(outRoot, "README.md"), b.Bytes())
}

// Prune removes, below outRoot, run directories (those holding summary.json or failure.json)
// that are not in plan, and temporary directories left by interrupted writes, inside the
// directories of the plan's experiments. It returns the removed paths, relative to outRoot.
func Prune(outRoot string, plan []RunSpec) ([]string, error) {
	want := map[string]bool{}
	for _, r := range plan {
		want[filepath.FromSlash(r.ID)] = true
	}
	var removed []string
	for _, name := range experimentNames(plan) {
		root := filepath.Join(outRoot, name)
		if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() || p == root {
				return err
			}
			rel, _ := filepath.Rel(outRoot, p)
			if strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp-") {
				removed = append(removed, rel)
				if err := os.RemoveAll(p); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			if want[rel] {
				return filepath.SkipDir
			}
			if isRunDir(p) {
				removed = append(removed, rel)
				if err := os.RemoveAll(p); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return removed, fmt.Errorf("bench: prune %s: %w", root, err)
		}
	}
	return removed, nil
}

func isRunDir(dir string) bool {
	for _, f := range []string{sim.SummaryFile, FailureFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}
