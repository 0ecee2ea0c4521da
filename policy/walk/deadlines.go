package walk

import (
	"fmt"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// deadlines holds tiresias-entry-order's future demotions and promotions. A deadline fires
// only while its job is not done, has the Preempts count it was pushed for, and runs (a
// demotion) or waits (a promotion). Each push for a job leaves the job's earlier deadlines
// unable to fire ever again:
//   - a demotion pushed when the job starts: the job was stopped since its earlier demotion
//     (Preempts grew past it), and its promotion, pushed at that stop, fires only while it
//     waits, which it does again only after its next stop (Preempts grows past it);
//   - a demotion pushed after a demotion fired: that one has left the heap;
//   - a promotion pushed when the job is stopped: the stop makes Preempts grow past the
//     demotion of its run, also one pushed in the same call for a victim placed elsewhere.
//
// So each job keeps only its latest deadline, in a heap by (at, job) indexed by job. The
// deadlines replaced still wake the engine at their times, as they did when every deadline
// stayed queued until it came due (with the lineage's per-event overhead every event costs the
// running jobs progress): their times wait in a radix heap.
type deadlines struct {
	h   []deadline // the latest deadline of each job that has one, a heap by deadlineBefore
	pos []int32    // by Job.Idx: the position of the job's deadline in h, or -1
	old simtime.Instants
	// replaced keeps the replaced deadlines themselves when checkReplaced is set (tests).
	replaced binHeap[deadline]
}

// checkReplaced makes deadlines keep the deadlines it replaces and panic if one of them would
// fire when it comes due (a variable for tests).
var checkReplaced = false

// push adds d, replacing the job's earlier deadline, if any.
func (q *deadlines) push(d deadline) {
	i := int(d.j.Idx)
	for i >= len(q.pos) {
		q.pos = append(q.pos, -1)
	}
	if p := q.pos[i]; p >= 0 {
		q.old.Push(q.h[p].at)
		if checkReplaced {
			if q.replaced.less == nil {
				q.replaced.less = deadlineBefore
			}
			q.replaced.push(q.h[p])
		}
		q.h[p] = d
		if !q.up(int(p)) {
			q.down(int(p))
		}
		return
	}
	q.h = append(q.h, d)
	q.pos[i] = int32(len(q.h) - 1)
	q.up(len(q.h) - 1)
}

// pop removes and returns the earliest deadline due by now, if any.
func (q *deadlines) pop(now time.Duration) (deadline, bool) {
	if checkReplaced {
		for q.replaced.len() > 0 && q.replaced.top().at <= now {
			if d := q.replaced.pop(); d.fires() {
				panic(fmt.Sprintf("policy: a replaced deadline of job %d (at %v, runs %d, demote %v) would fire", d.job, d.at, d.runs, d.demote))
			}
		}
	}
	if len(q.h) == 0 || q.h[0].at > now {
		return deadline{}, false
	}
	top := q.h[0]
	q.pos[top.j.Idx] = -1
	n := len(q.h) - 1
	if n > 0 {
		q.h[0] = q.h[n]
		q.pos[q.h[0].j.Idx] = 0
	}
	q.h[n] = deadline{}
	q.h = q.h[:n]
	q.down(0)
	return top, true
}

// next returns the earliest deadline after now, replaced ones included (those due by now were
// popped, or are passed over here).
func (q *deadlines) next(now time.Duration) (time.Duration, bool) {
	for q.old.Len() > 0 && q.old.Min() <= now {
		q.old.Pop()
	}
	next, ok := simtime.Never, false
	if len(q.h) > 0 {
		next, ok = q.h[0].at, true
	}
	if q.old.Len() > 0 {
		next, ok = min(next, q.old.Min()), true
	}
	return next, ok
}

func (q *deadlines) set(i int, d deadline) {
	q.h[i] = d
	q.pos[d.j.Idx] = int32(i)
}

// up moves the deadline at i up to its place and reports whether it moved.
func (q *deadlines) up(i int) bool {
	d := q.h[i]
	k := i
	for k > 0 {
		p := (k - 1) / 2
		if !deadlineBefore(d, q.h[p]) {
			break
		}
		q.set(k, q.h[p])
		k = p
	}
	q.set(k, d)
	return k != i
}

func (q *deadlines) down(i int) {
	n := len(q.h)
	if i >= n {
		return
	}
	d := q.h[i]
	for {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && deadlineBefore(q.h[r], q.h[m]) {
			m = r
		}
		if !deadlineBefore(q.h[m], d) {
			break
		}
		q.set(i, q.h[m])
		i = m
	}
	q.set(i, d)
}

// deadline is a future demotion or promotion; runs is the job's Preempts count it is valid for.
type deadline struct {
	at     time.Duration
	job    trace.JobID
	j      *policy.Job
	runs   int
	demote bool
}

// fires reports whether d would act if it came due now: its job is not done, has not been
// stopped or started since d was pushed, and runs (a demotion) or waits (a promotion).
func (d deadline) fires() bool {
	return !d.j.Done && d.j.Preempts == d.runs && d.demote == d.j.Running
}

// deadlineBefore orders deadlines by (at, job); the job tie-break keeps pops deterministic.
func deadlineBefore(a, b deadline) bool { return a.at < b.at || (a.at == b.at && a.job < b.job) }
