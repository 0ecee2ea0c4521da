package policy

import "math/bits"

// idxQueue is a Queue whose jobs all have the zero key (ByIndex). Compare then orders them by
// (Submit, ID), which is the order of their indices in State.Jobs, so the queue keeps a bit per
// job index: inserting or deleting a job sets or clears its bit (and the summary bits above it),
// with no search and no copy. Above the bits, each level has a bit per word of the level below
// that is not zero, up to a level of one word, so a walk skips 64 absent jobs per word and 64
// words of them per summary bit: finding the next job costs at most two steps per level.
//
// A position Pos{c: i, i: 1} is the queued job of index i (c = -1: the end); Pos{} is the first
// job, which the queue keeps at hand (head).
type idxQueue struct {
	jobs []*Job // State.Jobs, by Idx
	// lv[0] has bit i set when job i is queued; lv[k+1] has bit w set when lv[k][w] is not
	// zero. The levels grow with the largest index inserted; the last has one word.
	lv   [][]uint64
	head int32 // the first queued index, -1: none
}

// ByIndex makes the empty queue q keep jobs by their index in jobs (State.Jobs): for a policy
// whose keys are all zero, the engine's pending queues. Insert then refuses a job with a key.
// The queue takes about IndexBytes(len(jobs)) bytes once it holds the last job.
func (q *Queue) ByIndex(jobs []*Job) {
	if q.n != 0 || q.ix != nil {
		panic("policy: ByIndex on a queue in use")
	}
	q.ix = &idxQueue{jobs: jobs, lv: [][]uint64{make([]uint64, 1)}, head: -1}
}

// IndexBytes is the most memory a queue kept by index over n jobs takes: a bit per job, and a
// summary bit per 64.
func IndexBytes(n int) int {
	b := 0
	for w := (n + 63) / 64; ; w = (w + 63) / 64 {
		b += 8 * w
		if w <= 1 {
			return b
		}
	}
}

// grow makes the levels cover index i, which they do not yet: twice what they covered, up to
// the last job.
func (x *idxQueue) grow(i int32) {
	n := max(int(i)/64+1, min(2*len(x.lv[0]), (len(x.jobs)+63)/64))
	for k := 0; ; k++ {
		if k == len(x.lv) {
			// A new top level: its bits are those of the words below that are not zero.
			x.lv = append(x.lv, make([]uint64, n))
			for w, v := range x.lv[k-1] {
				if v != 0 {
					x.lv[k][w/64] |= 1 << (w % 64)
				}
			}
		} else if len(x.lv[k]) < n {
			x.lv[k] = append(x.lv[k], make([]uint64, n-len(x.lv[k]))...)
		}
		if n == 1 {
			x.lv = x.lv[:k+1]
			return
		}
		n = (n + 63) / 64
	}
}

func (x *idxQueue) insert(j *Job) {
	if j.K != (Key{}) {
		panic("policy: a job with a key in a queue ordered by index")
	}
	if int(j.Idx)/64 >= len(x.lv[0]) {
		x.grow(j.Idx)
	}
	if x.head < 0 || j.Idx < x.head {
		x.head = j.Idx
	}
	i := uint(j.Idx)
	for _, l := range x.lv {
		w := i / 64
		was := l[w]
		l[w] = was | 1<<(i%64)
		if was != 0 {
			return // the levels above have this word's bit already
		}
		i = w
	}
}

func (x *idxQueue) delete(j *Job) bool {
	i := uint(j.Idx)
	if l := x.lv[0]; i/64 >= uint(len(l)) || l[i/64]&(1<<(i%64)) == 0 {
		return false
	}
	for _, l := range x.lv {
		w := i / 64
		if l[w] &^= 1 << (i % 64); l[w] != 0 {
			break // the word is not empty: the levels above keep its bit
		}
		i = w
	}
	if j.Idx == x.head {
		x.head = int32(x.first(uint(j.Idx) + 1))
	}
	return true
}

// first returns the first queued index at or after i, or -1. The next job is most often in
// the same word.
func (x *idxQueue) first(i uint) int {
	if l := x.lv[0]; i/64 < uint(len(l)) {
		if b := l[i/64] >> (i % 64); b != 0 {
			return int(i) + bits.TrailingZeros64(b)
		}
	}
	return x.firstAbove(i)
}

// firstAbove is first when word i/64 holds none at or after i: it looks for the next word that
// is not zero one level up, and so on.
func (x *idxQueue) firstAbove(i uint) int {
	k := 1
	i = i/64 + 1
	for {
		if k == len(x.lv) {
			return -1
		}
		l := x.lv[k]
		w := i / 64
		if w >= uint(len(l)) {
			return -1
		}
		if b := l[w] >> (i % 64); b != 0 {
			i += uint(bits.TrailingZeros64(b))
			break
		}
		i, k = w+1, k+1
	}
	for ; k > 0; k-- {
		i = i*64 + uint(bits.TrailingZeros64(x.lv[k-1][i]))
	}
	return int(i)
}

// last returns the last queued index at or before i (i < the indices the levels cover), or -1.
func (x *idxQueue) last(i int) int {
	k := 0
	for {
		if k == len(x.lv) || i < 0 {
			return -1
		}
		w := i / 64
		if b := x.lv[k][w] << (63 - i%64); b != 0 {
			i -= bits.LeadingZeros64(b)
			break
		}
		i, k = w-1, k+1
	}
	for ; k > 0; k-- {
		i = i*64 + 63 - bits.LeadingZeros64(x.lv[k-1][i])
	}
	return i
}

// from returns the position of the first queued job at or after index i.
func (x *idxQueue) from(i uint) Pos { return Pos{c: int32(x.first(i)), i: 1} }

// index returns the index of the job at p, -1 at the end.
func (x *idxQueue) index(p Pos) int32 {
	if p.i == 0 {
		return x.head
	}
	return p.c
}

func (x *idxQueue) at(p Pos) *Job {
	c := x.index(p)
	if c < 0 {
		return nil
	}
	return x.jobs[c]
}

func (x *idxQueue) next(p Pos) Pos {
	c := x.index(p)
	if c < 0 {
		return Pos{c: -1, i: 1}
	}
	return x.from(uint(c) + 1)
}

// after returns the position of the first job after the job j with key k in the order of
// Compare. The queue's keys are all zero: unless k is zero too, the whole queue comes before
// or after (k, j).
func (x *idxQueue) after(k Key, j *Job) Pos {
	if k != (Key{}) {
		if c := cmpA(0, k.A); c < 0 || c == 0 && k.B > 0 {
			return Pos{c: -1, i: 1}
		}
		return Pos{}
	}
	return x.from(uint(j.Idx) + 1)
}

func (x *idxQueue) all(yield func(*Job) bool) {
	for i := x.first(0); i >= 0; i = x.first(uint(i) + 1) {
		if !yield(x.jobs[i]) {
			return
		}
	}
}

func (x *idxQueue) backward(yield func(*Job) bool) {
	for i := x.last(64*len(x.lv[0]) - 1); i >= 0; i = x.last(i - 1) {
		if !yield(x.jobs[i]) {
			return
		}
	}
}
