package policy

// dueHeap is binHeap[deadline] by deadlineBefore written out for the type: Tiresias pushes a
// deadline at every start and pops it at every demotion, and the generic heap's indirect
// comparisons were a tenth of tiresias-testbed's time on the Philly table. It moves the same
// items along the same paths as binHeap (a hole instead of swaps), so items pop in the same
// order, ties included.
type dueHeap struct{ items []deadline }

func (h *dueHeap) len() int { return len(h.items) }

func (h *dueHeap) top() *deadline { return &h.items[0] }

func (h *dueHeap) push(x deadline) {
	h.items = append(h.items, x)
	it := h.items
	i := len(it) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !deadlineBefore(&x, &it[p]) {
			break
		}
		it[i] = it[p]
		i = p
	}
	it[i] = x
}

func (h *dueHeap) pop() deadline {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items[n] = deadline{}
	h.items = h.items[:n]
	h.down(0)
	return top
}

func (h *dueHeap) down(i int) {
	it := h.items
	n := len(it)
	if i >= n {
		return
	}
	x := it[i]
	for {
		l, m := 2*i+1, -1
		if l >= n {
			break
		}
		// The smaller child, preferring the left on ties, as binHeap.down does.
		m = l
		if r := l + 1; r < n && deadlineBefore(&it[r], &it[l]) {
			m = r
		}
		if !deadlineBefore(&it[m], &x) {
			break
		}
		it[i] = it[m]
		i = m
	}
	it[i] = x
}

// drop removes the deadlines dead reports and restores the heap, as binHeap.drop does.
func (h *dueHeap) drop(dead func(*deadline) bool) {
	k := 0
	for i := range h.items {
		if !dead(&h.items[i]) {
			h.items[k] = h.items[i]
			k++
		}
	}
	clear(h.items[k:])
	h.items = h.items[:k]
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}
