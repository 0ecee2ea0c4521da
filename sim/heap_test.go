package sim

import (
	"math/rand/v2"
	"slices"
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

// TestQueueAsAllEvents drives the queue and a plain list of every event ever pushed (the
// engine's former queue, in which a superseded completion stayed as a stale event) through
// random predictions, retirements, wake-ups and pops at a clock that only moves on: the queue
// must stop at the instants of the list's live events and pop them in the same order.
func TestQueueAsAllEvents(t *testing.T) {
	type ref struct {
		event
		live bool
	}
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 3))
		const jobs = 40
		var q queue
		q.grow(jobs)
		var all []ref
		cur := make([]int, jobs) // index in all of each job's live prediction, -1 if none
		for i := range cur {
			cur[i] = -1
		}
		var seq uint64
		now := time.Duration(0)
		var gotLive, wantLive []event
		for step := range 6000 {
			// Far and near futures, with ties, as the lineage's overhead makes them.
			at := now + time.Duration(rng.IntN(4))*time.Duration(1+rng.IntN(3))<<uint(rng.IntN(40))
			for k, e := range q.ev {
				if e.job >= 0 && q.pos[e.job] != int32(k) {
					t.Fatalf("seed %d step %d: job %d at %d, pos %d", seed, step, e.job, k, q.pos[e.job])
				}
			}
			switch r := rng.IntN(10); {
			case r < 5:
				i := int32(rng.IntN(jobs))
				seq++
				if k := cur[i]; k >= 0 {
					all[k].live = false
				}
				q.predict(i, at, uint32(step))
				all = append(all, ref{event{t: at, seq: seq, kind: evFinish, job: i, ver: uint32(step)}, true})
				cur[i] = len(all) - 1
			case r < 6:
				i := rng.IntN(jobs)
				q.retire(int32(i))
				if k := cur[i]; k >= 0 {
					all[k].live = false
					cur[i] = -1
				}
			case r < 7:
				seq++
				q.push(event{t: at, kind: evWake})
				all = append(all, ref{event{t: at, seq: seq, kind: evWake, job: -1}, true})
			default:
				all = slices.DeleteFunc(all, func(r ref) bool { return !r.live })
				for i := range cur {
					cur[i] = -1
				}
				for k, r := range all {
					if r.kind == evFinish {
						cur[r.job] = k
					}
				}
				if q.len() != len(all) {
					t.Fatalf("seed %d step %d: %d events, want %d", seed, step, q.len(), len(all))
				}
				if len(all) == 0 {
					continue
				}
				// The engine takes every event of the next instant, then acts.
				slices.SortStableFunc(all, func(a, b ref) int {
					if before(&a.event, &b.event) {
						return -1
					}
					return 1
				})
				for i := range cur {
					cur[i] = -1
				}
				now = all[0].t
				if q.peek() != now {
					t.Fatalf("seed %d step %d: next instant %v, want %v", seed, step, q.peek(), now)
				}
				for len(all) > 0 && all[0].t == now {
					wantLive = append(wantLive, all[0].event)
					all = all[1:]
				}
				for q.len() > 0 && q.peek() == now {
					gotLive = append(gotLive, q.pop())
				}
				for k, r := range all {
					if r.live && r.kind == evFinish {
						cur[r.job] = k
					}
				}
				if q.len() != len(all) {
					t.Fatalf("seed %d step %d: %d events left at %v, want %d", seed, step, q.len(), now, len(all))
				}
			}
		}
		if len(gotLive) < 300 {
			t.Fatalf("seed %d: only %d live events", seed, len(gotLive))
		}
		if !slices.Equal(gotLive, wantLive) {
			k := 0
			for k < min(len(gotLive), len(wantLive)) && gotLive[k] == wantLive[k] {
				k++
			}
			t.Fatalf("seed %d: %d and %d live events, first difference at %d: %v, want %v", seed, len(gotLive), len(wantLive), k, gotLive[k:min(k+3, len(gotLive))], wantLive[k:min(k+3, len(wantLive))])
		}
	}
}
