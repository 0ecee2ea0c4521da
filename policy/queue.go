package policy

import (
	"cmp"
	"iter"
	"slices"
	"time"
)

// Queue holds pending jobs in the order of Compare on (K, Submit, ID). It is a list of sorted
// chunks of bounded length, so that inserting and deleting a job cost a binary search and a
// short copy however long the queue (of the jobs on the nearer side: a start takes a job near
// the front), while walking it in order stays a plain slice scan; a queue whose jobs all have
// the zero key keeps a bit per job index instead (ByIndex). The engine owns the queues;
// policies read them and must not keep positions across calls.
type Queue struct {
	chunks [][]*Job
	// ks[c][i] holds chunks[c][i]'s keys and submit time: a search compares them without
	// reading the job unless they all tie.
	ks [][]qkey
	// tail[c] is the last of ks[c]: the chunk search reads them from one array.
	tail []qkey
	// buf[c] and bufK[c] are the arrays under chunks[c] and ks[c], which may begin past their
	// start (insertAt, deleteAt).
	buf    [][]*Job
	bufK   [][]qkey
	n      int
	spare  [][]*Job // emptied chunks, reused
	spareK [][]qkey
	ix     *idxQueue // non-nil: the jobs are kept by index instead (ByIndex)
}

type qkey struct {
	k   Key
	sub time.Duration
}

// chunkMax bounds a chunk's length: a split copies half of one, a chunk search costs
// log2(n/chunkMax) comparisons.
const chunkMax = 256

// KeptByIndex reports whether the queue keeps its jobs by index (ByIndex): they all have the zero
// key, and their order is that of their indices.
func (q *Queue) KeptByIndex() bool { return q.ix != nil }

// Len returns the number of jobs in the queue.
func (q *Queue) Len() int { return q.n }

// cmpAt compares the job at position i of chunk c with the job j of key k, as Compare.
func (q *Queue) cmpAt(c, i int, k Key, j *Job) int { return q.cmpKey(&q.ks[c][i], c, i, k, j) }

// cmpLast compares the last job of chunk c with the job j of key k, as Compare.
func (q *Queue) cmpLast(c int, k Key, j *Job) int {
	return q.cmpKey(&q.tail[c], c, len(q.chunks[c])-1, k, j)
}

// cmpKey compares the job at position i of chunk c, whose cached keys are e, with the job j of
// key k, as Compare.
func (q *Queue) cmpKey(e *qkey, c, i int, k Key, j *Job) int {
	if r := cmpA(e.k.A, k.A); r != 0 {
		return r
	}
	switch {
	case e.k.B != k.B:
		return cmp.Compare(e.k.B, k.B)
	case e.sub != j.Submit:
		return cmp.Compare(e.sub, j.Submit)
	}
	return cmp.Compare(q.chunks[c][i].ID, j.ID)
}

// find returns the index of the chunk that holds, or would hold, j: the first chunk whose last
// job does not come before j, or the last chunk.
func (q *Queue) find(j *Job) int {
	lo, hi := 0, len(q.chunks)-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q.cmpLast(m, j.K, j) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// search returns the index of the first job in chunk c that does not come before j.
func (q *Queue) search(c int, j *Job) int {
	lo, hi := 0, len(q.ks[c])
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q.cmpAt(c, m, j.K, j) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Insert adds j at its place; j.K must be set.
func (q *Queue) Insert(j *Job) {
	q.n++
	if q.ix != nil {
		q.ix.insert(j)
		return
	}
	jk := qkey{j.K, j.Submit}
	if len(q.chunks) == 0 {
		c, k := q.newChunk()
		q.addChunk(0, append(c, j), append(k, jk))
		return
	}
	ci := q.find(j)
	at := q.search(ci, j)
	c := insertAt(q.buf[ci], q.chunks[ci], at, j)
	k := insertAt(q.bufK[ci], q.ks[ci], at, jk)
	if len(c) <= chunkMax {
		q.chunks[ci], q.ks[ci] = c, k
		if at == len(k)-1 {
			q.tail[ci] = jk
		}
		return
	}
	half := len(c) / 2
	right, rightK := q.newChunk()
	right, rightK = append(right, c[half:]...), append(rightK, k[half:]...)
	clear(c[half:])
	q.chunks[ci], q.ks[ci] = c[:half], k[:half]
	q.tail[ci] = k[half-1]
	q.addChunk(ci+1, right, rightK)
}

// addChunk inserts chunk c with keys k, each at the start of its array, as chunk ci.
func (q *Queue) addChunk(ci int, c []*Job, k []qkey) {
	q.chunks = slices.Insert(q.chunks, ci, c)
	q.ks = slices.Insert(q.ks, ci, k)
	q.tail = slices.Insert(q.tail, ci, k[len(k)-1])
	q.buf = slices.Insert(q.buf, ci, c[:0])
	q.bufK = slices.Insert(q.bufK, ci, k[:0])
}

// insertAt inserts v at position at of c, a slice of array buf (as buf[off:off+len(c)], with
// room for one more) and returns the new slice: it moves the elements before at one step to the
// front where they are fewer and there is room, and those after it one step to the back
// otherwise.
func insertAt[T any](buf, c []T, at int, v T) []T {
	if off := cap(buf) - cap(c); off > 0 && (at < len(c)/2 || off+len(c) == cap(buf)) {
		c = buf[off-1 : off+len(c)]
		copy(c, c[1:at+1])
		c[at] = v
		return c
	}
	return slices.Insert(c, at, v)
}

// deleteAt removes the element at position at of c and returns the new slice, moving the
// fewer of the elements before and after at.
func deleteAt[T any](c []T, at int) []T {
	if at < len(c)/2 {
		copy(c[1:], c[:at])
		var zero T
		c[0] = zero
		return c[1:]
	}
	return slices.Delete(c, at, at+1)
}

func (q *Queue) newChunk() ([]*Job, []qkey) {
	if n := len(q.spare); n > 0 {
		c, k := q.spare[n-1], q.spareK[n-1]
		q.spare, q.spareK = q.spare[:n-1], q.spareK[:n-1]
		return c, k
	}
	return make([]*Job, 0, chunkMax+1), make([]qkey, 0, chunkMax+1)
}

// Delete removes j (with its key unchanged since Insert) and reports whether it was there.
func (q *Queue) Delete(j *Job) bool {
	if q.ix != nil {
		if !q.ix.delete(j) {
			return false
		}
		q.n--
		return true
	}
	if len(q.chunks) == 0 {
		return false
	}
	ci := q.find(j)
	c := q.chunks[ci]
	at := q.search(ci, j)
	if at == len(c) || c[at] != j {
		return false
	}
	q.n--
	if len(c) > 1 {
		c = deleteAt(c, at)
		k := deleteAt(q.ks[ci], at)
		q.chunks[ci], q.ks[ci] = c, k
		if at == len(k) {
			q.tail[ci] = k[at-1]
		}
		return true
	}
	c[0] = nil
	q.spare, q.spareK = append(q.spare, q.buf[ci]), append(q.spareK, q.bufK[ci])
	q.chunks = slices.Delete(q.chunks, ci, ci+1)
	q.ks = slices.Delete(q.ks, ci, ci+1)
	q.tail = slices.Delete(q.tail, ci, ci+1)
	q.buf = slices.Delete(q.buf, ci, ci+1)
	q.bufK = slices.Delete(q.bufK, ci, ci+1)
	return true
}

// All yields the jobs in order.
func (q *Queue) All() iter.Seq[*Job] {
	return func(yield func(*Job) bool) {
		if q.ix != nil {
			q.ix.all(yield)
			return
		}
		for _, c := range q.chunks {
			for _, j := range c {
				if !yield(j) {
					return
				}
			}
		}
	}
}

// Backward yields the jobs from the last to the first.
func (q *Queue) Backward() iter.Seq[*Job] {
	return func(yield func(*Job) bool) {
		if q.ix != nil {
			q.ix.backward(yield)
			return
		}
		for ci := len(q.chunks) - 1; ci >= 0; ci-- {
			c := q.chunks[ci]
			for i := len(c) - 1; i >= 0; i-- {
				if !yield(c[i]) {
					return
				}
			}
		}
	}
}

// Pos is a position in a Queue, valid while the queue is unchanged (within one policy call).
type Pos struct{ c, i int32 }

// At returns the job at p, or nil at the end.
func (q *Queue) At(p Pos) *Job {
	if q.ix != nil {
		return q.ix.at(p)
	}
	if int(p.c) >= len(q.chunks) {
		return nil
	}
	return q.chunks[p.c][p.i]
}

// Next returns the position after p.
func (q *Queue) Next(p Pos) Pos {
	if q.ix != nil {
		return q.ix.next(p)
	}
	p.i++
	if int(p.i) >= len(q.chunks[p.c]) {
		p.c, p.i = p.c+1, 0
	}
	return p
}

// After returns the position of the first job that comes after the job j with key k in the
// order of Compare (j need not be in the queue).
func (q *Queue) After(k Key, j *Job) Pos {
	if q.ix != nil {
		return q.ix.after(k, j)
	}
	lo, hi := 0, len(q.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q.cmpLast(m, k, j) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(q.chunks) {
		return Pos{int32(lo), 0}
	}
	c := lo
	lo, hi = 0, len(q.ks[c])
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q.cmpAt(c, m, k, j) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return Pos{int32(c), int32(lo)}
}
