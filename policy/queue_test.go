package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sharebench/sharebench/trace"
)

// order is the queue's order, for the reference slice.
func order(a, b *Job) int { return Compare(a.K, a, b.K, b) }

// TestQueue checks the chunked queue against a sorted slice under random inserts and deletes,
// with few distinct keys so that ties fall back to submit times and IDs: with second keys on
// every job, on none, and on a few.
func TestQueue(t *testing.T) {
	for _, withB := range []int{1, 0, 40} {
		t.Run(fmt.Sprintf("second-key-one-in=%d", withB), func(t *testing.T) { testQueue(t, withB) })
	}
	// Dense: about 1,000 of 3,000 jobs queued (two levels of bits). Sparse: about 300 of
	// 300,000 (four levels), so that whole words and whole summary words are empty.
	t.Run("by-index", func(t *testing.T) { testQueueByIndex(t, 3000, 1000) })
	t.Run("by-index-sparse", func(t *testing.T) { testQueueByIndex(t, 300000, 300) })
}

// testQueueByIndex checks a queue kept by job index (every key zero) over n jobs, of which it
// holds about fill at a time, against a sorted slice, as testQueue does, with After asked for
// zero and other keys.
func testQueueByIndex(t *testing.T, n, fill int) {
	rng := rand.New(rand.NewPCG(3, 4))
	all := make([]*Job, n)
	for i := range all {
		all[i] = &Job{Job: trace.Job{ID: trace.JobID(rng.IntN(1 << 20)), Submit: time.Duration(rng.IntN(500))}}
	}
	slices.SortFunc(all, func(a, b *Job) int { return trace.Compare(a.Job, b.Job) })
	all = slices.CompactFunc(all, func(a, b *Job) bool { return a.ID == b.ID && a.Submit == b.Submit })
	for i, j := range all {
		j.Idx = int32(i)
	}
	var q Queue
	q.ByIndex(all)
	in := make([]bool, len(all))
	var ref []*Job
	for step := range 40000 {
		j := all[rng.IntN(len(all))]
		if len(ref) > 0 && rng.IntN(2) == 0 {
			j = ref[rng.IntN(len(ref))]
		}
		if !in[j.Idx] && (len(ref) < fill || rng.IntN(2) == 0) {
			q.Insert(j)
			at, _ := slices.BinarySearchFunc(ref, j, order)
			ref = slices.Insert(ref, at, j)
		} else {
			if q.Delete(j) != in[j.Idx] {
				t.Fatalf("step %d: Delete(job %d) reports %v, want %v", step, j.ID, !in[j.Idx], in[j.Idx])
			}
			if in[j.Idx] {
				at, _ := slices.BinarySearchFunc(ref, j, order)
				ref = slices.Delete(ref, at, at+1)
			}
		}
		in[j.Idx] = slices.Contains(ref, j)
		if q.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, q.Len(), len(ref))
		}
		if step%1999 != 0 {
			continue
		}
		if len(ref) > 2*fill {
			t.Fatalf("step %d: %d jobs queued, want about %d", step, len(ref), fill)
		}
		checkOrder(t, step, &q, ref)
		// After every job, queued or not (in a long list: the queued ones, their neighbours and
		// a sample).
		ask := all
		if len(all) > 3000 {
			ask = nil
			for _, j := range ref {
				for i := max(0, int(j.Idx)-1); i <= min(len(all)-1, int(j.Idx)+1); i++ {
					ask = append(ask, all[i])
				}
			}
			for range 3000 {
				ask = append(ask, all[rng.IntN(len(all))])
			}
			ask = append(ask, all[0], all[len(all)-1])
		}
		for _, x := range ask {
			for _, k := range []Key{{}, {A: 1}, {A: -1}, {B: 1}, {B: -1}} {
				want := sort.Search(len(ref), func(i int) bool { return Compare(ref[i].K, ref[i], k, x) > 0 })
				var got *Job
				if want < len(ref) {
					got = ref[want]
				}
				if q.At(q.After(k, x)) != got {
					t.Fatalf("step %d: After(%v, job %d) is not the first later job", step, k, x.ID)
				}
			}
		}
	}
	words := 0
	for _, l := range q.ix.lv {
		words += len(l)
	}
	if 8*words > IndexBytes(len(all)) {
		t.Errorf("the queue's bits take %d bytes, more than IndexBytes(%d) = %d", 8*words, len(all), IndexBytes(len(all)))
	}
	defer func() {
		if recover() == nil {
			t.Error("a queue kept by index took a job with a key")
		}
	}()
	q.Insert(&Job{K: Key{A: 1}})
}

// checkOrder checks that All, Backward and a walk with Next give the reference's order.
func checkOrder(t *testing.T, step int, q *Queue, ref []*Job) {
	t.Helper()
	if got := slices.Collect(q.All()); !slices.Equal(got, ref) {
		t.Fatalf("step %d: All differs from the sorted reference", step)
	}
	back := slices.Collect(q.Backward())
	slices.Reverse(back)
	if !slices.Equal(back, ref) {
		t.Fatalf("step %d: Backward differs from the reverse of the reference", step)
	}
	var walked []*Job
	for p := (Pos{}); q.At(p) != nil; p = q.Next(p) {
		walked = append(walked, q.At(p))
	}
	if !slices.Equal(walked, ref) {
		t.Fatalf("step %d: Next walk differs from the reference", step)
	}
}

// testQueue gives one job in withB a random second key (0: none).
func testQueue(t *testing.T, withB int) {
	rng := rand.New(rand.NewPCG(1, 2))
	secondKey := func() int64 {
		if withB == 0 || rng.IntN(withB) != 0 {
			return 0
		}
		return int64(1 + rng.IntN(2))
	}
	var q Queue
	var ref []*Job
	var all []*Job
	for step := range 20000 {
		if len(ref) == 0 || rng.IntN(5) < 3 {
			j := &Job{Job: trace.Job{ID: trace.JobID(len(all)), Submit: time.Duration(rng.IntN(50))}, K: Key{A: float64(rng.IntN(4)), B: secondKey()}}
			all = append(all, j)
			q.Insert(j)
			at, _ := slices.BinarySearchFunc(ref, j, order)
			ref = slices.Insert(ref, at, j)
		} else {
			k := rng.IntN(len(ref))
			if !q.Delete(ref[k]) {
				t.Fatalf("step %d: job %d not found", step, ref[k].ID)
			}
			if q.Delete(ref[k]) {
				t.Fatalf("step %d: job %d deleted twice", step, ref[k].ID)
			}
			ref = slices.Delete(ref, k, k+1)
		}
		if q.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, q.Len(), len(ref))
		}
		if step%997 != 0 {
			continue
		}
		checkOrder(t, step, &q, ref)
		for range 20 {
			x := all[rng.IntN(len(all))]
			want := len(ref)
			for i, j := range ref {
				if Compare(j.K, j, x.K, x) > 0 {
					want = i
					break
				}
			}
			var got *Job
			if want < len(ref) {
				got = ref[want]
			}
			if q.At(q.After(x.K, x)) != got {
				t.Fatalf("step %d: After(job %d) is not the first later job", step, x.ID)
			}
		}
	}
}
