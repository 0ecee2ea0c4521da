package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/results"
)

// The numbers REPRODUCE.md and the docs cite are generated from a reproduction's run
// directories into marked regions of those files, so that a stale number is impossible (a test
// compares the regions with what the committed results give):
//
//	<!-- generated:NAME -->
//	...
//	<!-- end:NAME -->
//
// "sharebench report DIR --update FILE..." rewrites them; Report lists the regions.

// regionStart and regionEnd delimit a generated region.
const (
	regionStart = "<!-- generated:"
	regionEnd   = "<!-- end:"
)

// Report holds the generated regions of a reproduction, by name, and their order. A document
// can cite several reproductions: a region named PREFIX/NAME belongs to the report whose Prefix
// is PREFIX (e.g. h200/verdicts, from results/h200), a plain NAME to the report without one.
type Report struct {
	Names   []string
	Regions map[string]string
	Prefix  string
}

// part returns the part of r a region of a document names, and whether the region is r's.
func (r *Report) part(region string) (string, bool) {
	prefix, name, ok := strings.Cut(region, "/")
	if !ok {
		return region, r.Prefix == ""
	}
	return name, prefix == r.Prefix
}

func (r *Report) add(name, text string) {
	if r.Regions == nil {
		r.Regions = map[string]string{}
	}
	r.Names = append(r.Names, name)
	r.Regions[name] = strings.TrimRight(text, "\n") + "\n"
}

// BuildReport renders the regions from the run directories of plan below outRoot (summaries
// only). Experiments whose runs are absent give no region.
func BuildReport(outRoot string, plan []RunSpec, exps []Experiment) (*Report, error) {
	byExp := map[string][]*results.Run{}
	for i := range plan {
		r := &plan[i]
		run, err := loadSummaryRun(r.Dir(outRoot))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		byExp[r.Experiment] = append(byExp[r.Experiment], run)
	}
	rep := &Report{}
	inputs, err := inputsRegion(outRoot, plan)
	if err != nil {
		return nil, err
	}
	if inputs != "" {
		rep.add("inputs", inputs)
	}
	var claimRuns []*results.Run
	for _, e := range exps {
		if e.Analysis.Claims {
			claimRuns = append(claimRuns, byExp[e.Name]...)
		}
	}
	if len(claimRuns) > 0 {
		ev, err := newEvidence(claimRuns)
		if err != nil {
			return nil, err
		}
		v := ev.verdicts(byExp["E0"])
		rep.add("verdicts", v)
		rep.add("tally", ev.tally())
		rep.add("answer", ev.rowsTable())
		for _, r := range []struct{ name, text string }{
			{"decomposition", ev.decomposition()},
			{"by-size", ev.bySize()},
			{"by-model", ev.byModel()},
			{"metrics", ev.metricsRegion()},
			{"subbatch", ev.subBatch()},
			{"prediction", ev.prediction(planMeanExcess(plan))},
		} {
			if r.text != "" {
				rep.add(r.name, r.text)
			}
		}
	}
	for _, e := range exps {
		runs := byExp[e.Name]
		if len(runs) == 0 {
			continue
		}
		text, err := experimentRegion(e, runs)
		if err != nil {
			return nil, fmt.Errorf("bench: report %s: %w", e.Name, err)
		}
		rep.add(strings.ToLower(e.Name), text)
		if e.Name == "E0" {
			text, err := baselineEffects(runs)
			if err != nil {
				return nil, fmt.Errorf("bench: report E0: %w", err)
			}
			rep.add("e0-effects", text)
		}
		if e.Name == "E7" {
			pub, fig, err := muriRegions(runs)
			if err != nil {
				return nil, fmt.Errorf("bench: report E7: %w", err)
			}
			rep.add("e7-published", pub)
			rep.add("e7-figures", fig)
		}
	}
	return rep, nil
}

// baselineEffects renders E0 as the measured effect of each difference between sharebench's
// Tiresias and the code it follows, or between its variants: Δ average JCT of one run against
// another, per trace (E0's settings are <trace>, <trace>-no-restart and <trace>-muri).
func baselineEffects(runs []*results.Run) (string, error) {
	avg := map[[2]string]float64{} // (setting, series) → avg JCT
	var traces []string
	for _, r := range runs {
		// A run's directory is <root>/E0/<setting>/<series>/seed-<n>.
		series := filepath.Base(filepath.Dir(r.Dir))
		set := filepath.Base(filepath.Dir(filepath.Dir(r.Dir)))
		avg[[2]string{set, series}] = r.Summary.AvgJCTS
		tr := r.Summary.Labels["trace"]
		if !slices.Contains(traces, tr) {
			traces = append(traces, tr)
		}
	}
	slices.Sort(traces)
	rows := []struct{ what, aSet, aSeries, bSet, bSeries string }{
		{"restart cost charged once per restart, from the lineage's table (against none)", "", "tiresias", "-no-restart", "tiresias"},
		{"the lineage's non-scheduling effects: step times × 1.015 and the start overhead lost at every event, no restart charge (against sharebench's default)", "-muri", "tiresias", "", "tiresias"},
		{"2D-LAS on the authors' loop: first come first served by queue entry, YARN placement, the authors' victim rule (tiresias-entry-order, against tiresias)", "", "tiresias-entry-order", "", "tiresias"},
		{"the lineage's unused third queue limit (four queues; tiresias-entry-order-4q against tiresias-entry-order)", "", "tiresias-entry-order-4q", "", "tiresias-entry-order"},
		{"the authors' testbed settings: 2 queues, 700 s of wall time, starvation promotion (tiresias-testbed, against tiresias)", "", "tiresias-testbed", "", "tiresias"},
		{"sjf-bsbf against tiresias (the claim's comparison), for scale", "", "sjf-bsbf", "", "tiresias"},
	}
	t := analysis.Table{Header: []string{"difference (Δ avg JCT, %)"}}
	t.Header = append(t.Header, traces...)
	for _, r := range rows {
		row := []string{r.what}
		for _, tr := range traces {
			a, okA := avg[[2]string{tr + r.aSet, r.aSeries}]
			b, okB := avg[[2]string{tr + r.bSet, r.bSeries}]
			cell := "–"
			if okA && okB && b > 0 {
				cell = analysis.FormatSigned((a-b)/b*100, 1)
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	var buf bytes.Buffer
	if err := t.Render(&buf, analysis.Markdown); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// ClaimRuns loads the summaries of the runs of the experiments that check the paper's claims.
func ClaimRuns(outRoot string, plan []RunSpec, exps []Experiment) ([]*results.Run, error) {
	claims := map[string]bool{}
	for _, e := range exps {
		claims[e.Name] = e.Analysis.Claims
	}
	var runs []*results.Run
	for i := range plan {
		if !claims[plan[i].Experiment] {
			continue
		}
		run, err := loadSummaryRun(plan[i].Dir(outRoot))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// inputsRegion tabulates each setting's trace as the runs saw it (run.json of its first run):
// jobs, arrival span, GPU-time and offered load on its cluster, with the spread over seeds for
// generated traces.
func inputsRegion(outRoot string, plan []RunSpec) (string, error) {
	type agg struct {
		exp, setting, trace, cluster string
		jobs                         int
		loads, spans, gpuH           []float64
	}
	var order []string
	rows := map[string]*agg{}
	seenSeed := map[string]bool{}
	for i := range plan {
		r := &plan[i]
		key := r.Experiment + "/" + r.Setting
		if seenSeed[key+fmt.Sprint(r.Seed)] {
			continue
		}
		data, err := os.ReadFile(filepath.Join(r.Dir(outRoot), RunFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		var rec RunRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return "", fmt.Errorf("bench: report: %s: %w", filepath.Join(r.Dir(outRoot), RunFile), err)
		}
		seenSeed[key+fmt.Sprint(r.Seed)] = true
		a, ok := rows[key]
		if !ok {
			a = &agg{exp: r.Experiment, setting: r.Setting, trace: r.Trace.Name,
				cluster: fmt.Sprintf("%d×%d, %s GiB", r.Cluster.Nodes, r.Cluster.GPUsPerNode, num(r.Cluster.MemGiB)), jobs: rec.TraceStats.Jobs}
			rows[key] = a
			order = append(order, key)
		}
		a.loads = append(a.loads, rec.OfferedLoad)
		a.spans = append(a.spans, rec.TraceStats.SpanS/3600)
		a.gpuH = append(a.gpuH, rec.TraceStats.GPUSeconds/3600)
	}
	if len(order) == 0 {
		return "", nil
	}
	rangeOf := func(v []float64, dec int) string {
		lo, hi := slices.Min(v), slices.Max(v)
		a, b := strconv.FormatFloat(lo, 'f', dec, 64), strconv.FormatFloat(hi, 'f', dec, 64)
		if a == b {
			return a
		}
		return a + "–" + b
	}
	t := analysis.Table{Header: []string{"experiment", "setting", "trace", "cluster", "jobs", "draws", "arrival span (h)", "GPU-hours", "offered load"}}
	for _, k := range order {
		a := rows[k]
		t.Rows = append(t.Rows, []string{a.exp, a.setting, a.trace, a.cluster, strconv.Itoa(a.jobs), strconv.Itoa(len(a.loads)),
			rangeOf(a.spans, 0), rangeOf(a.gpuH, 0), rangeOf(a.loads, 2)})
	}
	var buf bytes.Buffer
	if err := t.Render(&buf, analysis.Markdown); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// loadSummaryRun reads a run directory's summary.json only.
func loadSummaryRun(dir string) (*results.Run, error) {
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		return nil, err
	}
	return results.LoadSummary(dir)
}

// planMeanExcess returns the mean excess slowdown over pairs of the authors' models of the
// profile the plan scales (E6-xi's, without its scale and derivations), NaN when the plan
// scales none or the profile cannot be read.
func planMeanExcess(plan []RunSpec) float64 {
	for _, r := range plan {
		if r.Profile.XiScale == nil {
			continue
		}
		env, err := FindEnvOptional()
		if err != nil {
			return math.NaN()
		}
		in := NewInputs(env)
		prof, err := in.Profile(ProfileSpec{File: r.Profile.File, ModelMap: r.Profile.ModelMap})
		if err != nil {
			return math.NaN()
		}
		mm, err := in.ModelMap(r.Profile.ModelMap)
		if err != nil {
			return math.NaN()
		}
		return meanExcessXi(prof, mm)
	}
	return math.NaN()
}

// experimentRegion renders an experiment's main summary table, restricted to what the answer
// needs: the policy, its average JCT with its CI, and Δ against each baseline.
func experimentRegion(e Experiment, runs []*results.Run) (string, error) {
	var b strings.Builder
	for i, base := range e.Analysis.Baselines {
		sum, err := analysis.Summarize(runs, analysis.SummaryOptions{Baseline: base})
		if err != nil {
			return "", err
		}
		keep := []string{"experiment", "trace", "setting", "policy", "seeds", "avg JCT (s)", "± 95% CI (s)",
			"Δ avg JCT vs " + base + " (%)", "± 95% CI (pp)", "shared only at a smaller sub-batch"}
		if i > 0 {
			keep = []string{"trace", "setting", "policy", "Δ avg JCT vs " + base + " (%)", "± 95% CI (pp)"}
		}
		proj := project(sum, keep)
		proj.Title = ""
		proj.Notes = nil
		if i > 0 {
			fmt.Fprintf(&b, "\nΔ against %s:\n\n", base)
		}
		var buf bytes.Buffer
		if err := proj.Render(&buf, analysis.Markdown); err != nil {
			return "", err
		}
		b.Write(buf.Bytes())
	}
	if len(e.Analysis.Baselines) == 0 {
		sum, err := analysis.Summarize(runs, analysis.SummaryOptions{})
		if err != nil {
			return "", err
		}
		proj := project(sum, []string{"trace", "setting", "policy", "seeds", "avg JCT (s)", "± 95% CI (s)"})
		proj.Title, proj.Notes = "", nil
		var buf bytes.Buffer
		if err := proj.Render(&buf, analysis.Markdown); err != nil {
			return "", err
		}
		b.Write(buf.Bytes())
	}
	return b.String(), nil
}

// project keeps the columns of t named in keep (those t has), in t's order; it drops a column
// whose cells are all the same.
func project(t analysis.Table, keep []string) analysis.Table {
	var idx []int
	for i, h := range t.Header {
		if !slices.Contains(keep, h) {
			continue
		}
		same, blank := true, true
		for _, r := range t.Rows {
			same = same && r[i] == t.Rows[0][i]
			blank = blank && (r[i] == "–" || r[i] == "")
		}
		if blank || same && (h == "experiment" || h == "seeds") {
			continue
		}
		idx = append(idx, i)
	}
	out := analysis.Table{Title: t.Title, Notes: t.Notes}
	for _, i := range idx {
		out.Header = append(out.Header, t.Header[i])
	}
	for _, r := range t.Rows {
		row := make([]string, len(idx))
		for k, i := range idx {
			row[k] = r[i]
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// regionSpan finds the region name in text: the start of its content and its end.
func regionSpan(text, name string) (start, end int, ok bool) {
	open := regionStart + name + " -->\n"
	close := "\n" + regionEnd + name + " -->"
	i := strings.Index("\n"+text, "\n"+open)
	if i < 0 {
		return 0, 0, false
	}
	j := strings.Index(text[i:], close)
	if j < 0 {
		if strings.HasPrefix(text[i+len(open):], regionEnd+name+" -->") {
			return i + len(open), i + len(open), true // an empty region
		}
		return 0, 0, false
	}
	return i + len(open), i + j + 1, true
}

// RegionNames lists the generated regions a document holds, in order. Markers count only at the
// start of a line, so that prose may quote them.
func RegionNames(text string) ([]string, error) {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, regionStart)
		if !ok {
			continue
		}
		name, ok := strings.CutSuffix(rest, " -->")
		if !ok || name == "" {
			return nil, fmt.Errorf("malformed region marker %q", line)
		}
		if !strings.Contains(text, "\n"+regionEnd+name+" -->") {
			return nil, fmt.Errorf("region %s has no end marker", name)
		}
		names = append(names, name)
	}
	return names, nil
}

// Render returns text with every generated region replaced by the report's; a region the
// report lacks is an error.
func (r *Report) Render(text, name string) (string, error) {
	names, err := RegionNames(text)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	for _, n := range names {
		p, mine := r.part(n)
		if !mine {
			continue // another reproduction's region
		}
		content, ok := r.Regions[p]
		if !ok {
			return "", fmt.Errorf("%s: region %q: no such part of the report (have %s)", name, n, strings.Join(r.Names, ", "))
		}
		start, end, _ := regionSpan(text, n)
		text = text[:start] + content + text[end:]
	}
	return text, nil
}

// Full returns every region of the report as one Markdown document.
func (r *Report) Full() string {
	var b strings.Builder
	for _, n := range r.Names {
		fmt.Fprintf(&b, "## %s\n\n%s\n", n, r.Regions[n])
	}
	return b.String()
}
