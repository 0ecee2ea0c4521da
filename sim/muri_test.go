package sim

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/muripub"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/trace"
)

// muriTraces are Muri's four Philly traces and their variants with every job submitted at 0.
var muriTraces = muripub.Traces

// TestMuriDlasGPU replays Muri's traces under tiresias and compares every job with the Muri
// simulator's own dlas-gpu (testdata/muri/README.md): the scheduling alone, and with the
// lineage's two non-scheduling effects switched on.
func TestMuriDlasGPU(t *testing.T) { testMuri(t, "tiresias", "dlas-gpu") }

// TestMuriShortest does the same for srtf and the Muri simulator's shortest.
func TestMuriShortest(t *testing.T) { testMuri(t, "srtf", "shortest") }

// TestMuriShortestGPU does the same for srsf and the Muri simulator's shortest-gpu.
func TestMuriShortestGPU(t *testing.T) { testMuri(t, "srsf", "shortest-gpu") }

// TestMuriGittins does the same for tiresias-gittins and the lineage's dlas-gpu-gittins.
func TestMuriGittins(t *testing.T) { testMuri(t, "tiresias-gittins", "dlas-gpu-gittins") }

// TestMuriAntMan does the same for antman and the Muri simulator's antman.
func TestMuriAntMan(t *testing.T) { testMuri(t, "antman", "antman") }

// muriConfig is the Muri simulator's cluster (n8g8) with, when lineage is set, its two
// non-scheduling effects, and no restart cost.
func muriConfig(name string, lineage bool) Config {
	cfg := Config{Shape: cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}, TraceName: name}
	if lineage {
		cfg.IterScale, cfg.OverheadEveryEvent = 1.015, true
	}
	return cfg
}

// muriGap is how far a run is from the Muri simulator's: the jobs that differ (JCT by more than
// 1 ms, or preemptions), the largest JCT difference in milliseconds, and the differences of
// average JCT, makespan and p99 JCT in thousandths of a percent.
type muriGap struct {
	jobs               int
	maxMS              int64
	avg, makespan, p99 int64
}

// muriApart are the runs, by policy and then by trace ("-plain": without the lineage's effects),
// that part ways with the Muri simulator, for the reasons docs/simulator.md gives ("Floating-point
// time in the Muri simulator"), with their measured gaps. Every other run matches job by job.
var muriApart = map[string]map[string]muriGap{
	"tiresias": {
		"trace2_pr": {2955, 101, 0, 0, 0},
		"trace4_pr": {1483, 971738308, -375, 2, 6},
	},
	"srtf": {
		"trace2-plain": {1126, 18641, 0, 0, 0},
		"trace2":       {1096, 491186, 0, 0, 0},
		"trace2_pr":    {3351, 543, 0, 0, 0},
		"trace4-plain": {76, 6, 0, 0, 0},
		"trace4_pr":    {2310, 318678439, -72, 362, -106},
	},
	"srsf": {
		"trace2-plain": {345, 10, 0, 0, 0},
		"trace2_pr":    {3371, 86699, 0, 0, 0},
		"trace4-plain": {74, 6, 0, 0, 0},
		"trace4_pr":    {2351, 144738524, 5, -100, -278},
	},
	"antman": {
		"trace2-plain":    {250, 7376, 0, 0, 0},
		"trace2":          {1052, 15523, 0, 0, 0},
		"trace2_pr-plain": {171, 15962, 0, 0, 0},
		"trace2_pr":       {1033, 33941, 0, 0, 0},
		"trace4":          {887, 432691, 0, 1, 1},
		"trace4_pr-plain": {397, 132440, 0, 0, 0},
	},
	"muri-s": {
		"trace1": {23, 20, 0, 0, 0},
	},
	"muri-l": {
		"trace1":    {475, 607983042, 122, 320, 1573},
		"trace1_pr": {918, 2887681312, -41, 312, -668},
		"trace3_pr": {434, 1713513496, 314, -1613, 1148},
	},
	"themis": {
		"trace1":           {772, 5770263784, 564, -157, -369},
		"trace3":           {443, 2200367343, -172, 0, 493},
		"trace3_pr":        {982, 5388435350, 126494, -644, 164},
		"trace1-centre":    {222, 83555, 0, 0, 0},
		"trace1_pr-centre": {1494, 14115029211, 28884, -855, 2237},
		"trace2-centre":    {2705, 17960135756, 511, -1642, 462},
		"trace2_pr-centre": {5753, 24919753534, 84, -206, 452},
		"trace3-centre":    {42, 27, 0, 0, 0},
		"trace3_pr-centre": {808, 428182483, -55, -220, 230},
		"trace4-centre":    {930, 943850597, -22, -888, -649},
		"trace4_pr-centre": {2429, 752310133, 50, -27, -132},
	},
	"tiresias-gittins": {
		"trace1_pr-plain": {1189, 11233851668, 2482, 474, -1282},
		"trace1_pr":       {1070, 11385118198, 398, 98, 1065},
		"trace2-plain":    {58, 8, 0, 0, 0},
		"trace2":          {36, 6, 0, 0, 0},
		"trace2_pr-plain": {4818, 26714467865, 996, 1727, -51},
		"trace2_pr":       {3573, 30839495212, -1016, -711, 74},
		"trace3_pr-plain": {578, 5114645757, -2419, 386, -178},
		"trace3_pr":       {592, 5267747568, 119, 140, 364},
		"trace4-plain":    {84, 56, 0, 0, 0},
		"trace4":          {531, 675962277, 157, 716, 1055},
		"trace4_pr-plain": {2212, 5196005489, 614, -1009, -335},
		"trace4_pr":       {1314, 3446164260, 23, 195, 748},
	},
}

// testMuri runs policy on Muri's traces, as published and plain, with the fast executor and with
// the plain one, and requires every job's JCT (within 1 ms) and preemption count to be those of
// the Muri simulator's schedule, but for the runs of muriApart, whose gaps must be as measured.
func testMuri(t *testing.T, policyName, schedule string) {
	traces := muriTraces
	if testing.Short() {
		traces = []string{"trace3"}
	}
	for _, name := range traces {
		jobs := readTrace(t, "traces/muri-philly/"+name+".csv")
		for _, lineage := range []bool{false, true} {
			run := name
			if !lineage {
				run += "-plain"
			}
			ref := "testdata/muri/" + name + "-" + schedule + strings.TrimPrefix(run, name) + ".csv"
			cfg := muriConfig(name, lineage)
			// The fast executor, and the rule itself, which walks every job at every event.
			registries := map[string]*policy.Registry{"fast": builtin.Registry(), "rule": builtin.Registry(builtin.Reference())}
			for exec, reg := range registries {
				t.Run(ref+"/"+exec, func(t *testing.T) {
					r, want := runMuri(t, reg, policyName, cfg, jobs, ref)
					gap, diffs := muriCompare(r, jobs, want)
					checkMuriGap(t, policyName, run, gap, diffs, len(want))
				})
			}
		}
	}
}

// runMuri runs policy pol of registry reg on jobs and reads the Muri reference the run is
// compared with, which must list as many jobs.
func runMuri(t *testing.T, reg *policy.Registry, pol string, cfg Config, jobs []trace.Job, ref string) (*Result, map[trace.JobID]muriJob) {
	t.Helper()
	want := readMuri(t, ref)
	p, err := reg.New(pol)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), cfg, jobs, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != len(want) {
		t.Fatalf("%d jobs, Muri has %d", len(r.Jobs), len(want))
	}
	return r, want
}

// checkMuriGap requires a run to match Muri's job by job, or, for the runs of muriApart, to be as
// far from it as measured before. MURI_GAPS=1 prints the gaps in muriApart's form.
func checkMuriGap(t *testing.T, pol, run string, gap muriGap, diffs []string, jobs int) {
	t.Helper()
	pinned, apart := muriApart[pol][run]
	if os.Getenv("MURI_GAPS") != "" {
		fmt.Printf("\t\t%q: {%d, %d, %d, %d, %d},\n", run, gap.jobs, gap.maxMS, gap.avg, gap.makespan, gap.p99)
	}
	switch {
	case apart && gap != pinned:
		t.Errorf("apart from Muri by %+v, measured before as %+v", gap, pinned)
	case !apart && gap.jobs > 0:
		for _, d := range diffs {
			t.Error(d)
		}
		t.Errorf("%d of %d jobs differ from Muri", gap.jobs, jobs)
	}
}

// muriCompare measures how far a run is from Muri's per-job results, and describes the first few
// jobs that differ.
func muriCompare(r *Result, jobs []trace.Job, want map[trace.JobID]muriJob) (muriGap, []string) {
	var g muriGap
	var diffs []string
	var ours, theirs []float64
	var sumO, sumT, endO, endT, maxD float64
	submit := map[trace.JobID]float64{}
	for _, j := range jobs {
		submit[j.ID] = j.Submit.Seconds()
	}
	for _, j := range r.Jobs {
		w := want[j.ID]
		jct := j.JCT.Seconds()
		d := math.Abs(jct - w.jct)
		maxD = max(maxD, d)
		if d > 1e-3 || j.Preempts != w.preempts {
			if g.jobs++; g.jobs <= 5 {
				diffs = append(diffs, fmt.Sprintf("job %d: JCT %.6f s, %d preemptions; Muri %.6f s, %d", j.ID, jct, j.Preempts, w.jct, w.preempts))
			}
		}
		ours, theirs = append(ours, jct), append(theirs, w.jct)
		sumO, sumT = sumO+jct, sumT+w.jct
		endO, endT = max(endO, j.End.Seconds()), max(endT, submit[j.ID]+w.jct)
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	p := int(0.99 * float64(len(ours)))
	rel := func(a, b float64) int64 { return int64(math.Round((a/b - 1) * 1e5)) }
	g.maxMS = int64(math.Round(maxD * 1e3))
	g.avg, g.makespan, g.p99 = rel(sumO, sumT), rel(endO, endT), rel(ours[p], theirs[p])
	return g, diffs
}

// TestMuriPublished runs the policies whose Muri schedule the artifact's figures show under the
// lineage's flags and requires average JCT, makespan and p99 JCT within 0.1% of the published
// values, but for the runs of muriApart that are further from Muri's own (testMuri pins how far;
// TestMuriReferencesPublished shows that Muri's runs give the published values).
func TestMuriPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("the per-job tests cover the short run")
	}
	for _, pol := range []string{"srtf", "srsf", "tiresias"} {
		pub := muripub.Values[pol]
		for k, name := range muriTraces {
			if g, ok := muriApart[pol][name]; ok && max(abs(g.avg), abs(g.makespan), abs(g.p99)) > 100 {
				continue
			}
			t.Run(pol+"/"+name, func(t *testing.T) {
				p, err := builtin.Registry().New(pol)
				if err != nil {
					t.Fatal(err)
				}
				r, err := Run(context.Background(), muriConfig(name, true), readTrace(t, "traces/muri-philly/"+name+".csv"), p, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				s := r.Summary
				for m, got := range []float64{s.AvgJCT, s.Makespan, s.P99JCT} {
					if want := pub[m][k]; math.Abs(got-want) > 1e-3*want {
						t.Errorf("%s: %.3f s, published %.3f s (%+.3f%%)", []string{"average JCT", "makespan", "p99 JCT"}[m], got, want, 100*(got/want-1))
					}
				}
			})
		}
	}
}

// TestMuriReferencesPublished checks that the per-job references give the published values:
// average JCT, makespan (the last end) and p99 JCT of the lineage's runs within a millisecond.
func TestMuriReferencesPublished(t *testing.T) {
	schedule := map[string]string{"srtf": "shortest", "srsf": "shortest-gpu", "tiresias": "dlas-gpu"}
	for pol, sched := range schedule {
		pub := muripub.Values[pol]
		for k, name := range muriTraces {
			for m, got := range muriRefSummary(t, name, sched) {
				if math.Abs(got-pub[m][k]) > 1e-3 {
					t.Errorf("%s %s: %s %.6f s, published %.6f s", schedule[pol], name, []string{"average JCT", "makespan", "p99 JCT"}[m], got, pub[m][k])
				}
			}
		}
	}
}

// muriRefSummary returns the average JCT, makespan (the last end) and p99 JCT of the lineage's
// run of schedule on trace name, from its per-job reference.
func muriRefSummary(t *testing.T, name, schedule string) [3]float64 {
	t.Helper()
	want := readMuri(t, "testdata/muri/"+name+"-"+schedule+".csv")
	var sum, makespan float64
	var jcts []float64
	for _, j := range readTrace(t, "traces/muri-philly/"+name+".csv") {
		w, ok := want[j.ID]
		if !ok {
			t.Fatalf("%s %s: job %d has no reference", schedule, name, j.ID)
		}
		sum += w.jct
		makespan = max(makespan, j.Submit.Seconds()+w.jct)
		jcts = append(jcts, w.jct)
	}
	slices.Sort(jcts)
	return [3]float64{sum / float64(len(jcts)), makespan, jcts[int(0.99*float64(len(jcts)))]}
}

func abs(x int64) int64 { return max(x, -x) }

// TestMuriApartDocumented requires docs/simulator.md to list the runs of muriApart with their
// measured gaps, between the lines "<!-- muri-apart -->" and "<!-- end muri-apart -->".
func TestMuriApartDocumented(t *testing.T) {
	var b strings.Builder
	b.WriteString("| policy | trace | the lineage's effects | jobs apart | largest JCT gap (s) | Δ average JCT | Δ makespan | Δ p99 JCT |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|\n")
	pct := func(x int64) string { return fmt.Sprintf("%+.3f%%", float64(x)/1000) }
	for _, pol := range []string{"tiresias", "tiresias-gittins", "srtf", "srsf", "antman", "themis", "muri-s", "muri-l"} {
		for _, name := range muriTraces {
			for _, run := range []string{name + "-plain", name, name + "-centre"} {
				g, ok := muriApart[pol][run]
				if !ok {
					continue
				}
				effects := "on"
				switch run {
				case name + "-plain":
					effects = "off"
				case name + "-centre":
					effects = "on; Muri's code around sharebench's solver"
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %.3f | %s | %s | %s |\n", pol, name, effects, g.jobs, float64(g.maxMS)/1000, pct(g.avg), pct(g.makespan), pct(g.p99))
			}
		}
	}
	checkSimulatorDoc(t, "muri-apart", "list the runs apart from Muri as measured", b.String())
}

// checkSimulatorDoc requires docs/simulator.md to hold want between "<!-- marker -->" and
// "<!-- end marker -->"; what says what the table shows.
func checkSimulatorDoc(t *testing.T, marker, what, want string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/simulator.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(doc), "\n<!-- "+marker+" -->\n")
	table, _, ok2 := strings.Cut(rest, "<!-- end "+marker+" -->")
	if !ok1 || !ok2 || table != want {
		t.Errorf("docs/simulator.md does not %s; the table should read:\n%s", what, want)
	}
}

type muriJob struct {
	jct      float64
	preempts int
}

func readMuri(t *testing.T, path string) map[trace.JobID]muriJob {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[trace.JobID]muriJob{}
	for _, r := range rows[1:] {
		id, err1 := strconv.ParseInt(r[0], 10, 64)
		jct, err2 := strconv.ParseFloat(r[1], 64)
		pre, err3 := strconv.Atoi(r[2])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: bad row %v", path, r)
		}
		out[trace.JobID(id)] = muriJob{jct, pre}
	}
	return out
}
