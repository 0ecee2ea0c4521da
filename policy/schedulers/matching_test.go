package schedulers

import (
	"math/rand/v2"
	"testing"
)

// TestBlossomBruteForce checks the matching against every matching of small random graphs: its
// weight must be the largest, its mates mutual. Weights are multiples of 1/8, so that graphs have
// many matchings of equal weight, as Muri's have where jobs share a model, and sums are exact.
func TestBlossomBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b blossom
	for c := range 3000 {
		n := 1 + rng.IntN(9)
		w := make([][]float64, n+1)
		for u := range w {
			w[u] = make([]float64, n+1)
		}
		density := rng.Float64()
		for u := 1; u <= n; u++ {
			for v := u + 1; v <= n; v++ {
				if rng.Float64() < density {
					x := float64(1+rng.IntN(16)) / 8
					w[u][v], w[v][u] = x, x
				}
			}
		}
		mates := b.maxWeightMatching(n, func(u, v int) float64 { return w[u][v] })
		got := 0.0
		for u := 1; u <= n; u++ {
			v := mates[u]
			if v == 0 {
				continue
			}
			if v < 1 || v > n || mates[v] != u || w[u][v] <= 0 {
				t.Fatalf("case %d: vertex %d matched to %d (mate of %d: %d) over weight %g", c, u, v, v, mates[max(0, min(v, n))], w[u][max(0, min(v, n))])
			}
			if u < v {
				got += w[u][v]
			}
		}
		if best := bestMatching(w, n, 1, make([]bool, n+1)); got != best {
			t.Fatalf("case %d (n=%d): matching of weight %g, the best has %g; weights %v", c, n, got, best, w)
		}
	}
}

// bestMatching is the largest weight of a matching of vertices u..n not in used.
func bestMatching(w [][]float64, n, u int, used []bool) float64 {
	for u <= n && used[u] {
		u++
	}
	if u > n {
		return 0
	}
	used[u] = true
	best := bestMatching(w, n, u+1, used) // u stays single
	for v := u + 1; v <= n; v++ {
		if !used[v] && w[u][v] > 0 {
			used[v] = true
			best = max(best, w[u][v]+bestMatching(w, n, u+1, used))
			used[v] = false
		}
	}
	used[u] = false
	return best
}

// TestInterleave pins the interleaving model on hand-checked groups: two jobs whose stages fit in
// each other's gaps run at the longer one's period, and a job's group never runs faster than the
// job alone when its stages fill its step.
func TestInterleave(t *testing.T) {
	// A: loads 3, computes 1, communicates 0; B: loads 0, computes 1, communicates 3. In the
	// two-job form, each one's first stage beside the other's last two: max(3, 1+3) + max(0, 1+0).
	a := muriKind{iter: 4, stage: [3]float64{3, 1, 0}}
	b := muriKind{iter: 4, stage: [3]float64{0, 1, 3}}
	f := muriOverhead[0] / muriAlone
	if got, want := interleave([]muriKind{a, b}), 5*f; got > want {
		t.Errorf("interleave(A, B) = %g, want at most %g", got, want)
	}
	for _, g := range [][]muriKind{{a, a}, {a, b, a}, {a, b, a, b}} {
		if got := interleave(g); got < a.iter {
			t.Errorf("interleave of %d jobs = %g, below one job's own %g", len(g), got, a.iter)
		}
	}
	// The value does not depend on the order the jobs are given in.
	if x, y := interleave([]muriKind{a, b, a}), interleave([]muriKind{b, a, a}); x != y {
		t.Errorf("interleave depends on the order: %g and %g", x, y)
	}
}
