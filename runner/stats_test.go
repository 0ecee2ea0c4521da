package runner

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestQuantileType7(t *testing.T) {
	t.Parallel()
	// Reference values from R: quantile(x, p, type = 7).
	one10 := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"p10 of 1..10", one10, 0.10, 1.9},
		{"p25 of 1..10", one10, 0.25, 3.25},
		{"median of 1..10", one10, 0.5, 5.5},
		{"p90 of 1..10", one10, 0.90, 9.1},
		{"min", one10, 0, 1},
		{"max", one10, 1, 10},
		{"single", []float64{7}, 0.9, 7},
		{"p10 of 4 values", []float64{10, 20, 30, 40}, 0.10, 13},
		{"p90 of 4 values", []float64{10, 20, 30, 40}, 0.90, 37},
		{"clamped below", one10, -1, 1},
		{"clamped above", one10, 2, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quantile(tt.xs, tt.p); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Quantile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
			}
		})
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile of an empty sample should be NaN")
	}
}

func TestMedianAndDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		xs   []float64
		want Dist
	}{
		{"odd", []float64{5, 1, 3}, Dist{N: 3, Median: 3, Mean: 3, P10: 1.4, P25: 2, P75: 4, P90: 4.6}},
		{"even", []float64{4, 1, 3, 2}, Dist{N: 4, Median: 2.5, Mean: 2.5, P10: 1.3, P25: 1.75, P75: 3.25, P90: 3.7}},
		{"empty", nil, Dist{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.xs...)
			got := Describe(tt.xs)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("Describe(%v) mismatch (-want +got):\n%s", tt.xs, diff)
			}
			if diff := cmp.Diff(in, tt.xs); diff != "" {
				t.Errorf("Describe modified its input:\n%s", diff)
			}
		})
	}
	if got := Median([]float64{9, 1, 5, 7}); got != 6 {
		t.Errorf("Median = %v, want 6", got)
	}
	if d := (Dist{P25: 1, P75: 4}); d.IQR() != 3 {
		t.Errorf("IQR = %v, want 3", d.IQR())
	}
}

func TestBootstrapCI(t *testing.T) {
	t.Parallel()
	xs := []float64{1.52, 1.61, 1.58, 1.70, 1.49}
	lo, hi := BootstrapCI(xs, BootstrapResamples, 0.95, SeedFor("cell", "xi-a"))
	lo2, hi2 := BootstrapCI(xs, BootstrapResamples, 0.95, SeedFor("cell", "xi-a"))
	if lo != lo2 || hi != hi2 {
		t.Fatalf("same seed, different CI: [%v, %v] vs [%v, %v]", lo, hi, lo2, hi2)
	}
	med := Median(xs)
	if !(lo <= med && med <= hi) || lo < 1.49 || hi > 1.70 {
		t.Errorf("CI [%v, %v] should contain the median %v and stay within the data", lo, hi, med)
	}
	lo3, hi3 := BootstrapCI(xs, BootstrapResamples, 0.95, SeedFor("other", "xi-a"))
	if lo3 < 1.49 || hi3 > 1.70 {
		t.Errorf("other seed: CI [%v, %v] outside the data", lo3, hi3)
	}
	if lo, hi := BootstrapCI([]float64{2.5}, 100, 0.95, 1); lo != 2.5 || hi != 2.5 {
		t.Errorf("single value: CI [%v, %v], want [2.5, 2.5]", lo, hi)
	}
	// Pinned values: the CI must not change across Go releases (we derive indices from
	// PCG.Uint64 ourselves). Update only with a deliberate algorithm change.
	ys := []float64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}
	plo, phi := BootstrapCI(ys, BootstrapResamples, 0.95, SeedFor("pinned"))
	t.Logf("pinned CI: [%v, %v]", plo, phi)
	if got := [2]float64{plo, phi}; got != [2]float64{12.5, 18.5} {
		t.Errorf("pinned CI = %v, want [12.5 18.5]", got)
	}
	e := Estimate95(xs, 7)
	if e.N != 5 || e.Median != med || len(e.Values) != 5 {
		t.Errorf("Estimate95 = %+v", e)
	}
}

func TestUniformIndex(t *testing.T) {
	t.Parallel()
	src := rand.NewPCG(1, 2)
	counts := make([]int, 3)
	for i := 0; i < 30000; i++ {
		v := uniformIndex(src, 3)
		if v >= 3 {
			t.Fatalf("uniformIndex(3) = %d", v)
		}
		counts[v]++
	}
	for i, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("value %d drawn %d times of 30000, want about 10000", i, c)
		}
	}
}

func TestSeedFor(t *testing.T) {
	t.Parallel()
	if SeedFor("a", "b") == SeedFor("ab") || SeedFor("a", "b") == SeedFor("b", "a") {
		t.Error("SeedFor should separate its parts")
	}
	if SeedFor("x") != SeedFor("x") {
		t.Error("SeedFor is not deterministic")
	}
}
