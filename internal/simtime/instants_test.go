package simtime

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestInstantsAsSortedList: pushes at or after the last time popped, from near and far futures
// with ties, and pops come out as from a sorted list.
func TestInstantsAsSortedList(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Instants
	var ref []time.Duration
	last := time.Duration(0)
	for step := range 50000 {
		if rng.IntN(3) > 0 {
			d := last + time.Duration(rng.IntN(4))<<uint(rng.IntN(50))
			h.Push(d)
			ref = append(ref, d)
			continue
		}
		if h.Len() != len(ref) {
			t.Fatalf("step %d: %d times, want %d", step, h.Len(), len(ref))
		}
		if len(ref) == 0 {
			continue
		}
		slices.Sort(ref)
		if m := h.Min(); m != ref[0] {
			t.Fatalf("step %d: min %v, want %v", step, m, ref[0])
		}
		if p := h.Pop(); p != ref[0] {
			t.Fatalf("step %d: popped %v, want %v", step, p, ref[0])
		}
		last, ref = ref[0], ref[1:]
	}
}
