package policy

import "cmp"

// binHeap is a binary heap ordered by less (the least item on top). The victim walk and the
// Tiresias deadlines use it; the type stays unexported and allocation-free.
type binHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *binHeap[T]) len() int { return len(h.items) }

func (h *binHeap[T]) top() T { return h.items[0] }

// init orders items already in place as a heap.
func (h *binHeap[T]) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *binHeap[T]) push(x T) {
	h.items = append(h.items, x)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *binHeap[T]) pop() T {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	h.down(0)
	return top
}

func (h *binHeap[T]) down(i int) {
	n := len(h.items)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r < n && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

// drop removes the items dead reports and restores the heap. The others pop as they would
// have where the order is total; among items it ties, their order may change.
func (h *binHeap[T]) drop(dead func(T) bool) {
	k := 0
	for _, x := range h.items {
		if !dead(x) {
			h.items[k] = x
			k++
		}
	}
	clear(h.items[k:])
	h.items = h.items[:k]
	h.init()
}

// famHeap is binHeap[int32] of family indices for the greedy walk's merge, written out for the
// type: a family ranks by its next job (head), whose first key sits in a, so most comparisons
// read no job. It moves items as binHeap does, so families pop in the same order.
type famHeap struct {
	items []int32
	a     []float64
	head  []*Job
}

func (h *famHeap) less(x, y int32) bool {
	if c := cmp.Compare(h.a[x], h.a[y]); c != 0 {
		return c < 0 // as Compare, which looks at A first
	}
	u, v := h.head[x], h.head[y]
	return Compare(u.K, u, v.K, v) < 0
}

func (h *famHeap) len() int { return len(h.items) }

func (h *famHeap) top() int32 { return h.items[0] }

func (h *famHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *famHeap) pop() int32 {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	h.down(0)
	return top
}

func (h *famHeap) down(i int) {
	it := h.items
	n := len(it)
	if i >= n {
		return
	}
	x := it[i]
	for {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && h.less(it[r], it[m]) {
			m = r
		}
		if !h.less(it[m], x) {
			break
		}
		it[i] = it[m]
		i = m
	}
	it[i] = x
}
