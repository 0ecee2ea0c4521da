package schedulers

import "math"

// blossomRef is the matching as first ported from Muri's matching.py, line by line and without
// caches: the reference that TestBlossomReference holds blossom to, mate for mate.
type blossomRef struct {
	n, nx      int
	edge       [][]refEdge // edge[u][v]: the edge between u and v (blossoms: the best one into them)
	lab        []float64   // dual labels
	match      []int
	slack      []int // slack[x]: the vertex with the least slack edge to blossom x
	st         []int // st[x]: the outermost blossom holding x
	pa         []int
	side       []int // S in matching.py: 0 even, 1 odd, -1 unlabelled
	vis        []int
	flower     [][]int // a blossom's sub-blossoms, around its cycle from its base
	flowerFrom [][]int // flowerFrom[b][x]: the sub-blossom of b holding vertex x
	q          []int
	t          int
}

// refEdge is an edge with its original end points.
type refEdge struct {
	u, v int
	w    float64
}

// maxWeightMatching returns the mates of vertices 1..n (0: single) of the graph of weights w
// (w[u][v] for 1 ≤ u, v ≤ n; 0 or less: no edge). Weights need not be symmetric: the lineage
// computes each direction itself.
func (b *blossomRef) maxWeightMatching(n int, w func(u, v int) float64) []int {
	b.n, b.nx, b.t = n, n, 0
	b.edge = b.edge[:0]
	edges := 0
	wmax := 0.0
	// Blossoms take ids up to 2n: rows have room for them, so that forming one appends in place.
	for u := 0; u <= n; u++ {
		row := make([]refEdge, n+1, 2*n+2)
		for v := range row {
			row[v] = refEdge{u: u, v: v}
			if u > 0 && v > 0 && u != v {
				row[v].w = w(u, v)
				if row[v].w > 0 {
					edges++
				} else {
					row[v].w = 0
				}
			}
			if u > 0 && v > 0 {
				wmax = max(wmax, row[v].w)
			}
		}
		b.edge = append(b.edge, row)
	}
	b.vis = make([]int, n+1)
	b.match = make([]int, n+1)
	if edges == 0 {
		return b.match
	}
	b.pa = make([]int, n+1)
	b.st = make([]int, n+1)
	b.flower = make([][]int, n+1)
	b.flowerFrom = make([][]int, n+1)
	b.lab = make([]float64, n+1)
	for u := range n + 1 {
		b.st[u] = u
		b.flowerFrom[u] = make([]int, n+1, 2*n+2)
		b.flowerFrom[u][u] = u
		b.lab[u] = wmax
	}
	for b.augmentOnce() {
	}
	return b.match
}

// dist is the slack of edge e.
func (b *blossomRef) dist(e refEdge) float64 { return b.lab[e.u] + b.lab[e.v] - e.w*2.0 }

func (b *blossomRef) updateSlack(u, x int) {
	if b.slack[x] == 0 || b.dist(b.edge[u][x]) < b.dist(b.edge[b.slack[x]][x]) {
		b.slack[x] = u
	}
}

func (b *blossomRef) setSlack(x int) {
	b.slack[x] = 0
	for u := 1; u <= b.n; u++ {
		if b.edge[u][x].w > 0 && b.st[u] != x && b.side[b.st[u]] == 0 {
			b.updateSlack(u, x)
		}
	}
}

// qPush queues the vertices of blossom x, breadth first as matching.py does.
func (b *blossomRef) qPush(x int) {
	fifo := []int{x}
	for len(fifo) > 0 {
		x, fifo = fifo[0], fifo[1:]
		if x <= b.n {
			b.q = append(b.q, x)
		} else {
			fifo = append(fifo, b.flower[x]...)
		}
	}
}

// setSt makes blossom bl the outermost blossom of x and everything inside it. Like matching.py,
// it stops at ids below n, which vertex n, having no flower, does not notice.
func (b *blossomRef) setSt(x, bl int) {
	b.st[x] = bl
	if x < b.n {
		return
	}
	for _, i := range b.flower[x] {
		b.setSt(i, bl)
	}
}

// getPr returns the position of xr in blossom bl's cycle, reversing the cycle (all but its base)
// when the position is odd so that it becomes even.
func (b *blossomRef) getPr(bl, xr int) int {
	f := b.flower[bl]
	pr := -1
	for i, v := range f {
		if v == xr {
			pr = i
			break
		}
	}
	if pr < 0 {
		panic("schedulers: blossomRef: sub-blossomRef not in its blossomRef")
	}
	if pr%2 == 1 {
		reverse(f[1:])
		return len(f) - pr
	}
	return pr
}

// setMatch matches u along edge (u, v), expanding into blossoms breadth first.
func (b *blossomRef) setMatch(u, v int) {
	type pair struct{ u, v int }
	fifo := []pair{{u, v}}
	for len(fifo) > 0 {
		p := fifo[0]
		fifo = fifo[1:]
		u, v := p.u, p.v
		b.match[u] = b.edge[u][v].v
		if u <= b.n {
			continue
		}
		e := b.edge[u][v]
		xr := b.flowerFrom[u][e.u]
		pr := b.getPr(u, xr)
		f := b.flower[u]
		for i := range pr {
			fifo = append(fifo, pair{f[i], f[i^1]})
		}
		fifo = append(fifo, pair{xr, v})
		b.flower[u] = append(append([]int(nil), f[pr:]...), f[:pr]...)
	}
}

// augment flips the matching along the alternating path that ends with edge (u, v).
func (b *blossomRef) augment(u, v int) {
	for {
		xnv := b.st[b.match[u]]
		b.setMatch(u, v)
		if xnv == 0 {
			return
		}
		b.setMatch(xnv, b.st[b.pa[xnv]])
		u, v = b.st[b.pa[xnv]], xnv
	}
}

func (b *blossomRef) lca(u, v int) int {
	b.t++
	for u != 0 || v != 0 {
		if u != 0 {
			if b.vis[u] == b.t {
				return u
			}
			b.vis[u] = b.t
			u = b.st[b.match[u]]
			if u != 0 {
				u = b.st[b.pa[u]]
			}
		}
		u, v = v, u
	}
	return 0
}

// addBlossom shrinks the odd cycle through u, lca and v into a new blossom.
func (b *blossomRef) addBlossom(u, lca, v int) {
	bl := b.n + 1
	for bl <= b.nx && b.st[bl] != 0 {
		bl++
	}
	if bl > b.nx {
		b.nx++
		b.flower = append(b.flower, []int{lca})
		b.match = append(b.match, b.match[lca])
		for x := range b.edge {
			b.edge[x] = append(b.edge[x], refEdge{})
		}
		b.edge = append(b.edge, make([]refEdge, bl+1))
		b.st = append(b.st, bl)
		for x := range b.flowerFrom {
			b.flowerFrom[x] = append(b.flowerFrom[x], 0)
		}
		b.flowerFrom = append(b.flowerFrom, make([]int, bl+1))
		b.side = append(b.side, 0)
		b.slack = append(b.slack, 0)
		b.pa = append(b.pa, 0)
		b.vis = append(b.vis, 0)
		b.lab = append(b.lab, 0)
	} else {
		b.lab[bl], b.side[bl] = 0, 0
		b.match[bl] = b.match[lca]
		b.flower[bl] = []int{lca}
	}
	for x := u; x != lca; {
		y := b.st[b.match[x]]
		b.flower[bl] = append(b.flower[bl], x, y)
		b.qPush(y)
		x = b.st[b.pa[y]]
	}
	reverse(b.flower[bl][1:])
	for x := v; x != lca; {
		y := b.st[b.match[x]]
		b.flower[bl] = append(b.flower[bl], x, y)
		b.qPush(y)
		x = b.st[b.pa[y]]
	}
	b.setSt(bl, bl)
	for x := 1; x <= b.nx; x++ {
		b.edge[bl][x].w = 0
		b.edge[x][bl].w = 0
	}
	for x := 1; x <= b.n; x++ {
		b.flowerFrom[bl][x] = 0
	}
	for _, xs := range b.flower[bl] {
		for x := 1; x <= b.nx; x++ {
			if b.edge[bl][x].w <= 0 || b.dist(b.edge[xs][x]) < b.dist(b.edge[bl][x]) {
				b.edge[bl][x] = b.edge[xs][x]
				b.edge[x][bl] = b.edge[x][xs]
			}
		}
		for x := 1; x <= b.n; x++ {
			if b.flowerFrom[xs][x] != 0 {
				b.flowerFrom[bl][x] = xs
			}
		}
	}
	b.setSlack(bl)
}

// expandBlossom dissolves odd blossom bl whose label reached zero.
func (b *blossomRef) expandBlossom(bl int) {
	for _, i := range b.flower[bl] {
		b.setSt(i, i)
	}
	xr := b.flowerFrom[bl][b.edge[bl][b.pa[bl]].u]
	pr := b.getPr(bl, xr)
	f := b.flower[bl]
	for i := 0; i < pr; i += 2 {
		xs, xns := f[i], f[i+1]
		b.pa[xs] = b.edge[xns][xs].u
		b.side[xs], b.side[xns] = 1, 0
		b.slack[xs] = 0
		b.setSlack(xns)
		b.qPush(xns)
	}
	b.side[xr], b.pa[xr] = 1, b.pa[bl]
	for i := pr + 1; i < len(f); i++ {
		xs := f[i]
		b.side[xs] = -1
		b.setSlack(xs)
	}
	b.st[bl] = 0
}

// onFoundEdge handles a tight edge e; it reports whether it augmented the matching.
func (b *blossomRef) onFoundEdge(e refEdge) bool {
	u, v := b.st[e.u], b.st[e.v]
	switch b.side[v] {
	case -1:
		b.pa[v] = e.u
		b.side[v] = 1
		nu := b.st[b.match[v]]
		b.slack[v], b.slack[nu], b.side[nu] = 0, 0, 0
		b.qPush(nu)
	case 0:
		lca := b.lca(u, v)
		if lca == 0 {
			b.augment(u, v)
			b.augment(v, u)
			return true
		}
		b.addBlossom(u, lca, v)
	}
	return false
}

// augmentOnce grows alternating trees from the single vertices, adjusting labels, until it finds
// an augmenting path worth taking (true) or none is left (false).
func (b *blossomRef) augmentOnce() bool {
	b.side = make([]int, b.nx+1)
	b.slack = make([]int, b.nx+1)
	for x := range b.side {
		b.side[x] = -1
	}
	b.q = b.q[:0]
	for x := 1; x <= b.nx; x++ {
		if b.st[x] == x && b.match[x] <= 0 {
			b.pa[x] = 0
			b.side[x] = 0
			b.qPush(x)
		}
	}
	if len(b.q) == 0 {
		return false
	}
	for {
		for len(b.q) > 0 {
			u := b.q[0]
			b.q = b.q[1:]
			if b.side[b.st[u]] == 1 {
				continue
			}
			for v := 1; v <= b.n; v++ {
				if b.edge[u][v].w > 0 && b.st[u] != b.st[v] {
					if b.dist(b.edge[u][v]) <= 0 {
						if b.onFoundEdge(b.edge[u][v]) {
							return true
						}
					} else {
						b.updateSlack(u, b.st[v])
					}
				}
			}
		}
		d := math.Inf(1)
		for bl := b.n + 1; bl <= b.nx; bl++ {
			if b.st[bl] == bl && b.side[bl] == 1 {
				d = min(d, b.lab[bl]/2.0)
			}
		}
		for x := 1; x <= b.nx; x++ {
			if b.st[x] == x && b.slack[x] != 0 {
				switch b.side[x] {
				case -1:
					d = min(d, b.dist(b.edge[b.slack[x]][x]))
				case 0:
					d = min(d, b.dist(b.edge[b.slack[x]][x])/2.0)
				}
			}
		}
		for u := 1; u <= b.n; u++ {
			switch b.side[b.st[u]] {
			case 0:
				if notAbove(b.lab[u], d) {
					return false
				}
				b.lab[u] -= d
			case 1:
				b.lab[u] += d
			}
		}
		for bl := b.n + 1; bl <= b.nx; bl++ {
			if b.st[bl] == bl {
				switch b.side[b.st[bl]] {
				case 0:
					b.lab[bl] += d * 2
				case 1:
					b.lab[bl] -= d * 2
				}
			}
		}
		b.q = b.q[:0]
		// Blossoms this loop forms are not visited (Python's range is fixed at its start).
		for x, nx := 1, b.nx; x <= nx; x++ {
			if b.st[x] == x && b.slack[x] != 0 && b.st[b.slack[x]] != x && b.dist(b.edge[b.slack[x]][x]) <= 0 {
				if b.onFoundEdge(b.edge[b.slack[x]][x]) {
					return true
				}
			}
		}
		for bl := b.n + 1; bl <= b.nx; bl++ {
			if b.st[bl] == bl && b.side[bl] == 1 && b.lab[bl] <= 0 {
				b.expandBlossom(bl)
			}
		}
	}
}
