package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sharebench/sharebench/trace"
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

// TestDueHeapAsBinHeap: dueHeap pops deadlines in binHeap's order, ties in (at, job) included,
// through pushes, pops and drops.
func TestDueHeapAsBinHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ref := binHeap[deadline]{less: func(a, b deadline) bool { return deadlineBefore(&a, &b) }}
	var due dueHeap
	jobs := []*Job{{Preempts: 0}, {Preempts: 1}, {Preempts: 2}}
	for step := range 20000 {
		switch r := rng.IntN(10); {
		case r < 6:
			// Few instants and ids: many ties, told apart only by runs.
			d := deadline{at: time.Duration(rng.IntN(30)), job: trace.JobID(rng.IntN(3)), runs: step}
			d.j = jobs[d.job]
			ref.push(d)
			due.push(d)
		case r < 9 && ref.len() > 0:
			if a, b := ref.pop(), due.pop(); a != b {
				t.Fatalf("step %d: popped %+v, binHeap %+v", step, b, a)
			}
		case r == 9:
			dead := func(d deadline) bool { return d.runs%4 == 0 }
			ref.drop(dead)
			due.drop(func(d *deadline) bool { return dead(*d) })
		}
		if ref.len() != due.len() {
			t.Fatalf("step %d: %d deadlines, binHeap %d", step, due.len(), ref.len())
		}
	}
}

// TestFamHeapAsBinHeap: famHeap pops families in binHeap's order under the merge's comparison,
// with heads that tie on the first key.
func TestFamHeapAsBinHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 200
	head := make([]*Job, n)
	a := make([]float64, n)
	for round := range 100 {
		for f := range n {
			head[f] = &Job{Job: trace.Job{ID: trace.JobID(rng.IntN(50)), Submit: time.Duration(rng.IntN(4))}, K: Key{A: float64(rng.IntN(5)), B: int64(rng.IntN(2))}}
			a[f] = head[f].K.A
		}
		ref := binHeap[int32]{less: func(x, y int32) bool { return Compare(head[x].K, head[x], head[y].K, head[y]) < 0 }}
		h := famHeap{a: a, head: head}
		for f := range n {
			if rng.IntN(3) > 0 {
				ref.items = append(ref.items, int32(f))
				h.items = append(h.items, int32(f))
			}
		}
		ref.init()
		h.init()
		for ref.len() > 0 {
			if h.top() != ref.top() {
				t.Fatalf("round %d: top %d, binHeap %d", round, h.top(), ref.top())
			}
			if f := h.top(); rng.IntN(2) == 0 {
				// The family's next job, as the walk's pass does.
				head[f] = &Job{Job: trace.Job{ID: trace.JobID(rng.IntN(50)), Submit: time.Duration(rng.IntN(4))}, K: Key{A: head[f].K.A + float64(rng.IntN(2)), B: int64(rng.IntN(2))}}
				a[f] = head[f].K.A
				ref.down(0)
				h.down(0)
			} else {
				ref.pop()
				h.pop()
			}
		}
		if h.len() != 0 {
			t.Fatalf("round %d: %d families left", round, h.len())
		}
	}
}
