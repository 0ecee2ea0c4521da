package policy

import (
	"math/bits"
	"slices"
)

// A Queue whose jobs all have the zero key (ByIndex) holds them in the order of Compare, which
// is then (Submit, ID), the order of their indices in State.Jobs: it keeps indices instead of
// keys, as sorted chunks (idxQueue) or, for a queue that may hold a large share of the jobs, as
// a bit per job (idxBits).
type indexed interface {
	insert(j *Job)
	delete(j *Job) bool
	at(p Pos) *Job
	next(p Pos) Pos
	after(k Key, j *Job) Pos
	all(yield func(*Job) bool)
	backward(yield func(*Job) bool)
}

// idxQueue keeps sorted chunks of job indices: a search compares 4-byte integers in one array
// instead of keys, and an insertion or deletion moves 4 bytes per job behind it in its chunk
// instead of 32.
type idxQueue struct {
	jobs   []*Job    // State.Jobs, by Idx
	chunks [][]int32 // job indices, ascending
	tail   []int32   // tail[c] is the last of chunks[c]
	spare  [][]int32
}

// idxChunkMax bounds a chunk's length, as chunkMax does for keys.
const idxChunkMax = 512

// ByIndex makes the empty queue q keep jobs by their index in jobs (State.Jobs): for a policy
// whose keys are all zero, the engine's pending queues. Insert then refuses a job with a key.
// dense keeps a bit per job of jobs (len(jobs)/8 bytes), so that inserting and deleting cost a
// bit flip; else the queue keeps chunks of the indices it holds.
func (q *Queue) ByIndex(jobs []*Job, dense bool) {
	if q.n != 0 || q.ix != nil {
		panic("policy: ByIndex on a queue in use")
	}
	if !dense {
		q.ix = &idxQueue{jobs: jobs}
		return
	}
	w := (len(jobs) + 63) / 64
	q.ix = &idxBits{jobs: jobs, bits: make([]uint64, w), sum: make([]uint64, (w+63)/64)}
}

func noKey(j *Job) {
	if j.K != (Key{}) {
		panic("policy: a job with a key in a queue ordered by index")
	}
}

// find returns the chunk that holds, or would hold, index i: the first whose last index is not
// below i, or the last chunk.
func (x *idxQueue) find(i int32) int {
	c, _ := slices.BinarySearch(x.tail, i)
	return min(c, len(x.tail)-1)
}

func (x *idxQueue) insert(j *Job) {
	noKey(j)
	i := j.Idx
	if len(x.chunks) == 0 {
		x.chunks = append(x.chunks, append(x.newChunk(), i))
		x.tail = append(x.tail, i)
		return
	}
	ci := x.find(i)
	at, _ := slices.BinarySearch(x.chunks[ci], i)
	c := slices.Insert(x.chunks[ci], at, i)
	if len(c) <= idxChunkMax {
		x.chunks[ci] = c
		x.tail[ci] = c[len(c)-1]
		return
	}
	half := len(c) / 2
	right := append(x.newChunk(), c[half:]...)
	x.chunks[ci] = c[:half]
	x.chunks = slices.Insert(x.chunks, ci+1, right)
	x.tail[ci] = c[half-1]
	x.tail = slices.Insert(x.tail, ci+1, right[len(right)-1])
}

func (x *idxQueue) newChunk() []int32 {
	if n := len(x.spare); n > 0 {
		c := x.spare[n-1]
		x.spare = x.spare[:n-1]
		return c
	}
	return make([]int32, 0, idxChunkMax+1)
}

func (x *idxQueue) delete(j *Job) bool {
	if len(x.chunks) == 0 {
		return false
	}
	ci := x.find(j.Idx)
	at, found := slices.BinarySearch(x.chunks[ci], j.Idx)
	if !found {
		return false
	}
	c := slices.Delete(x.chunks[ci], at, at+1)
	if len(c) > 0 {
		x.chunks[ci] = c
		x.tail[ci] = c[len(c)-1]
		return true
	}
	x.spare = append(x.spare, c)
	x.chunks = slices.Delete(x.chunks, ci, ci+1)
	x.tail = slices.Delete(x.tail, ci, ci+1)
	return true
}

func (x *idxQueue) at(p Pos) *Job {
	if int(p.c) >= len(x.chunks) {
		return nil
	}
	return x.jobs[x.chunks[p.c][p.i]]
}

func (x *idxQueue) next(p Pos) Pos {
	p.i++
	if int(p.i) >= len(x.chunks[p.c]) {
		p.c, p.i = p.c+1, 0
	}
	return p
}

// zeroFirst reports whether the zero key comes before k in the order of Compare. The queue's
// keys are all zero: unless k is zero too, the whole queue comes before or after (k, j).
func zeroFirst(k Key) bool {
	c := cmpA(0, k.A)
	return c < 0 || c == 0 && k.B > 0
}

// after returns the position of the first job after the job j with key k in the order of
// Compare.
func (x *idxQueue) after(k Key, j *Job) Pos {
	if k != (Key{}) {
		if zeroFirst(k) {
			return Pos{int32(len(x.chunks)), 0}
		}
		return Pos{}
	}
	c, _ := slices.BinarySearch(x.tail, j.Idx+1)
	if c == len(x.chunks) {
		return Pos{int32(c), 0}
	}
	i, _ := slices.BinarySearch(x.chunks[c], j.Idx+1)
	return Pos{int32(c), int32(i)}
}

func (x *idxQueue) all(yield func(*Job) bool) {
	for _, c := range x.chunks {
		for _, i := range c {
			if !yield(x.jobs[i]) {
				return
			}
		}
	}
}

func (x *idxQueue) backward(yield func(*Job) bool) {
	for ci := len(x.chunks) - 1; ci >= 0; ci-- {
		c := x.chunks[ci]
		for i := len(c) - 1; i >= 0; i-- {
			if !yield(x.jobs[c[i]]) {
				return
			}
		}
	}
}

// idxBits keeps a bit per job, and a bit per word of them that is not zero, so that a walk
// skips 64 words of absent jobs at a time. A position holds a job index in c: the job there,
// or the first queued one after it.
type idxBits struct {
	jobs []*Job
	bits []uint64 // bit i: job i is queued
	sum  []uint64 // bit w: bits[w] != 0
}

func (x *idxBits) insert(j *Job) {
	noKey(j)
	i := int(j.Idx)
	x.bits[i>>6] |= 1 << (i & 63)
	x.sum[i>>12] |= 1 << ((i >> 6) & 63)
}

func (x *idxBits) delete(j *Job) bool {
	i := int(j.Idx)
	w, b := i>>6, uint64(1)<<(i&63)
	if x.bits[w]&b == 0 {
		return false
	}
	if x.bits[w] &^= b; x.bits[w] == 0 {
		x.sum[w>>6] &^= 1 << (w & 63)
	}
	return true
}

// first returns the first queued index at or after i, or len(jobs).
func (x *idxBits) first(i int) int {
	n := len(x.jobs)
	if i >= n {
		return n
	}
	w := i >> 6
	if b := x.bits[w] >> (i & 63); b != 0 {
		return i + bits.TrailingZeros64(b)
	}
	w++
	for s := w >> 6; s < len(x.sum); s++ {
		b := x.sum[s]
		if s == w>>6 {
			b &^= 1<<(w&63) - 1
		}
		if b != 0 {
			w = s<<6 + bits.TrailingZeros64(b)
			return w<<6 + bits.TrailingZeros64(x.bits[w])
		}
	}
	return n
}

// last returns the last queued index at or before i, or -1.
func (x *idxBits) last(i int) int {
	if i < 0 {
		return -1
	}
	w := i >> 6
	if b := x.bits[w] << (63 - i&63); b != 0 {
		return i - bits.LeadingZeros64(b)
	}
	for w--; w >= 0; {
		s := w >> 6
		b := x.sum[s] & (2<<(w&63) - 1)
		if b != 0 {
			w = s<<6 + 63 - bits.LeadingZeros64(b)
			return w<<6 + 63 - bits.LeadingZeros64(x.bits[w])
		}
		w = s<<6 - 1
	}
	return -1
}

func (x *idxBits) at(p Pos) *Job {
	if i := x.first(int(p.c)); i < len(x.jobs) {
		return x.jobs[i]
	}
	return nil
}

func (x *idxBits) next(p Pos) Pos { return Pos{c: int32(x.first(x.first(int(p.c)) + 1))} }

func (x *idxBits) after(k Key, j *Job) Pos {
	switch {
	case k == (Key{}):
		return Pos{c: int32(x.first(int(j.Idx) + 1))}
	case zeroFirst(k):
		return Pos{c: int32(len(x.jobs))}
	}
	return Pos{}
}

func (x *idxBits) all(yield func(*Job) bool) {
	for i := x.first(0); i < len(x.jobs); i = x.first(i + 1) {
		if !yield(x.jobs[i]) {
			return
		}
	}
}

func (x *idxBits) backward(yield func(*Job) bool) {
	for i := x.last(len(x.jobs) - 1); i >= 0; i = x.last(i - 1) {
		if !yield(x.jobs[i]) {
			return
		}
	}
}
