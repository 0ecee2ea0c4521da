package policy

import "slices"

// idxQueue is a Queue whose jobs all have the zero key (ByIndex). Compare then orders them by
// (Submit, ID), which is the order of their indices in State.Jobs, so the queue keeps sorted
// chunks of indices: a search compares 4-byte integers in one array instead of keys, and an
// insertion or deletion moves 4 bytes per job behind it in its chunk instead of 32.
type idxQueue struct {
	jobs   []*Job    // State.Jobs, by Idx
	chunks [][]int32 // job indices, ascending
	tail   []int32   // tail[c] is the last of chunks[c]
	buf    [][]int32 // buf[c] is the array under chunks[c], as in Queue
	spare  [][]int32
}

// idxChunkMax bounds a chunk's length, as chunkMax does for keys.
const idxChunkMax = 512

// ByIndex makes the empty queue q keep jobs by their index in jobs (State.Jobs): for a policy
// whose keys are all zero, the engine's pending queues. Insert then refuses a job with a key.
func (q *Queue) ByIndex(jobs []*Job) {
	if q.n != 0 || q.ix != nil {
		panic("policy: ByIndex on a queue in use")
	}
	q.ix = &idxQueue{jobs: jobs}
}

// find returns the chunk that holds, or would hold, index i: the first whose last index is not
// below i, or the last chunk.
func (x *idxQueue) find(i int32) int {
	return min(search32(x.tail, i), len(x.tail)-1)
}

// search32 is slices.BinarySearch's index for int32s, without its generic comparison: the
// queue's every insertion and deletion searches twice.
func search32(s []int32, v int32) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (x *idxQueue) insert(j *Job) {
	if j.K != (Key{}) {
		panic("policy: a job with a key in a queue ordered by index")
	}
	i := j.Idx
	if len(x.chunks) == 0 {
		x.addChunk(0, append(x.newChunk(), i))
		return
	}
	ci := x.find(i)
	at := search32(x.chunks[ci], i)
	c := insertAt(x.buf[ci], x.chunks[ci], at, i)
	if len(c) <= idxChunkMax {
		x.chunks[ci] = c
		x.tail[ci] = c[len(c)-1]
		return
	}
	half := len(c) / 2
	right := append(x.newChunk(), c[half:]...)
	x.chunks[ci] = c[:half]
	x.tail[ci] = c[half-1]
	x.addChunk(ci+1, right)
}

// addChunk inserts chunk c, which begins its array, as chunk ci.
func (x *idxQueue) addChunk(ci int, c []int32) {
	x.chunks = slices.Insert(x.chunks, ci, c)
	x.tail = slices.Insert(x.tail, ci, c[len(c)-1])
	x.buf = slices.Insert(x.buf, ci, c[:0])
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
	at := search32(x.chunks[ci], j.Idx)
	if at == len(x.chunks[ci]) || x.chunks[ci][at] != j.Idx {
		return false
	}
	if c := x.chunks[ci]; len(c) > 1 {
		c = deleteAt(c, at)
		x.chunks[ci] = c
		x.tail[ci] = c[len(c)-1]
		return true
	}
	x.spare = append(x.spare, x.buf[ci])
	x.chunks = slices.Delete(x.chunks, ci, ci+1)
	x.tail = slices.Delete(x.tail, ci, ci+1)
	x.buf = slices.Delete(x.buf, ci, ci+1)
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

// after returns the position of the first job after the job j with key k in the order of
// Compare. The queue's keys are all zero: unless k is zero too, the whole queue comes before
// or after (k, j).
func (x *idxQueue) after(k Key, j *Job) Pos {
	if k != (Key{}) {
		if c := cmpA(0, k.A); c < 0 || c == 0 && k.B > 0 {
			return Pos{int32(len(x.chunks)), 0}
		}
		return Pos{}
	}
	c := search32(x.tail, j.Idx+1)
	if c == len(x.chunks) {
		return Pos{int32(c), 0}
	}
	i := search32(x.chunks[c], j.Idx+1)
	return Pos{int32(c), int32(i)}
}
