package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBinHeapDrop: after drop, the remaining items pop in order (here a total one), whatever
// was dropped and however far the heap had moved.
func TestBinHeapDrop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		h := binHeap[int]{less: func(a, b int) bool { return a < b }}
		for range 400 {
			h.push(rng.IntN(1000))
		}
		for range rng.IntN(100) {
			h.pop()
		}
		dead := func(x int) bool { return x%3 == 0 }
		var want []int
		for _, x := range h.items {
			if !dead(x) {
				want = append(want, x)
			}
		}
		slices.Sort(want)
		h.drop(dead)
		var got []int
		for h.len() > 0 {
			got = append(got, h.pop())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: popped %v, want %v", round, got, want)
		}
	}
}
