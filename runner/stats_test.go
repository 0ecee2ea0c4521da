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
		{"odd", []float64{5, 1, 3}, Dist{N: 3, Median: 3, Mean: 3, Std: 2, P10: 1.4, P25: 2, P75: 4, P90: 4.6}},
		{"even", []float64{4, 1, 3, 2}, Dist{N: 4, Median: 2.5, Mean: 2.5, Std: math.Sqrt(5.0 / 3), P10: 1.3, P25: 1.75, P75: 3.25, P90: 3.7}},
		{"one", []float64{7}, Dist{N: 1, Median: 7, Mean: 7, P10: 7, P25: 7, P75: 7, P90: 7}},
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
}

// TestEstimateMethods pins which interval each number of repeats gets: none for one value, a
// Student-t interval of the mean below BootstrapMinRepeats (the bootstrap of a median would be
// the sample range there), the seeded bootstrap from it on.
func TestEstimateMethods(t *testing.T) {
	t.Parallel()
	if e := Estimate95([]float64{1.4}, 1); e.Method != CINone || e.CI != [2]float64{1.4, 1.4} || e.N != 1 {
		t.Errorf("one value: %+v", e)
	}
	// mean 1.58, s = 0.082158, t(0.975, 4) = 2.776445: 1.58 ∓ 0.102013 (R: t.test(xs)$conf.int).
	xs := []float64{1.52, 1.61, 1.58, 1.70, 1.49}
	e := Estimate95(xs, 7)
	if e.Method != CIStudentT || e.N != 5 || e.Median != 1.58 || math.Abs(e.CI[0]-1.477987) > 1e-5 || math.Abs(e.CI[1]-1.682013) > 1e-5 {
		t.Errorf("five values: %+v", e)
	}
	if hw := e.HalfWidth(); math.Abs(hw-(e.CI[1]-e.CI[0])/2/1.58) > 1e-12 {
		t.Errorf("half-width %v", hw)
	}
	// R: t.test(c(2, 4))$conf.int = -9.706, 15.706: two values give an honest, wide interval.
	if e := Estimate95([]float64{2, 4}, 1); math.Abs(e.CI[0]+9.7062) > 1e-3 || math.Abs(e.CI[1]-15.7062) > 1e-3 {
		t.Errorf("two values: %+v", e)
	}
	ys := []float64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}
	e = Estimate95(ys, SeedFor("pinned"))
	if e.Method != CIBootstrap || e.CI != [2]float64{12.5, 18.5} {
		t.Errorf("twelve values: %+v, want the pinned bootstrap CI [12.5 18.5]", e)
	}
	if lo, hi := TInterval([]float64{3}, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("TInterval of one value = [%v, %v], want NaN", lo, hi)
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
