package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/results"
)

// DefaultBaseline is the policy against which summary tables report Δ average JCT.
const DefaultBaseline = PolicyTiresias

// SummaryOptions configures Summarize.
type SummaryOptions struct {
	// Baseline is the series Δ average JCT is computed against; DefaultBaseline when empty.
	Baseline string
}

// Delta is the relative difference of average JCT of one group against a baseline group,
// in percent: (x − baseline) / baseline × 100. Negative means lower (better) than the baseline.
type Delta struct {
	Estimate
	// Paired is true when the estimate pairs runs by seed (the mean of per-seed differences,
	// with a CI when at least two seeds pair); false when the seeds do not match and the
	// estimate is the ratio of the means (no CI).
	Paired bool
	// Unpaired counts seeds of either group without a partner; they are left out of a
	// paired estimate.
	Unpaired int
}

// AvgJCT extracts the average JCT of a run summary.
func AvgJCT(s *results.Summary) float64 { return s.AvgJCTS }

// RelDelta computes the Δ of metric m of x against base, in percent. Runs are paired by
// seed: with at least one common seed, Δ is the mean over common seeds of
// (x_s − base_s)/base_s × 100, with a 95% Student-t CI over those per-seed values when there
// are two or more. Without common seeds Δ is (mean x − mean base)/mean base × 100 and has no
// CI.
func RelDelta(x, base *Group, m func(*results.Summary) float64) Delta {
	bySeed := map[uint64]float64{}
	for _, r := range base.Runs {
		bySeed[r.Summary.Seed] = m(&r.Summary)
	}
	var ds []float64
	common := map[uint64]bool{}
	for _, r := range x.Runs {
		b, ok := bySeed[r.Summary.Seed]
		if !ok {
			continue
		}
		common[r.Summary.Seed] = true
		ds = append(ds, (m(&r.Summary)-b)/b*100)
	}
	unpaired := len(x.Runs) + len(base.Runs) - 2*len(common)
	if len(ds) > 0 {
		return Delta{Estimate: CI95(ds), Paired: true, Unpaired: unpaired}
	}
	mx, mb := Mean(x.values(m)), Mean(base.values(m))
	return Delta{Estimate: Estimate{Mean: (mx - mb) / mb * 100, N: 1}, Unpaired: unpaired}
}

// cellKey identifies the groups that are compared with each other: same experiment, trace
// and setting.
type cellKey struct{ exp, trace, setting string }

func (g *Group) cell() cellKey { return cellKey{g.Experiment, g.Trace, g.Setting} }

// findSeries returns the group of series name in the same cell as g, or nil.
func findSeries(groups []*Group, c cellKey, name string) *Group {
	for _, g := range groups {
		if g.cell() == c && g.Series == name {
			return g
		}
	}
	return nil
}

// layout describes the leading identification columns shared by run tables.
type layout struct {
	experiment bool              // some group has an experiment label
	settings   map[string]string // setting → its varying part; nil when all settings are equal
	// byExp, when set, replaces settings: experiment → setting → what varies within that
	// experiment (see perExperiment).
	byExp map[string]map[string]string
}

// perExperiment makes each row show only what varies within its own experiment: in a table
// that spans experiments, a key that one of them varies (E6-profiles' profile) would otherwise
// be shown on every row of the others.
func (l *layout) perExperiment(groups []*Group) {
	settings := map[string][]string{}
	for _, g := range groups {
		settings[g.Experiment] = append(settings[g.Experiment], g.Setting)
	}
	byExp := map[string]map[string]string{}
	varies := false
	for e, s := range settings {
		byExp[e] = varyingSettings(s)
		for _, v := range byExp[e] {
			varies = varies || v != ""
		}
	}
	if varies {
		l.byExp = byExp
	} else {
		l.settings = nil // no experiment varies its settings: no setting column
	}
}

func newLayout(groups []*Group) layout {
	var l layout
	var settings []string
	for _, g := range groups {
		l.experiment = l.experiment || g.Experiment != ""
		settings = append(settings, g.Setting)
	}
	v := varyingSettings(settings)
	for _, s := range v {
		if s != "" {
			l.settings = v
			break
		}
	}
	return l
}

// header returns the identification columns followed by rest.
func (l layout) header(rest ...string) []string {
	var h []string
	if l.experiment {
		h = append(h, "experiment")
	}
	h = append(h, "trace")
	if l.settings != nil || l.byExp != nil {
		h = append(h, "setting")
	}
	return append(h, rest...)
}

// row returns the identification cells of g followed by rest.
func (l layout) row(g *Group, rest ...string) []string {
	var r []string
	if l.experiment {
		r = append(r, dash(g.Experiment))
	}
	r = append(r, g.Trace)
	switch {
	case l.byExp != nil:
		r = append(r, dash(l.byExp[g.Experiment][g.Setting]))
	case l.settings != nil:
		r = append(r, dash(l.settings[g.Setting]))
	}
	return append(r, rest...)
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Summarize returns the average-JCT table: one row per experiment × trace × setting × series
// with the mean over seeds of the average JCT (and its 95% CI), Δ average JCT against the
// baseline (paired by seed, with its CI), and the means of p95 and p99 JCT, makespan, average
// queueing delay, the slowdown metrics (where the summaries have them), GPU utilization and
// effective GPU utilization, shared jobs and preemptions. Notes define Δ and the CI and
// list caveats: missing baselines, unpaired seeds, dropped jobs, missing profile pairs and the
// simulators' own notes.
func Summarize(runs []*results.Run, opt SummaryOptions) (Table, error) {
	base := opt.Baseline
	if base == "" {
		base = DefaultBaseline
	}
	groups, err := GroupRuns(runs)
	if err != nil {
		return Table{}, err
	}
	l := newLayout(groups)
	dHeader := "Δ avg JCT vs " + base + " (%)"
	missing, subShared, extra := false, false, false
	for _, r := range runs {
		missing = missing || r.Summary.MissingPairs > 0
		subShared = subShared || r.Summary.SubBatchSharedJobs > 0
		extra = extra || !math.IsNaN(r.Summary.SlowdownMean)
	}
	header := []string{"policy", "seeds", "avg JCT (s)", "± 95% CI (s)", dHeader, "± 95% CI (pp)",
		"p95 JCT (s)", "p99 JCT (s)", "makespan (s)", "avg queue (s)"}
	if extra {
		header = append(header, "mean slowdown", "p95 slowdown", "p99 slowdown", "slowdown fairness")
	}
	header = append(header, "GPU util (%)")
	if extra {
		header = append(header, "effective GPU (%)")
	}
	header = append(header, "shared jobs", "preemptions")
	if subShared {
		header = append(header, "shared only at a smaller sub-batch")
	}
	if missing {
		header = append(header, "missing pairs")
	}
	t := Table{Title: "Average job completion time", Header: l.header(header...)}
	var caveats noteSet
	anyCI := false
	for _, g := range groups {
		jct := g.Estimate(AvgJCT)
		anyCI = anyCI || jct.HasCI()
		dCell, dCI := "–", "–"
		if b := findSeries(groups, g.cell(), base); b == nil {
			caveats.add(fmt.Sprintf("%s: no %s runs, so no Δ.", l.cellName(g), base))
		} else if b == g {
			dCell = "0.0"
		} else {
			d := RelDelta(g, b, AvgJCT)
			dCell = fmtSigned(d.Mean, 1)
			if d.HasCI() {
				dCI = fmtFixed(d.Half, 1)
			}
			if !d.Paired {
				caveats.add(fmt.Sprintf("%s, %s: no seed in common with %s; Δ is the ratio of the means, without CI.", l.cellName(g), g.Series, base))
			} else if d.Unpaired > 0 {
				caveats.add(fmt.Sprintf("%s, %s: %d run(s) without a seed partner in %s are left out of Δ.", l.cellName(g), g.Series, d.Unpaired, base))
			}
		}
		ci := "–"
		if jct.HasCI() {
			ci = fmtFixed(jct.Half, 1)
		}
		mean := func(f func(s *results.Summary) float64, dec int) string { return fmtFixed(Mean(g.values(f)), dec) }
		row := l.row(g, g.Series, strconv.Itoa(len(g.Runs)),
			fmtFixed(jct.Mean, 1), ci, dCell, dCI,
			mean(func(s *results.Summary) float64 { return s.P95JCTS }, 1),
			mean(func(s *results.Summary) float64 { return s.P99JCTS }, 1),
			mean(func(s *results.Summary) float64 { return s.MakespanS }, 1),
			mean(func(s *results.Summary) float64 { return s.AvgQueueS }, 1))
		if extra {
			row = append(row, mean(func(s *results.Summary) float64 { return s.SlowdownMean }, 2),
				mean(func(s *results.Summary) float64 { return s.SlowdownP95 }, 2),
				mean(func(s *results.Summary) float64 { return s.SlowdownP99 }, 2),
				mean(func(s *results.Summary) float64 { return s.SlowdownFairness }, 3))
		}
		row = append(row, mean(func(s *results.Summary) float64 { return 100 * s.GPUUtil }, 1))
		if extra {
			row = append(row, mean(func(s *results.Summary) float64 { return 100 * s.EffectiveGPUUtil }, 1))
		}
		row = append(row, fmtCount(Mean(g.values(func(s *results.Summary) float64 { return float64(s.SharedJobs) }))),
			fmtCount(Mean(g.values(func(s *results.Summary) float64 { return float64(s.Preemptions) }))))
		if subShared {
			row = append(row, fmtCount(Mean(g.values(func(s *results.Summary) float64 { return float64(s.SubBatchSharedJobs) }))))
		}
		if missing {
			row = append(row, fmtCount(Mean(g.values(func(s *results.Summary) float64 { return float64(s.MissingPairs) }))))
		}
		t.Rows = append(t.Rows, row)
		l.runCaveats(&caveats, g)
	}
	t.Notes = append(t.Notes,
		fmt.Sprintf("Δ avg JCT vs %s = (policy − %s) / %s × 100; negative means a lower (better) average JCT than %s, e.g. −30 is 30%% lower.", base, base, base, base),
		"Values are means over seeds. ± is the half-width of the two-sided 95% Student-t confidence interval (n−1 degrees of freedom); – means fewer than two seeds.",
		"Δ pairs runs by seed: it is the mean of the per-seed relative differences, and its CI is taken over those differences.",
	)
	if !anyCI {
		t.Notes = append(t.Notes, "Every group has a single seed: no confidence intervals.")
	}
	if l.settings != nil {
		t.Notes = append(t.Notes, "setting lists only what differs between the rows (labels, cluster, GPU memory, interval, profile).")
	}
	if extra {
		t.Notes = append(t.Notes, "slowdown: a job's JCT ÷ its solo time (its iterations at its fastest exclusive step time), over every job; p95/p99 with the authors' quantile definition; slowdown fairness: Jain's index over the slowdowns, (Σx)²/(n·Σx²), 1 when every job is slowed down alike.",
			"GPU util: time share of GPUs holding a job; effective GPU: the GPU time the jobs needed alone (Σ GPUs × solo time) over the cluster's GPU time to the makespan, i.e. the time average of Σ 1/ξ over a GPU's jobs. Above GPU util, sharing added throughput; below it, interference, restarts or slower sub-batches cost some.")
	}
	if subShared {
		t.Notes = append(t.Notes, "shared only at a smaller sub-batch: jobs that shared GPUs at a sub-batch below their largest because the largest would not have fit next to their partners in GPU memory, mean over seeds.")
	}
	if missing {
		t.Notes = append(t.Notes, "missing pairs: configuration pairs the policy wanted to share that the profile lacks (never shared), mean over seeds.")
	}
	t.Notes = append(t.Notes, caveats.list()...)
	return t, nil
}

// cellName names an experiment × trace × setting cell for notes, with the varying part of
// the setting.
func (l layout) cellName(g *Group) string {
	var parts []string
	if g.Experiment != "" {
		parts = append(parts, g.Experiment)
	}
	parts = append(parts, g.Trace)
	name := strings.Join(parts, "/")
	if s := l.settings[g.Setting]; s != "" {
		return name + " [" + s + "]"
	}
	return name
}

// runCaveats adds the caveats of the runs of g: dropped jobs and the simulators' notes.
func (l layout) runCaveats(n *noteSet, g *Group) {
	dropped, runs := 0, 0
	for _, r := range g.Runs {
		if r.Summary.DroppedJobs > 0 {
			dropped += r.Summary.DroppedJobs
			runs++
		}
		for _, note := range r.Summary.Notes {
			n.addCounted("simulator note: " + oneLine(note))
		}
	}
	if dropped > 0 {
		n.add(fmt.Sprintf("%s, %s: the simulator dropped %d job(s) in %d of %d run(s).", l.cellName(g), g.Series, dropped, runs, len(g.Runs)))
	}
}

// noteSet collects distinct notes in first-seen order; counted notes report how many runs
// carried them.
type noteSet struct {
	order  []string
	counts map[string]int
}

func (n *noteSet) add(s string) {
	if n.counts == nil {
		n.counts = map[string]int{}
	}
	if _, ok := n.counts[s]; !ok {
		n.order = append(n.order, s)
	}
	n.counts[s] = 0
}

func (n *noteSet) addCounted(s string) {
	if n.counts == nil {
		n.counts = map[string]int{}
	}
	c, ok := n.counts[s]
	if !ok {
		n.order = append(n.order, s)
	}
	n.counts[s] = c + 1
}

func (n *noteSet) list() []string {
	out := make([]string, 0, len(n.order))
	for _, s := range n.order {
		if c := n.counts[s]; c > 0 {
			out = append(out, fmt.Sprintf("%s (%d run%s)", s, c, plural(c)))
		} else {
			out = append(out, s)
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// JobStats returns the per-job table: for each group, statistics over the jobs of all its
// seeds pooled: job count, JCT quantiles (authors' definition), the largest JCT, average and
// p99 queueing delay, and the share of jobs that ran co-located, were preempted, or used a
// sub-batch smaller than their batch (gradient accumulation).
func JobStats(runs []*results.Run) (Table, error) {
	groups, err := GroupRuns(runs)
	if err != nil {
		return Table{}, err
	}
	l := newLayout(groups)
	t := Table{
		Title: "Per-job statistics (jobs of all seeds pooled)",
		Header: l.header("policy", "seeds", "jobs", "p50 JCT (s)", "p90 JCT (s)", "p99 JCT (s)", "max JCT (s)",
			"avg queue (s)", "p99 queue (s)", "shared (%)", "preempted (%)", "sub-batch < batch (%)"),
	}
	for _, g := range groups {
		var jct, queue []float64
		shared, pre, accum := 0, 0, 0
		for _, r := range g.Runs {
			for _, j := range r.Jobs {
				jct = append(jct, j.JCTS)
				queue = append(queue, j.QueueS)
				if j.SharedS > 0 {
					shared++
				}
				if j.Preemptions > 0 {
					pre++
				}
				if j.SubBatch > 0 && j.SubBatch < j.Batch {
					accum++
				}
			}
		}
		n := len(jct)
		pct := func(k int) string {
			if n == 0 {
				return "–"
			}
			return fmtFixed(100*float64(k)/float64(n), 1)
		}
		slices.Sort(jct)
		slices.Sort(queue)
		maxJCT := math.NaN()
		if n > 0 {
			maxJCT = jct[n-1]
		}
		t.Rows = append(t.Rows, l.row(g, g.Series, strconv.Itoa(len(g.Runs)), strconv.Itoa(n),
			fmtFixed(quantileSorted(jct, 0.5), 1), fmtFixed(quantileSorted(jct, 0.9), 1),
			fmtFixed(quantileSorted(jct, 0.99), 1), fmtFixed(maxJCT, 1),
			fmtFixed(Mean(queue), 1), fmtFixed(quantileSorted(queue, 0.99), 1),
			pct(shared), pct(pre), pct(accum)))
	}
	t.Notes = []string{
		"Quantiles use the authors' definition sorted(x)[int(q·n)], as summary.json does.",
		"shared: jobs with shared_s > 0; preempted: jobs with preemptions > 0; sub-batch < batch: jobs whose last placement used gradient accumulation.",
	}
	return t, nil
}

// fmtFixed formats v with the given decimals, "–" for NaN, and a true minus sign.
func fmtFixed(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.HasPrefix(s, "-") {
		if strings.Trim(s[1:], "0.") == "" {
			return s[1:] // no "−0.0"
		}
		return "−" + s[1:]
	}
	return s
}

// fmtSigned formats v like fmtFixed with an explicit + for positive values.
// FormatSigned formats v as the tables do: dec decimals, a true minus sign, "+" before a
// positive value, "–" for NaN.
func FormatSigned(v float64, dec int) string { return fmtSigned(v, dec) }

func fmtSigned(v float64, dec int) string {
	s := fmtFixed(v, dec)
	if s != "–" && !strings.HasPrefix(s, "−") && strings.Trim(s, "0.") != "" {
		return "+" + s
	}
	return s
}

// fmtCount formats a mean of counts: an integer when whole, else one decimal.
func fmtCount(v float64) string {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return fmtFixed(v, 1)
}
