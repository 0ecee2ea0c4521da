package sim

import (
	"math/bits"
	"time"
)

// eventKind distinguishes the events in the queue.
type eventKind uint8

const (
	evFinish eventKind = iota // a running job's predicted completion
	evWake                    // a wake-up a policy asked for
	evTick                    // a periodic scheduling round
	evStale                   // the instant of a completion predicted before and superseded since
)

type event struct {
	t    time.Duration
	seq  uint64
	kind eventKind
	job  int32  // index into the engine's job slice (-1: none)
	ver  uint32 // job version when the event was pushed
}

// queue holds the engine's events: a binary min-heap of the live ones ordered by (t, seq), seq
// being an insertion counter, so simultaneous events pop in the order they were pushed; at most
// one completion per job, updated in place when the job's prediction changes. The instant of a
// superseded prediction stays in the queue as a stale event (stale), because the engine still
// stops there: every stop splits the utilization integral, whose sums would otherwise change
// in the last digit. With the lineage's per-event overhead every event re-predicts every running
// job, so stale instants far outnumber live events; they sit in a radix heap of bare times.
type queue struct {
	ev    []event
	pos   []int32 // by job index: the position of its completion in ev, -1 if none
	seq   uint64
	stale instants
}

// before orders events by (t, seq); seq is unique, so the order is total.
func before(a, b *event) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) }

// grow makes room for the completions of jobs with indices below n.
func (q *queue) grow(n int) {
	for len(q.pos) < n {
		q.pos = append(q.pos, -1)
	}
}

// push adds a wake-up or a round.
func (q *queue) push(e event) {
	q.seq++
	e.seq, e.job = q.seq, -1
	q.ev = append(q.ev, e)
	q.up(len(q.ev)-1, e)
}

// predict sets job i's completion to t: a previous prediction becomes a stale instant.
func (q *queue) predict(i int32, t time.Duration, ver uint32) {
	q.seq++
	e := event{t: t, seq: q.seq, kind: evFinish, job: i, ver: ver}
	if k := q.pos[i]; k >= 0 {
		old := q.ev[k].t
		q.stale.push(old)
		if t < old {
			q.up(int(k), e)
		} else {
			q.down(int(k), e)
		}
		return
	}
	q.ev = append(q.ev, e)
	q.up(len(q.ev)-1, e)
}

// retire makes job i's completion, if any, a stale instant (the job stopped).
func (q *queue) retire(i int32) {
	k := q.pos[i]
	if k < 0 {
		return
	}
	q.stale.push(q.ev[k].t)
	q.remove(int(k))
}

// pop removes the earliest event: a live one, or a stale instant (kind evStale) before it.
func (q *queue) pop() event {
	if q.stale.n > 0 && (len(q.ev) == 0 || q.stale.min() < q.ev[0].t) {
		return event{t: q.stale.pop(), kind: evStale, job: -1}
	}
	top := q.ev[0]
	q.remove(0)
	return top
}

func (q *queue) len() int { return len(q.ev) + q.stale.n }

// peek returns the earliest event's time (the queue is not empty).
func (q *queue) peek() time.Duration {
	if q.stale.n > 0 && (len(q.ev) == 0 || q.stale.min() < q.ev[0].t) {
		return q.stale.min()
	}
	return q.ev[0].t
}

// set puts e at position k of the heap and notes where its job's completion is.
func (q *queue) set(k int, e event) {
	q.ev[k] = e
	if e.job >= 0 {
		q.pos[e.job] = int32(k)
	}
}

// remove deletes the event at position k.
func (q *queue) remove(k int) {
	if j := q.ev[k].job; j >= 0 {
		q.pos[j] = -1
	}
	n := len(q.ev) - 1
	x := q.ev[n]
	q.ev = q.ev[:n]
	if k == n {
		return
	}
	if k > 0 && before(&x, &q.ev[(k-1)/2]) {
		q.up(k, x)
	} else {
		q.down(k, x)
	}
}

// up and down place e at or from position k, moving a hole instead of swapping.
func (q *queue) up(k int, e event) {
	ev := q.ev
	for k > 0 {
		p := (k - 1) / 2
		if !before(&e, &ev[p]) {
			break
		}
		q.set(k, ev[p])
		k = p
	}
	q.set(k, e)
}

func (q *queue) down(k int, e event) {
	ev := q.ev
	n := len(ev)
	for {
		m := 2*k + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && before(&ev[r], &ev[m]) {
			m = r
		}
		if !before(&ev[m], &e) {
			break
		}
		q.set(k, ev[m])
		k = m
	}
	q.set(k, e)
}

// instants is a radix heap of times: a monotone priority queue (no time pushed is below the
// last one popped, as the engine's clock only moves on), whose push is an append and whose pops
// move each time down at most 63 buckets: bucket k holds the times whose highest bit differing
// from the last time popped is bit k-1 (bucket 0: equal to it). Times are never negative, so
// bit 63 never differs.
type instants struct {
	last time.Duration // the last time popped
	b    [64][]time.Duration
	bmin [64]time.Duration // the least time of each non-empty bucket
	used uint64            // bit k: bucket k is not empty
	n    int
}

func (h *instants) bucket(t time.Duration) int { return bits.Len64(uint64(t ^ h.last)) }

func (h *instants) push(t time.Duration) {
	k := h.bucket(t)
	if h.used&(1<<k) == 0 || t < h.bmin[k] {
		h.bmin[k] = t
	}
	h.b[k] = append(h.b[k], t)
	h.used |= 1 << k
	h.n++
}

// min returns the least time held (n > 0): the least of the lowest non-empty bucket, since
// every time of a bucket lies below every time of the buckets above it.
func (h *instants) min() time.Duration { return h.bmin[bits.TrailingZeros64(h.used)] }

// pop removes and returns the least time held (n > 0).
func (h *instants) pop() time.Duration {
	if h.used&1 == 0 {
		// Around the least time of the lowest bucket, each of its times falls into a lower one.
		i := bits.TrailingZeros64(h.used)
		h.last = h.bmin[i]
		ts := h.b[i]
		h.b[i], h.used = ts[:0], h.used&^(1<<i)
		for _, t := range ts {
			k := h.bucket(t)
			if h.used&(1<<k) == 0 || t < h.bmin[k] {
				h.bmin[k] = t
			}
			h.b[k] = append(h.b[k], t)
			h.used |= 1 << k
		}
	}
	h.b[0] = h.b[0][:len(h.b[0])-1]
	if len(h.b[0]) == 0 {
		h.used &^= 1
	}
	h.n--
	return h.last
}
