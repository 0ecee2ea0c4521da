package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/results"
)

// Group is the set of runs that differ only in their seed: same experiment, trace, setting
// and policy specification.
type Group struct {
	// Experiment is the "experiment" label, or "".
	Experiment string
	// Trace is the "trace" label, else the summary's trace file name.
	Trace string
	// Setting identifies everything else that distinguishes runs of one experiment and trace:
	// the labels other than experiment, trace and variant, and the cluster, GPU memory,
	// scheduling interval and profile. It is canonical (sorted key=value pairs).
	Setting string
	// Series is the display name: the "variant" label, else the policy (or the policy
	// specification when two specifications of one policy would otherwise share a name).
	Series string
	// Policy is the summary's policy.
	Policy string
	// Spec is the summary's policy_spec.
	Spec string
	// Runs are the runs, sorted by seed and directory.
	Runs []*results.Run
}

// Seeds returns the seeds of the group's runs in order.
func (g *Group) Seeds() []uint64 {
	s := make([]uint64, len(g.Runs))
	for i, r := range g.Runs {
		s[i] = r.Summary.Seed
	}
	return s
}

// Metric extracts one number from a run summary.
type Metric struct {
	// Name is the metric's identifier, e.g. "avg-jct".
	Name string
	// Label is the axis or column label with its unit, e.g. "average JCT (s)".
	Label string
	// Value extracts the metric from a run.
	Value func(*results.Summary) float64
}

// Metrics lists the summary metrics usable in curves and tables, by name: avg-jct, p50-jct,
// p95-jct, p99-jct, makespan, avg-queue, gpu-util (%), shared-jobs, preemptions, slowdown,
// p95-slowdown, p99-slowdown, fairness and effective-gpu-util (%).
func Metrics() []Metric {
	return []Metric{
		{"avg-jct", "average JCT (s)", func(s *results.Summary) float64 { return s.AvgJCTS }},
		{"p50-jct", "median JCT (s)", func(s *results.Summary) float64 { return s.P50JCTS }},
		{"p95-jct", "p95 JCT (s)", func(s *results.Summary) float64 { return s.P95JCTS }},
		{"p99-jct", "p99 JCT (s)", func(s *results.Summary) float64 { return s.P99JCTS }},
		{"makespan", "makespan (s)", func(s *results.Summary) float64 { return s.MakespanS }},
		{"avg-queue", "average queueing delay (s)", func(s *results.Summary) float64 { return s.AvgQueueS }},
		{"gpu-util", "GPU utilization (%)", func(s *results.Summary) float64 { return 100 * s.GPUUtil }},
		{"shared-jobs", "shared jobs", func(s *results.Summary) float64 { return float64(s.SharedJobs) }},
		{"preemptions", "preemptions", func(s *results.Summary) float64 { return float64(s.Preemptions) }},
		{"slowdown", "mean slowdown (JCT ÷ solo time)", func(s *results.Summary) float64 { return s.SlowdownMean }},
		{"p95-slowdown", "p95 slowdown (JCT ÷ solo time)", func(s *results.Summary) float64 { return s.SlowdownP95 }},
		{"p99-slowdown", "p99 slowdown (JCT ÷ solo time)", func(s *results.Summary) float64 { return s.SlowdownP99 }},
		{"fairness", "Jain's fairness index of slowdowns", func(s *results.Summary) float64 { return s.SlowdownFairness }},
		{"effective-gpu-util", "effective GPU utilization (%)", func(s *results.Summary) float64 { return 100 * s.EffectiveGPUUtil }},
	}
}

// MetricByName returns the metric called name.
func MetricByName(name string) (Metric, error) {
	var names []string
	for _, m := range Metrics() {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Metric{}, fmt.Errorf("unknown metric %q (known: %s)", name, strings.Join(names, ", "))
}

// values returns metric m of every run of g.
func (g *Group) values(m func(*results.Summary) float64) []float64 {
	out := make([]float64, len(g.Runs))
	for i, r := range g.Runs {
		out[i] = m(&r.Summary)
	}
	return out
}

// Estimate returns the mean of metric m over the group's runs with its 95% CI.
func (g *Group) Estimate(m func(*results.Summary) float64) Estimate {
	return CI95(g.values(m))
}

// settingOf returns the canonical setting key of a run.
func settingOf(r *results.Run) string {
	kv := map[string]string{
		"cluster":     r.Summary.Cluster,
		"gpu_mem_gib": strconv.FormatFloat(r.Summary.GPUMemGiB, 'g', -1, 64),
		"interval_s":  strconv.FormatFloat(r.Summary.IntervalS, 'g', -1, 64),
		"profile":     r.Summary.Profile,
	}
	for k, v := range r.Summary.Labels {
		switch k {
		case results.LabelExperiment, results.LabelTrace, results.LabelVariant:
			continue
		}
		// A label overrides the summary field of the same name (they agree in practice).
		kv[k] = v
	}
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(kv[k])
	}
	return sb.String()
}

// seriesOf returns the preliminary series name of a run: the variant label, else the policy.
func seriesOf(r *results.Run) string {
	if v, ok := r.Label(results.LabelVariant); ok && v != "" {
		return v
	}
	return r.Summary.Policy
}

// GroupRuns groups runs that differ only in their seed. Groups are sorted by experiment,
// trace, setting and series (fixed policy order, then alphabetically). A run appearing twice
// (same directory) is kept once; two runs of one group with the same seed are an error.
func GroupRuns(runs []*results.Run) ([]*Group, error) {
	type key struct{ exp, trace, setting, series, spec string }
	byKey := map[key]*Group{}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Dir] && r.Dir != "" {
			continue
		}
		seen[r.Dir] = true
		k := key{r.Experiment(), r.Trace(), settingOf(r), seriesOf(r), r.Summary.PolicySpec}
		g := byKey[k]
		if g == nil {
			g = &Group{Experiment: k.exp, Trace: k.trace, Setting: k.setting, Series: k.series,
				Policy: r.Summary.Policy, Spec: r.Summary.PolicySpec}
			byKey[k] = g
		}
		g.Runs = append(g.Runs, r)
	}
	// Two specifications with one series name in one cell: name them by specification.
	type cell struct{ exp, trace, setting, series string }
	specs := map[cell]int{}
	for k := range byKey {
		specs[cell{k.exp, k.trace, k.setting, k.series}]++
	}
	groups := make([]*Group, 0, len(byKey))
	for k, g := range byKey {
		if specs[cell{k.exp, k.trace, k.setting, k.series}] > 1 && g.Spec != "" {
			g.Series = g.Spec
		}
		slices.SortFunc(g.Runs, func(a, b *results.Run) int {
			return cmp.Or(cmp.Compare(a.Summary.Seed, b.Summary.Seed), cmp.Compare(a.Dir, b.Dir))
		})
		for i := 1; i < len(g.Runs); i++ {
			if g.Runs[i].Summary.Seed == g.Runs[i-1].Summary.Seed {
				return nil, fmt.Errorf("analysis: %s and %s: same experiment %q, trace %q, setting and policy %q with the same seed %d",
					g.Runs[i-1].Dir, g.Runs[i].Dir, g.Experiment, g.Trace, g.Series, g.Runs[i].Summary.Seed)
			}
		}
		groups = append(groups, g)
	}
	slices.SortFunc(groups, compareGroups)
	return groups, nil
}

func compareGroups(a, b *Group) int {
	return cmp.Or(cmp.Compare(a.Experiment, b.Experiment), compareTraces(a.Trace, b.Trace),
		compareSettings(a.Setting, b.Setting), compareSeries(a.Series, b.Series), cmp.Compare(a.Spec, b.Spec))
}

// compareTraces orders trace names naturally, so that trace2 comes before trace10.
func compareTraces(a, b string) int { return naturalCompare(a, b) }

// compareSettings orders settings naturally, so that gpu_mem_gib=16 precedes gpu_mem_gib=32.
func compareSettings(a, b string) int { return naturalCompare(a, b) }

// naturalCompare compares strings with embedded decimal numbers by numeric value.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := leadingNumber(a)
			nb, rb := leadingNumber(b)
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// leadingNumber parses the decimal number (digits with an optional fraction) at the start
// of s.
func leadingNumber(s string) (float64, string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	v, _ := strconv.ParseFloat(s[:i], 64)
	return v, s[i:]
}

// varyingSettings returns, for each setting, only the key=value parts that differ between the
// given settings ("" for all when there is only one distinct setting). A key missing from a
// setting is shown there as key=–.
func varyingSettings(settings []string) map[string]string {
	values := map[string]map[string]bool{} // key → distinct values
	count := map[string]int{}              // key → settings that have it
	split := map[string]map[string]string{}
	for _, s := range settings {
		if _, done := split[s]; done {
			continue
		}
		kvs := map[string]string{}
		for _, f := range strings.Fields(s) {
			k, v, _ := strings.Cut(f, "=")
			kvs[k] = v
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
			count[k]++
		}
		split[s] = kvs
	}
	out := make(map[string]string, len(split))
	for s, kvs := range split {
		if len(split) == 1 {
			out[s] = ""
			continue
		}
		var keep []string
		for _, k := range slices.Sorted(maps.Keys(values)) {
			if len(values[k]) == 1 && count[k] == len(split) {
				continue
			}
			if v, ok := kvs[k]; ok { // a key other cells carry and this one lacks is left out
				keep = append(keep, k+"="+v)
			}
		}
		out[s] = strings.Join(keep, " ")
	}
	return out
}
