package sim

import "time"

// eventKind distinguishes the events in the queue.
type eventKind uint8

const (
	evFinish eventKind = iota // a running job's predicted completion
	evWake                    // a wake-up a policy asked for
	evTick                    // a periodic scheduling round
)

type event struct {
	t    time.Duration
	seq  uint64
	kind eventKind
	job  int32  // index into the engine's job slice (-1: none)
	ver  uint32 // job version when the event was pushed
}

// queue holds the engine's events: a 4-ary min-heap (half the depth of a binary one: half the
// moves, for about as many comparisons) ordered by (t, seq), seq being an insertion counter, so
// simultaneous events pop in the order they were pushed; at most one completion per job,
// updated in place when the job's prediction changes. A superseded prediction leaves no trace:
// the engine no longer stops at it (with the lineage's per-event overhead every event
// re-predicts every running job, and such stops, which changed nothing but where the
// utilization integral was split, were most of a run's events).
type queue struct {
	ev  []event
	pos []int32 // by job index: the position of its completion in ev, -1 if none
	seq uint64
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

// predict sets job i's completion to t, replacing a previous prediction.
func (q *queue) predict(i int32, t time.Duration, ver uint32) {
	q.seq++
	e := event{t: t, seq: q.seq, kind: evFinish, job: i, ver: ver}
	if k := q.pos[i]; k >= 0 {
		if t < q.ev[k].t {
			q.up(int(k), e)
		} else {
			q.down(int(k), e)
		}
		return
	}
	q.ev = append(q.ev, e)
	q.up(len(q.ev)-1, e)
}

// retire removes job i's completion, if any (the job stopped).
func (q *queue) retire(i int32) {
	if k := q.pos[i]; k >= 0 {
		q.remove(int(k))
	}
}

// pop removes the earliest event.
func (q *queue) pop() event {
	top := q.ev[0]
	q.remove(0)
	return top
}

func (q *queue) len() int { return len(q.ev) }

// peek returns the earliest event's time (the queue is not empty).
func (q *queue) peek() time.Duration { return q.ev[0].t }

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
	if k > 0 && before(&x, &q.ev[(k-1)/4]) {
		q.up(k, x)
	} else {
		q.down(k, x)
	}
}

// up and down place e at or from position k, moving a hole instead of swapping.
func (q *queue) up(k int, e event) {
	ev := q.ev
	for k > 0 {
		p := (k - 1) / 4
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
		c := 4*k + 1
		if c >= n {
			break
		}
		m := c
		for r := c + 1; r < min(c+4, n); r++ {
			if before(&ev[r], &ev[m]) {
				m = r
			}
		}
		if !before(&ev[m], &e) {
			break
		}
		q.set(k, ev[m])
		k = m
	}
	q.set(k, e)
}
