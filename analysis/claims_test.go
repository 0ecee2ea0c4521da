package analysis

import (
	"math"
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
	point := func(delta float64) Delta { return Delta{Estimate: Estimate{Mean: delta, N: 1}, Paired: true} }
	ci := func(delta, half float64) Delta {
		return Delta{Estimate: Estimate{Mean: delta, Half: half, N: 5}, Paired: true}
	}
	tests := []struct {
		name           string
		claim          Claim
		d              Delta
		dir, magnitude string
	}{
		{"T1 one draw inside the range", t1, point(-30), Holds, Within},
		{"T1 one draw at the lower end", t1, point(-27), Holds, Within},
		{"T1 rounds to the lower end", t1, point(-26.96), Holds, Within},
		{"T1 just below the lower end", t1, point(-26.94), Holds, Weaker},
		{"T1 at the upper end", t1, point(-33), Holds, Within},
		{"T1 beyond the range", t1, point(-58), Holds, Exceeds},
		{"T1 one draw, a small reduction", t1, point(-0.9), Inconclusive, Weaker},
		{"T1 one draw, 1 pp", t1, point(-1), Holds, Weaker},
		{"T1 one draw, no change", t1, point(0), Inconclusive, Weaker},
		{"T1 one draw, 1 pp worse", t1, point(1), Contradicted, Weaker},
		{"T1 CI entirely above 0", t1, ci(5, 2), Contradicted, Weaker},
		{"T1 CI includes 0", t1, ci(17.2, 50.5), Inconclusive, Within},
		{"T1 CI includes 0 and the range", t1, ci(-10, 20), Inconclusive, Within},
		{"T1 CI inside the range", t1, ci(-30, 3), Holds, Within},
		{"T1 CI entirely above the range", t1, ci(-56.2, 7.1), Holds, Exceeds},
		{"T1 CI meets the range from above", t1, ci(-40, 7.1), Holds, Within},
		{"T1 CI entirely below the range", t1, ci(-10, 5), Holds, Weaker},
		{"T2 one draw, a small reduction", t2, point(-1.5), Holds, Within},
		{"T2 at 17", t2, point(-17), Holds, Within},
		{"T2 far beyond 17", t2, point(-91), Holds, Exceeds},
		{"T2 no change", t2, point(0), Inconclusive, Weaker},
		{"T2 worse", t2, point(3), Contradicted, Weaker},
		{"T2 CI includes 0", t2, ci(-2, 5), Inconclusive, Within},
		{"no data", t1, point(math.NaN()), NoData, NoData},
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
	add("a", "tiresias", 100, 100)
	add("a", "tiresias-testbed", 50, 50)
	add("a", "sjf-ffs", 80, 80)
	add("a", "sjf-bsbf", 70, 70) // −30 vs tiresias, +40 vs tiresias-testbed, −12.5 vs sjf-ffs
	add("b", "tiresias", 100)
	add("b", "sjf-bsbf", 90) // −10: holds, weaker; no sjf-ffs: no T2 row
	add("c", "tiresias", 100)
	add("c", "sjf-ffs", 100)
	add("c", "sjf-bsbf", 100.5) // +0.5: inconclusive twice
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
	ci, di, mi, ni := col("comparison"), col("direction"), col("magnitude"), col("draws")
	var got []string
	for _, r := range tab.Rows {
		got = append(got, strings.Join([]string{r[1], r[ci], r[ni], r[di], r[mi]}, " "))
	}
	want := []string{
		"a sjf-bsbf vs tiresias 2 holds within", "a sjf-bsbf vs tiresias-testbed 2 contradicted weaker", "a sjf-bsbf vs sjf-ffs 2 holds within",
		"b sjf-bsbf vs tiresias 1 holds weaker",
		"c sjf-bsbf vs tiresias 1 inconclusive weaker", "c sjf-bsbf vs sjf-ffs 1 inconclusive weaker",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
