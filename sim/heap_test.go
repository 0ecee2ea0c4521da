package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestQueueCompact: dropping events from the queue leaves the others popping in exactly the
// order they would have (time, then push order), whatever was dropped.
func TestQueueCompact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var q queue
		var want []event
		for i := range 500 {
			q.push(event{t: time.Duration(rng.IntN(50)), kind: evFinish, job: int32(i), ver: uint32(rng.IntN(3))})
		}
		// Pop some first, so that compaction starts from a heap that has moved.
		for range rng.IntN(100) {
			q.pop()
		}
		dead := func(ev *event) bool { return ev.ver == 0 }
		for _, ev := range q.ev {
			if !dead(&ev) {
				want = append(want, ev)
			}
		}
		slices.SortFunc(want, func(a, b event) int {
			if a.t != b.t {
				return int(a.t - b.t)
			}
			return int(int64(a.seq) - int64(b.seq))
		})
		q.compact(dead)
		if q.len() != len(want) {
			t.Fatalf("round %d: %d events left, want %d", round, q.len(), len(want))
		}
		for i, w := range want {
			if got := q.pop(); got != w {
				t.Fatalf("round %d: pop %d = %+v, want %+v", round, i, got, w)
			}
		}
	}
}
