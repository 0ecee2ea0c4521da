package schedulers

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestShareCheckSpecExamples is the table of docs/paper.md §3.5 (computed there with the authors'
// formula).
func TestShareCheckSpecExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		etcA, etcB, xiA, xiB float64
		tCon, tSeq           float64
		share                bool
	}{
		{100, 200, 1.3, 1.4, 183.5714, 250, true},  // case B
		{300, 100, 1.8, 1.7, 272.7778, 250, false}, // case A
		{300, 100, 1.2, 1.3, 225.8333, 250, true},  // case A
		{50, 400, 2.0, 2.0, 275.0, 425, true},      // case B
		{400, 400, 1.5, 1.5, 600.0, 600, false},    // case A, strict <
		{400, 400, 1.49, 1.49, 596.0, 600, true},   // case A
		{1000, 10, 1.1, 1.1, 506.0, 510, true},     // case A
	}
	for _, tc := range tests {
		share, tCon, tSeq := ShareCheck(tc.etcA, tc.etcB, tc.xiA, tc.xiB)
		if share != tc.share || math.Abs(tCon-tc.tCon) > 5e-5 || tSeq != tc.tSeq {
			t.Errorf("ShareCheck(%v, %v, %v, %v) = %v, %.4f, %v; want %v, %.4f, %v",
				tc.etcA, tc.etcB, tc.xiA, tc.xiB, share, tCon, tSeq, tc.share, tc.tCon, tc.tSeq)
		}
	}
}

// TestSymmetricThreshold checks docs/paper.md T6: with equal slowdowns and the running job finishing
// first while shared (case A), sharing pays exactly when ξ < 1.5.
func TestSymmetricThreshold(t *testing.T) {
	t.Parallel()
	for _, xi := range []float64{1.0, 1.2, 1.4999, 1.5, 1.5001, 1.8, 3} {
		share, _, _ := ShareCheck(1000, 100, xi, xi) // ξ·1000 ≥ ξ·100: case A
		if want := xi < 1.5; share != want {
			t.Errorf("ξ = %v: share = %v, want %v", xi, share, want)
		}
	}
}

// checkEndpoint verifies Theorem 1 on one instance: tCon and tSeq are the pair-average JCT at
// τ = 0 and τ = T_b, and no τ in between beats the better endpoint.
func checkEndpoint(t *testing.T, etcA, etcB, xiA, xiB float64) {
	t.Helper()
	share, tCon, tSeq := ShareCheck(etcA, etcB, xiA, xiB)
	tol := 1e-9 * (etcA + etcB + 1) * (xiA + xiB)
	if got := PairAverage(etcA, etcB, xiA, xiB, 0); math.Abs(got-tCon) > tol {
		t.Fatalf("(%v,%v,%v,%v): t_con %v, PairAverage(0) %v", etcA, etcB, xiA, xiB, tCon, got)
	}
	if got := PairAverage(etcA, etcB, xiA, xiB, etcB); math.Abs(got-tSeq) > tol {
		t.Fatalf("(%v,%v,%v,%v): t_seq %v, PairAverage(T_b) %v", etcA, etcB, xiA, xiB, tSeq, got)
	}
	best := min(tCon, tSeq)
	const steps = 400
	for k := 1; k < steps; k++ {
		tau := etcB * float64(k) / steps
		if f := PairAverage(etcA, etcB, xiA, xiB, tau); f < best-tol {
			t.Fatalf("(%v,%v,%v,%v): τ=%v gives %v < best endpoint %v (share=%v)", etcA, etcB, xiA, xiB, tau, f, best, share)
		}
	}
}

// TestTheorem1 is the property of docs/paper.md T5 on random instances: the best sharing time is
// always "now" or "never".
func TestTheorem1(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		etcA := math.Exp(rng.Float64()*12 - 2)
		etcB := math.Exp(rng.Float64()*12 - 2)
		xiA := 1 + rng.Float64()*rng.Float64()*3
		xiB := 1 + rng.Float64()*rng.Float64()*3
		checkEndpoint(t, etcA, etcB, xiA, xiB)
	}
}

func FuzzShareCheck(f *testing.F) {
	f.Add(100.0, 200.0, 1.3, 1.4)
	f.Add(400.0, 400.0, 1.5, 1.5)
	f.Add(1000.0, 10.0, 1.1, 1.1)
	f.Fuzz(func(t *testing.T, etcA, etcB, xiA, xiB float64) {
		ok := func(x, lo, hi float64) bool { return x >= lo && x <= hi }
		if !ok(etcA, 1e-3, 1e7) || !ok(etcB, 1e-3, 1e7) || !ok(xiA, 1, 10) || !ok(xiB, 1, 10) {
			t.Skip()
		}
		checkEndpoint(t, etcA, etcB, xiA, xiB)
	})
}
