package analysis

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTCrit95(t *testing.T) {
	t.Parallel()
	// Printed tables of t_{0.975} (four decimals) and the normal limit z_{0.975} = 1.959964.
	tests := []struct {
		dof  int
		want float64
	}{
		{1, 12.7062}, {2, 4.3027}, {3, 3.1824}, {4, 2.7764}, {9, 2.2622}, {30, 2.0423},
		{35, 2.0301}, {40, 2.0211}, {50, 2.0086}, {60, 2.0003}, {120, 1.9799}, {1000, 1.9623},
		{1 << 30, 1.9600},
	}
	for _, tc := range tests {
		if got := TCrit95(tc.dof); math.Abs(got-tc.want) > 5e-5 {
			t.Errorf("TCrit95(%d) = %v, want %v (to four decimals)", tc.dof, got, tc.want)
		}
	}
	if !math.IsNaN(TCrit95(0)) {
		t.Error("TCrit95(0) is not NaN")
	}
	// The quantile decreases strictly with the degrees of freedom, towards z_{0.975}.
	for d := 1; d < 200; d++ {
		if TCrit95(d+1) >= TCrit95(d) || TCrit95(d+1) <= 1.959963 {
			t.Errorf("TCrit95(%d) = %v, TCrit95(%d) = %v", d+1, TCrit95(d+1), d, TCrit95(d))
		}
	}
}

func TestCI95(t *testing.T) {
	t.Parallel()
	approx := cmpopts.EquateApprox(0, 1e-6)
	tests := []struct {
		name string
		xs   []float64
		want Estimate
	}{
		// mean 12, s = 2, half = 4.302653 · 2/√3 = 4.968275.
		{"three values", []float64{10, 12, 14}, Estimate{Mean: 12, Half: 4.968275, N: 3}},
		// mean 2.5, s = √(5/3) = 1.290994, s/√4 = 0.645497, half = 3.182446 · 0.645497 = 2.054260.
		{"four values", []float64{1, 2, 3, 4}, Estimate{Mean: 2.5, Half: 2.054260, N: 4}},
		// mean 100, s = √2 = 1.414214, s/√2 = 1, half = 12.706205.
		{"two values", []float64{99, 101}, Estimate{Mean: 100, Half: 12.706205, N: 2}},
		{"one value", []float64{7}, Estimate{Mean: 7, N: 1}},
		{"identical values", []float64{5, 5, 5}, Estimate{Mean: 5, Half: 0, N: 3}},
	}
	for _, tc := range tests {
		got := CI95(tc.xs)
		if diff := cmp.Diff(tc.want, got, approx); diff != "" {
			t.Errorf("%s: CI95 mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
	e := CI95([]float64{10, 12, 14})
	if !e.HasCI() || math.Abs(e.Lo()-7.031725) > 1e-6 || math.Abs(e.Hi()-16.968275) > 1e-6 {
		t.Errorf("CI bounds = [%v, %v], want [7.031725, 16.968275]", e.Lo(), e.Hi())
	}
	if CI95([]float64{3}).HasCI() {
		t.Error("a single value has a CI")
	}
	if !math.IsNaN(CI95(nil).Mean) {
		t.Error("the mean of nothing is not NaN")
	}
}

func TestQuantileAuthorsDefinition(t *testing.T) {
	t.Parallel()
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6} // sorted: 1..10
	tests := []struct {
		q    float64
		want float64
	}{
		{0, 1}, {0.5, 6}, {0.9, 10}, {0.95, 10}, {0.99, 10}, {1, 10}, {0.15, 2},
	}
	for _, tc := range tests {
		if got := Quantile(xs, tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want sorted(x)[int(q·n)] = %v", tc.q, got, tc.want)
		}
	}
	if xs[0] != 5 {
		t.Error("Quantile sorted its input")
	}
}

func TestECDF(t *testing.T) {
	t.Parallel()
	x, f := ECDF([]float64{3, 1, 2, 2})
	if diff := cmp.Diff([]float64{1, 2, 3}, x); diff != "" {
		t.Errorf("x (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{0.25, 0.75, 1}, f); diff != "" {
		t.Errorf("F (-want +got):\n%s", diff)
	}
}
