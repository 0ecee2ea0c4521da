package walk

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sharebench/sharebench/trace"
)

// swapHeap is the textbook heap binHeap was before it moved a hole instead of swapping.
type swapHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *swapHeap[T]) push(x T) {
	h.items = append(h.items, x)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *swapHeap[T]) down(i int) {
	for n := len(h.items); ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r < n && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

func (h *swapHeap[T]) pop() T {
	top, n := h.items[0], len(h.items)-1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	h.down(0)
	return top
}

// TestBinHeapAsSwapHeap: binHeap pops in the textbook heap's order, ties included (items that
// tie on the order but differ), through pushes, pops, and re-sifts of the top, so decisions
// that depend on the order of tied deadlines or family heads stay as a textbook heap gives.
func TestBinHeapAsSwapHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	type item struct {
		at   time.Duration
		job  trace.JobID
		runs int
	}
	before := func(a, b item) bool { return a.at < b.at || (a.at == b.at && a.job < b.job) }
	ref := swapHeap[item]{less: before}
	h := binHeap[item]{less: before}
	for step := range 30000 {
		switch r := rng.IntN(11); {
		case r < 6:
			// Few instants and ids: many ties, told apart only by runs.
			d := item{at: time.Duration(rng.IntN(30)), job: trace.JobID(rng.IntN(3)), runs: step}
			ref.push(d)
			h.push(d)
		case r < 9 && h.len() > 0:
			if a, b := ref.pop(), h.pop(); a != b {
				t.Fatalf("step %d: popped %+v, textbook heap %+v", step, b, a)
			}
		case r < 11 && h.len() > 0:
			// The top takes a later key and sinks, as the walk's family heads do.
			d := item{at: h.items[0].at + time.Duration(rng.IntN(3)), job: trace.JobID(rng.IntN(3)), runs: step}
			ref.items[0], h.items[0] = d, d
			ref.down(0)
			h.down(0)
		}
		if !slices.Equal(h.items, ref.items) {
			t.Fatalf("step %d: the heaps differ", step)
		}
	}
}
