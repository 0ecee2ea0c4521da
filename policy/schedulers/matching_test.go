package schedulers

import (
	"fmt"
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

// TestBlossomReference holds the matching to the line-by-line port of matching.py it was made
// fast from (blossomRef): the same mates on random graphs of up to 120 vertices, one after
// another on the same value as Muri calls it, of every kind Muri builds: many equal weights,
// weights that differ by one direction's rounding, edges missing, the weights of real
// interleaving groups, and twins (vertices whose edges weigh the same) with many ties, some of
// them twins but for one edge.
func TestBlossomReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var fast blossom
	var ref blossomRef
	cases := 600
	if testing.Short() {
		cases = 150
	}
	for c := range cases {
		n := 1 + rng.IntN(40)
		if c%10 == 0 {
			n = 60 + rng.IntN(60)
		}
		w := randomWeights(rng, n, c%5)
		f := func(u, v int) float64 { return w[u][v] }
		sameMates(t, fmt.Sprintf("case %d (n=%d, form %d)", c, n, c%5), n, fast.maxWeightMatching(n, f), ref.maxWeightMatching(n, f))
	}
}

// sameMates fails the test where the mates got of vertices 1..n differ from the reference's.
func sameMates(t *testing.T, what string, n int, got, want []int) {
	t.Helper()
	for u := 1; u <= n; u++ {
		if got[u] != want[u] {
			t.Fatalf("%s: vertex %d matched to %d, the reference matches it to %d", what, u, got[u], want[u])
		}
	}
}

// TestBlossomKinds holds matchKinds, the matching of graphs whose weights depend on their
// vertices' kinds (Muri's groups), to the line-by-line port of matching.py: the same mates on
// random graphs of up to 200 vertices of a few kinds, whose weights are tied values, missing
// edges, or Muri's used ratios with their one-sided rounding, called one after another with
// maxWeightMatching on the same value.
func TestBlossomKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var fast blossom
	var ref blossomRef
	cases := 400
	if testing.Short() {
		cases = 100
	}
	for c := range cases {
		n := 1 + rng.IntN(50)
		if c%10 == 0 {
			n = 100 + rng.IntN(100)
		}
		nk := 1 + rng.IntN(8)
		weight := make([]float64, nk*nk)
		ks := make([]muriKind, nk)
		for k := range ks {
			ks[k].stage = [3]float64{float64(rng.IntN(200)), float64(1 + rng.IntN(200)), float64(rng.IntN(50))}
		}
		for a := range nk {
			for b := range nk {
				switch c % 3 {
				case 0:
					weight[a*nk+b] = float64(1+rng.IntN(4)) / 7
				case 1:
					weight[a*nk+b] = float64(rng.IntN(3)) / 7
				case 2:
					weight[a*nk+b] = usedRatioOf(ks[a], ks[b])
				}
			}
		}
		kind := make([]int, n)
		for u := range kind {
			kind[u] = rng.IntN(nk)
		}
		f := func(u, v int) float64 { return weight[kind[u-1]*nk+kind[v-1]] }
		sameMates(t, fmt.Sprintf("case %d (n=%d, %d kinds)", c, n, nk), n, fast.matchKinds(kind, nk, weight), ref.maxWeightMatching(n, f))
		if c%2 == 0 {
			w := randomWeights(rng, n, c%5)
			fast.maxWeightMatching(n, func(u, v int) float64 { return w[u][v] })
		}
	}
}

// randomWeights draws the weights of a graph of n vertices in one of five forms: 0, a few
// distinct values with many ties; 1, those values with some edges missing; 2, distinct values
// whose two directions differ in the last bits; 3, the used ratios of pairs of jobs of a few
// random kinds, as Muri weighs them; 4, a few values by kind, with one edge direction in 10n
// moved off its kinds' value.
func randomWeights(rng *rand.Rand, n, form int) [][]float64 {
	w := make([][]float64, n+1)
	for u := range w {
		w[u] = make([]float64, n+1)
	}
	var kinds []muriKind
	kind := make([]int, n+1)
	var table [4][4]float64
	if form == 4 {
		for a := range table {
			for b := range a + 1 {
				table[a][b] = float64(1+rng.IntN(4)) / 7
				table[b][a] = table[a][b]
			}
		}
		for u := range kind {
			kind[u] = rng.IntN(1 + rng.IntN(len(table)))
		}
	}
	if form == 3 {
		for range 1 + rng.IntN(6) {
			kinds = append(kinds, muriKind{stage: [3]float64{float64(rng.IntN(200)), float64(1 + rng.IntN(200)), float64(rng.IntN(50))}})
		}
		for u := range kind {
			kind[u] = rng.IntN(len(kinds))
		}
	}
	density := 0.3 + 0.7*rng.Float64()
	for u := 1; u <= n; u++ {
		for v := u + 1; v <= n; v++ {
			switch form {
			case 0, 1:
				if form == 1 && rng.Float64() > density {
					continue
				}
				x := float64(1+rng.IntN(6)) / 7
				w[u][v], w[v][u] = x, x
			case 2:
				x := rng.Float64()
				w[u][v], w[v][u] = x, x*(1+float64(rng.IntN(3)-1)*1e-15)
			case 3:
				a, b := kinds[kind[u]], kinds[kind[v]]
				w[u][v] = usedRatioOf(a, b)
				w[v][u] = usedRatioOf(b, a)
			case 4:
				x := table[kind[u]][kind[v]]
				w[u][v], w[v][u] = x, x
				if rng.IntN(10*n) == 0 {
					w[u][v] += 1.0 / 7
				}
			}
		}
	}
	return w
}

// usedRatioOf is the weight Muri gives a pair of jobs of kinds a and b.
func usedRatioOf(a, b muriKind) float64 {
	used := 0.0
	for _, k := range []muriKind{a, b} {
		used += k.stage[0] + k.stage[1] + k.stage[2]
	}
	return used / (interleave([]muriKind{a, b}) * 4)
}

// BenchmarkBlossom matches 256 jobs of 12 kinds, the largest graph Muri-S and Muri-L build on
// 8x8 GPUs (four jobs to a GPU).
func BenchmarkBlossom(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, kinds = 256, 12
	var ws [][][]float64
	for range 4 {
		ks := make([]muriKind, kinds)
		for k := range ks {
			ks[k].stage = [3]float64{float64(rng.IntN(200)), float64(1 + rng.IntN(200)), float64(rng.IntN(50))}
		}
		kind := make([]int, n+1)
		for u := range kind {
			kind[u] = rng.IntN(kinds)
		}
		w := make([][]float64, n+1)
		for u := range w {
			w[u] = make([]float64, n+1)
			for v := range w[u] {
				w[u][v] = usedRatioOf(ks[kind[u]], ks[kind[v]])
			}
		}
		ws = append(ws, w)
	}
	var m blossom
	for b.Loop() {
		for _, w := range ws {
			m.maxWeightMatching(n, func(u, v int) float64 { return w[u][v] })
		}
	}
}
