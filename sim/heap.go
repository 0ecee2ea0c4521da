package sim

import "time"

// eventKind distinguishes the events in the queue.
type eventKind uint8

const (
	evFinish eventKind = iota // a job's predicted completion (stale if its version moved on)
	evWake                    // a wake-up a policy asked for
	evTick                    // a periodic scheduling round
)

type event struct {
	t    time.Duration
	seq  uint64
	kind eventKind
	job  int32  // index into the engine's job slice
	ver  uint32 // job version when the event was pushed
}

// queue is a binary min-heap of events ordered by (t, seq); seq is an insertion counter, so
// simultaneous events pop in the order they were pushed.
type queue struct {
	ev  []event
	seq uint64
}

// before orders events by (t, seq); seq is unique, so the order is total.
func before(a, b *event) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) }

// push and pop move a hole instead of swapping, which writes each event once.
func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.ev = append(q.ev, e)
	ev := q.ev
	i := len(ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !before(&e, &ev[p]) {
			break
		}
		ev[i] = ev[p]
		i = p
	}
	ev[i] = e
}

func (q *queue) pop() event {
	ev := q.ev
	top := ev[0]
	n := len(ev) - 1
	x := ev[n]
	ev = ev[:n]
	q.ev = ev
	i := 0
	for n > 0 {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && before(&ev[r], &ev[m]) {
			m = r
		}
		if !before(&ev[m], &x) {
			break
		}
		ev[i] = ev[m]
		i = m
	}
	if n > 0 {
		ev[i] = x
	}
	return top
}

func (q *queue) len() int { return len(q.ev) }

func (q *queue) peek() time.Duration { return q.ev[0].t }
