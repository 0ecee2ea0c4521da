package simtime

import (
	"math/bits"
	"time"
)

// Instants is a radix heap of times: a monotone priority queue (no time pushed is below the
// last one popped, as a simulation's clock only moves on), whose push is an append and whose pops
// move each time down at most 63 buckets: bucket k holds the times whose highest bit differing
// from the last time popped is bit k-1 (bucket 0: equal to it). Times are never negative, so
// bit 63 never differs.
type Instants struct {
	last time.Duration // the last time popped
	b    [64][]time.Duration
	bmin [64]time.Duration // the least time of each non-empty bucket
	used uint64            // bit k: bucket k is not empty
	n    int
}

func (h *Instants) bucket(t time.Duration) int { return bits.Len64(uint64(t ^ h.last)) }

// Push adds t, which must not be below the last time popped.
func (h *Instants) Push(t time.Duration) {
	k := h.bucket(t)
	if h.used&(1<<k) == 0 || t < h.bmin[k] {
		h.bmin[k] = t
	}
	h.b[k] = append(h.b[k], t)
	h.used |= 1 << k
	h.n++
}

// Min returns the least time held (n > 0): the least of the lowest non-empty bucket, since
// every time of a bucket lies below every time of the buckets above it.
func (h *Instants) Min() time.Duration { return h.bmin[bits.TrailingZeros64(h.used)] }

// Pop removes and returns the least time held (n > 0).
func (h *Instants) Pop() time.Duration {
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

// Len returns the number of times held.
func (h *Instants) Len() int { return h.n }
