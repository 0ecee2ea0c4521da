package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/results"
)

// testRun builds a run in memory: summary only, no jobs.
func testRun(exp, trace, policy string, seed uint64, avgJCT float64) *results.Run {
	labels := results.Labels{}
	if exp != "" {
		labels[results.LabelExperiment] = exp
	}
	if trace != "" {
		labels[results.LabelTrace] = trace
	}
	return &results.Run{
		Dir: exp + "/" + trace + "/" + policy + "/" + string(rune('0'+seed)),
		Summary: results.Summary{Policy: policy, PolicySpec: policy, Trace: "file.csv", Seed: seed,
			AvgJCTS: avgJCT, GPUs: 8, Labels: labels},
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	claims := PaperClaims()
	t1, t2 := claims[0], claims[2]
	ci := func(delta, half float64) Delta {
		return Delta{Estimate: Estimate{Mean: delta, Half: half, N: MinDraws}, Paired: true}
	}
	tests := []struct {
		name           string
		claim          Claim
		d              Delta
		dir, magnitude string
	}{
		{"one draw: no verdict however large", t1, Delta{Estimate: Estimate{Mean: -30, N: 1}, Paired: true}, Undetermined, Undetermined},
		{"four draws: no verdict", t1, Delta{Estimate: Estimate{Mean: -30, Half: 1, N: MinDraws - 1}, Paired: true}, Undetermined, Undetermined},
		{"T1 CI inside the range", t1, ci(-30, 3), Holds, Within},
		{"T1 point at the lower end", t1, ci(-27, 5), Holds, Within},
		{"T1 rounds to the lower end", t1, ci(-26.96, 5), Holds, Within},
		{"T1 point just below the range, CI meets it", t1, ci(-26.94, 5), Holds, Inconclusive},
		{"T1 point at the upper end", t1, ci(-33, 3), Holds, Within},
		{"T1 CI entirely above the range", t1, ci(-56.2, 7.1), Holds, Exceeds},
		{"T1 point above the range, CI meets it", t1, ci(-40, 7.1), Holds, Inconclusive},
		{"T1 CI entirely below the range", t1, ci(-10, 5), Holds, Weaker},
		{"T1 CI entirely above 0", t1, ci(5, 2), Contradicted, Weaker},
		{"T1 CI includes 0, below the range", t1, ci(17.2, 50.5), Inconclusive, Inconclusive},
		{"T1 CI includes 0 and the range, point outside", t1, ci(-14.5, 16.5), Inconclusive, Inconclusive},
		{"T1 CI includes 0, point in the range", t1, ci(-28, 30), Inconclusive, Within},
		{"T2 a small reduction", t2, ci(-1.5, 1), Holds, Within},
		{"T2 at 17", t2, ci(-17, 2), Holds, Within},
		{"T2 far beyond 17", t2, ci(-91, 3), Holds, Exceeds},
		{"T2 beyond 17, CI meets it", t2, ci(-20, 5), Holds, Inconclusive},
		{"T2 no reduction", t2, ci(3, 2), Contradicted, Weaker},
		{"T2 CI includes 0, point a reduction", t2, ci(-2, 5), Inconclusive, Within},
		{"T2 CI includes 0, point 0", t2, ci(0, 5), Inconclusive, Inconclusive},
		{"no data", t1, Delta{Estimate: Estimate{Mean: math.NaN(), N: 1}}, NoData, NoData},
	}
	for _, tc := range tests {
		dir, mag := Judge(tc.claim, tc.d)
		if dir != tc.dir || mag != tc.magnitude {
			t.Errorf("%s: %s, %s; want %s, %s", tc.name, dir, mag, tc.dir, tc.magnitude)
		}
	}
}

func TestRelDelta(t *testing.T) {
	t.Parallel()
	base := &Group{Runs: []*results.Run{testRun("E", "t", "tiresias", 1, 100), testRun("E", "t", "tiresias", 2, 200), testRun("E", "t", "tiresias", 3, 400)}}
	x := &Group{Runs: []*results.Run{testRun("E", "t", "sjf-bsbf", 1, 70), testRun("E", "t", "sjf-bsbf", 2, 140), testRun("E", "t", "sjf-bsbf", 3, 320)}}
	// Per-seed Δ: −30, −30, −20 → mean −26.6667, s = 5.7735, half = 4.302653 · 5.7735/√3 = 14.342176.
	d := RelDelta(x, base, AvgJCT)
	if !d.Paired || d.N != 3 || d.Unpaired != 0 {
		t.Errorf("RelDelta = %+v, want paired over 3 seeds", d)
	}
	if math.Abs(d.Mean-(-26.666667)) > 1e-5 || math.Abs(d.Half-14.342176) > 1e-5 {
		t.Errorf("RelDelta = %.6f ± %.6f, want −26.666667 ± 14.342176", d.Mean, d.Half)
	}
	// Seeds that do not pair: ratio of the means, no CI.
	other := &Group{Runs: []*results.Run{testRun("E", "t", "sjf-bsbf", 7, 150), testRun("E", "t", "sjf-bsbf", 8, 250)}}
	d = RelDelta(other, base, AvgJCT)
	want := (200.0 - 700.0/3) / (700.0 / 3) * 100
	if d.Paired || d.HasCI() || math.Abs(d.Mean-want) > 1e-9 || d.Unpaired != 5 {
		t.Errorf("unpaired RelDelta = %+v, want mean %v without CI, 5 unpaired", d, want)
	}
	// Partly paired: only the common seed counts.
	partial := &Group{Runs: []*results.Run{testRun("E", "t", "sjf-bsbf", 2, 180), testRun("E", "t", "sjf-bsbf", 9, 1)}}
	d = RelDelta(partial, base, AvgJCT)
	if !d.Paired || d.N != 1 || d.Mean != -10 || d.Unpaired != 3 {
		t.Errorf("partly paired RelDelta = %+v, want −10 over 1 seed, 3 unpaired", d)
	}
}

func TestClaimsVerdictPerTrace(t *testing.T) {
	t.Parallel()
	var runs []*results.Run
	add := func(trace, policy string, jcts ...float64) {
		for i, v := range jcts {
			runs = append(runs, testRun("E2", trace, policy, uint64(i+1), v))
		}
	}
	add("a", "tiresias", 100, 100, 100, 100, 100)
	add("a", "tiresias-testbed", 50, 50, 50, 50, 50)
	add("a", "sjf-ffs", 80, 80, 80, 80, 80)
	add("a", "sjf-bsbf", 70, 71, 69, 70, 70) // −30 vs tiresias, +40 vs tiresias-testbed, −12.5 vs sjf-ffs
	add("b", "tiresias", 100)
	add("b", "sjf-bsbf", 90) // one draw: undetermined; no sjf-ffs: no T2 row
	add("c", "tiresias", 100, 100, 100, 100, 100)
	add("c", "sjf-ffs", 100, 100, 100, 100, 100)
	add("c", "sjf-bsbf", 101, 99, 100.5, 99.5, 100) // CI includes 0
	tab, err := Claims(runs)
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int {
		for i, h := range tab.Header {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %q in %v", name, tab.Header)
		return -1
	}
	ci, di, mi, ni, co := col("comparison"), col("direction"), col("magnitude"), col("draws"), col("counted")
	var got []string
	for _, r := range tab.Rows {
		got = append(got, strings.Join([]string{r[1], r[ci], r[ni], r[di], r[mi], r[co]}, " "))
	}
	want := []string{
		"a sjf-bsbf vs tiresias 5 holds within yes", "a sjf-bsbf vs tiresias-testbed 5 contradicted weaker yes", "a sjf-bsbf vs sjf-ffs 5 holds within yes",
		"b sjf-bsbf vs tiresias 1 undetermined undetermined yes",
		"c sjf-bsbf vs tiresias 5 inconclusive weaker yes", "c sjf-bsbf vs sjf-ffs 5 inconclusive inconclusive yes",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestClaimsCountOnce: a row whose runs are all runs of another row (the same simulations
// reported by two experiments) is not counted and names the row that is, the larger one
// counting; a row whose profile is counterfactual is a sensitivity row.
func TestClaimsCountOnce(t *testing.T) {
	t.Parallel()
	var runs []*results.Run
	add := func(exp, policy string, seeds int, jct func(seed int) float64, counterfactual string) {
		for i := 1; i <= seeds; i++ {
			r := testRun(exp, "syn", policy, uint64(i), jct(i))
			r.Summary.Counterfactual = counterfactual
			runs = append(runs, r)
		}
	}
	tir := func(i int) float64 { return 100 + float64(i) }
	bsbf := func(i int) float64 { return 130 + 2*float64(i) }
	add("E6-load", "tiresias", 6, tir, "")
	add("E6-load", "sjf-bsbf", 6, bsbf, "")
	add("E6-xi", "tiresias", 5, tir, "") // seeds 1–5 of E6-load: the same runs
	add("E6-xi", "sjf-bsbf", 5, bsbf, "")
	add("E6-scaled", "tiresias", 5, tir, "ξ scaled ×0.5")
	add("E6-scaled", "sjf-bsbf", 5, func(i int) float64 { return 80 + float64(i) }, "ξ scaled ×0.5")
	set, err := CheckClaims(runs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range set.Rows {
		same := ""
		if r.SameAs >= 0 {
			same = set.Rows[r.SameAs].Where
		}
		got = append(got, fmt.Sprintf("%s counted=%v same=%q sensitivity=%q", r.Where, r.Counted(), same, r.Sensitivity))
	}
	want := []string{
		`E6-load syn counted=true same="" sensitivity=""`,
		`E6-scaled syn counted=false same="" sensitivity="ξ scaled ×0.5"`,
		`E6-xi syn counted=false same="E6-load syn" sensitivity=""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSummaryExtraMetrics: the summary table shows the slowdown, fairness and effective-GPU
// columns when the runs carry them, and leaves them out for summaries without them.
func TestSummaryExtraMetrics(t *testing.T) {
	t.Parallel()
	plain := []*results.Run{testRun("E", "t", "tiresias", 1, 100), testRun("E", "t", "sjf-bsbf", 1, 90)}
	for _, r := range plain {
		r.Summary.SlowdownMean = math.NaN()
	}
	tab, err := Summarize(plain, SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.Join(tab.Header, "|"); strings.Contains(h, "slowdown") || strings.Contains(h, "effective") {
		t.Errorf("columns without data: %s", h)
	}
	with := []*results.Run{testRun("E", "t", "tiresias", 1, 100), testRun("E", "t", "sjf-bsbf", 1, 90)}
	for i, r := range with {
		r.Summary.SlowdownMean, r.Summary.SlowdownP95, r.Summary.SlowdownP99 = 2+float64(i), 5, 9
		r.Summary.SlowdownFairness, r.Summary.GPUUtil, r.Summary.EffectiveGPUUtil = 0.5, 0.8, 0.7
	}
	tab, err = Summarize(with, SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(tab.Header, name) }
	for _, c := range []string{"mean slowdown", "p95 slowdown", "p99 slowdown", "slowdown fairness", "effective GPU (%)"} {
		if col(c) < 0 {
			t.Fatalf("no column %q in %v", c, tab.Header)
		}
	}
	if r := tab.Rows[1]; r[col("mean slowdown")] != "3.00" || r[col("effective GPU (%)")] != "70.0" || r[col("GPU util (%)")] != "80.0" {
		t.Errorf("row %v", r)
	}
}
