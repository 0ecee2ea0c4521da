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

func (q *queue) less(i, j int) bool {
	a, b := &q.ev[i], &q.ev[j]
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.ev = append(q.ev, e)
	i := len(q.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.ev[i], q.ev[p] = q.ev[p], q.ev[i]
		i = p
	}
}

func (q *queue) pop() event {
	top := q.ev[0]
	n := len(q.ev) - 1
	q.ev[0] = q.ev[n]
	q.ev = q.ev[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.ev[i], q.ev[m] = q.ev[m], q.ev[i]
		i = m
	}
	return top
}

func (q *queue) len() int { return len(q.ev) }

func (q *queue) peek() time.Duration { return q.ev[0].t }
