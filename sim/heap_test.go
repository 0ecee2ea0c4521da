package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestQueueOrder: events pop by time, and simultaneous ones in the order they were pushed.
func TestQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q queue
	last, n := event{}, 0
	for step := range 50000 {
		if q.len() == 0 || rng.IntN(5) < 3 {
			q.push(event{t: last.t + time.Duration(rng.IntN(20)), job: int32(step)})
			n++
			continue
		}
		e := q.pop()
		n--
		if e.t < last.t || e.t == last.t && e.seq < last.seq {
			t.Fatalf("step %d: popped (t %d, seq %d) after (t %d, seq %d)", step, e.t, e.seq, last.t, last.seq)
		}
		last = e
		if q.len() != n {
			t.Fatalf("step %d: %d events, want %d", step, q.len(), n)
		}
	}
}
