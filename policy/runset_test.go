package policy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/trace"
)

// TestFixedSetAsHeap: with fixed keys, the sorted list gives every call the victims the heap
// and its frontier give, in the same order, through puts (new jobs, re-keyed ones), removals,
// takes and the tentative rule's put-backs.
func TestFixedSetAsHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 300
	jobs := make([]*Job, n)
	keys := make([]Key, n)
	for i := range jobs {
		jobs[i] = &Job{Job: trace.Job{ID: trace.JobID(i), Submit: time.Duration(rng.IntN(20))}, Idx: int32(i)}
	}
	key := func(j *Job) Key { return keys[j.Idx] }
	heap, fixed := runSet{}, runSet{}
	fixed.fixed = true
	heap.grow(n)
	fixed.grow(n)
	in := map[int]bool{}
	for call := range 3000 {
		now := time.Duration(call)
		// Between calls: jobs start, stop or are re-keyed.
		for range rng.IntN(8) {
			i := rng.IntN(n)
			if in[i] && rng.IntN(3) == 0 {
				heap.remove(jobs[i])
				fixed.remove(jobs[i])
				delete(in, i)
				continue
			}
			keys[i] = Key{A: float64(rng.IntN(4)), B: int64(rng.IntN(3))}
			heap.put(entry(jobs[i], keys[i], now))
			fixed.put(entry(jobs[i], keys[i], now))
			in[i] = true
		}
		heap.start(now, key)
		fixed.start(now, key)
		var taken []ranked
		for step := 0; ; step++ {
			a, okA := heap.lowest(now, key)
			b, okB := fixed.lowest(now, key)
			if okA != okB || okA && (a.j != b.j || a.k != b.k) {
				t.Fatalf("call %d, step %d: lowest %v %v, heap %v %v", call, step, b.id, okB, a.id, okA)
			}
			if !okA {
				break
			}
			if len(taken) > 0 && rng.IntN(6) == 0 {
				// A tentative attempt failed: its victims go back.
				for _, x := range taken {
					heap.putBack(x)
					fixed.putBack(x)
				}
				taken = taken[:0]
				continue
			}
			heap.take()
			fixed.take()
			if rng.IntN(2) == 0 {
				taken = append(taken, a)
			}
		}
	}
}
