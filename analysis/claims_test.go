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

func TestVerdict(t *testing.T) {
	t.Parallel()
	claims := PaperClaims()
	t1, t2 := claims[0], claims[1]
	point := func(delta float64) Delta { return Delta{Estimate: Estimate{Mean: delta, N: 1}, Paired: true} }
	ci := func(delta, half float64) Delta {
		return Delta{Estimate: Estimate{Mean: delta, Half: half, N: 3}, Paired: true}
	}
	tests := []struct {
		name       string
		claim      Claim
		d          Delta
		verdict    string
		remarkPart string
	}{
		{"T1 inside the range", t1, point(-30), Reproduced, "single seed"},
		{"T1 at the lower end", t1, point(-27), Reproduced, ""},
		{"T1 rounds to the lower end", t1, point(-26.96), Reproduced, ""},
		{"T1 just below the lower end", t1, point(-26.94), Weaker, ""},
		{"T1 at the upper end", t1, point(-33), Reproduced, ""},
		{"T1 beyond the range", t1, point(-40), Reproduced, "exceeds the claimed 33%"},
		{"T1 small reduction", t1, point(-0.1), Weaker, ""},
		{"T1 rounds to no reduction", t1, point(-0.04), Contradicted, ""},
		{"T1 no change", t1, point(0), Contradicted, ""},
		{"T1 worse", t1, point(5), Contradicted, ""},
		{"T1 worse, CI above 0", t1, ci(5, 2), Contradicted, "CI entirely above 0 (worse)"},
		{"T1 reduction, CI includes 0", t1, ci(-10, 12), Weaker, "CI includes 0"},
		{"T1 reproduced, CI excludes 0", t1, ci(-30, 3), Reproduced, ""},
		{"T2 small reduction", t2, point(-0.1), Reproduced, ""},
		{"T2 at 17", t2, point(-17), Reproduced, ""},
		{"T2 beyond 17", t2, point(-25), Reproduced, "exceeds the claimed 17%"},
		{"T2 no change", t2, point(0), Contradicted, ""},
		{"T2 worse", t2, point(3), Contradicted, ""},
		{"no data", t1, point(math.NaN()), NoData, "no data"},
	}
	for _, tc := range tests {
		v, rem := Verdict(tc.claim, tc.d)
		if v != tc.verdict {
			t.Errorf("%s: verdict %q, want %q", tc.name, v, tc.verdict)
		}
		if !strings.Contains(rem, tc.remarkPart) {
			t.Errorf("%s: remark %q lacks %q", tc.name, rem, tc.remarkPart)
		}
		if tc.remarkPart == "" && tc.d.HasCI() && rem != "" {
			t.Errorf("%s: unexpected remark %q", tc.name, rem)
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
	add("a", "sjf-ffs", 80, 80)
	add("a", "sjf-bsbf", 70, 70) // −30 vs tiresias, −12.5 vs sjf-ffs
	add("b", "tiresias", 100)
	add("b", "sjf-bsbf", 90) // −10: weaker; no sjf-ffs
	add("c", "tiresias", 100)
	add("c", "sjf-ffs", 100)
	add("c", "sjf-bsbf", 105) // contradicted twice
	tab, err := Claims(runs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	vi := -1
	for i, h := range tab.Header {
		if h == "verdict" {
			vi = i
		}
	}
	for _, r := range tab.Rows {
		got = append(got, r[1]+" "+r[2]+" "+r[vi])
	}
	want := []string{"a T1 reproduced", "a T2 reproduced", "b T1 weaker", "b T2 n/a", "c T1 contradicted", "c T2 contradicted"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
