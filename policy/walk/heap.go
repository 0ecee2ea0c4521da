package walk

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

// push and down move a hole instead of swapping items, which writes each item once.
func (h *binHeap[T]) push(x T) {
	h.items = append(h.items, x)
	it := h.items
	i := len(it) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(x, it[p]) {
			break
		}
		it[i] = it[p]
		i = p
	}
	it[i] = x
}

func (h *binHeap[T]) pop() T {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	var zero T
	h.items[n] = zero
	h.items = h.items[:n]
	h.down(0)
	return top
}

func (h *binHeap[T]) down(i int) {
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
		// The smaller child, the left one on ties.
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
