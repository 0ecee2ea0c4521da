package schedulers

import (
	"fmt"
	"math"
)

// blossom is the maximum-weight matching of a general graph that the Muri simulator forms its
// groups with (Rivendile/Muri, simulator/matching.py _Blossom_Same): the classic O(n³)
// primal-dual algorithm with Edmonds' blossoms, vertex and blossom labels, and a slack vertex per
// blossom, in the form that file runs it, with its tolerances and visiting orders, so that among
// matchings of equal weight it returns the same one. A maximum-weight matching does not need to
// be of maximum size: vertices stay single when no edge is worth it.
//
// Vertices are 1..n; 0 means none. Blossoms take the ids n+1..nx. A vertex's mate, match[x], is
// the far end of the edge that matches it.
//
// Muri-S and Muri-L match up to 256 jobs at every event, so this form keeps its arrays from call
// to call, scans a vertex's edges in a dense matrix of doubled weights, keeps the slack of each
// slack edge (computed again when the labels change), offers a blossom one edge per scanned
// vertex rather than one per vertex inside it, and scans a vertex in short where a twin's scan
// made its offers (twinScan). Every comparison is the one matching.py makes, on
// the same floating-point values: TestBlossomReference holds it, mate for mate, to the
// line-by-line port it came from (matching_ref_test.go).
type blossom struct {
	n, nx      int
	stride     int       // ids 0..stride-1: the vertices, then room for every blossom
	edge       []bEdge   // edge[u*stride+v]: the edge between u and v (blossoms: the best one into them)
	w2         []float64 // w2[u*(n+1)+v]: twice the weight of the edge between vertices u and v
	w2T        []float64 // w2T[v*(n+1)+u] = w2[u*(n+1)+v]: the weights into v, in a row
	lab        []float64 // dual labels
	match      []int
	slack      []int     // slack[x]: the vertex with the least slack edge to blossom x
	slackD     []float64 // slackD[x]: that edge's slack under the current labels (+Inf: none)
	st         []int     // st[x]: the outermost blossom holding x
	pa         []int
	side       []int // S in matching.py: 0 even, 1 odd, -1 unlabelled
	vis        []int
	flower     [][]int   // a blossom's sub-blossoms, around its cycle from its base
	flowerFrom []int     // flowerFrom[b*(n+1)+x]: the sub-blossom of b holding vertex x
	distBl     []float64 // addBlossom's scratch: the slack of the new blossom's edge from each id
	winner     []int     // addBlossom's scratch: the sub-blossom that edge comes from
	offered    []int     // offered[x] == scan: blossom x's edge from the vertex being scanned is offered
	scan       int
	complete   bool // every two vertices have an edge (scanFrom's quietScan applies)
	// Twins, vertices whose edges to all others weigh the same (Muri's jobs of one kind): a quiet
	// scan of one makes every offer a scan of the other would, but for the edge between them.
	twin      []int // twin[u]: the first of u's twins (u if none is before it)
	twinW2    []int // twinW2[f]: index in w2 of the edge from f's second twin to f (0: none yet)
	twinHash  map[uint64]int
	twinNext  []int // the next first twin whose row has the same hash
	kindFirst []int // matchKinds' scratch: the first vertex of each kind
	gen       int   // counts the changes other than offers
	quietAt   []int // quietAt[f]: the gen in which quietBy[f], a twin of f, was scanned quietly
	quietBy   []int
	q, fifo   []int
	t         int
}

// bEdge is an edge with its original end points.
type bEdge struct {
	u, v int32
	w    float64
}

// maxWeightMatching returns the mates of vertices 1..n (0: single) of the graph of weights w
// (w[u][v] for 1 ≤ u, v ≤ n; 0 or less: no edge), valid until the next call. Weights need not be
// symmetric: the lineage computes each direction itself.
func (b *blossom) maxWeightMatching(n int, w func(u, v int) float64) []int {
	wmax := b.build(n, func(u int, row []float64) {
		for v := range row {
			row[v] = w(u, v)
		}
	})
	if b.complete {
		b.findTwins()
	}
	return b.solve(wmax)
}

// matchKinds is maxWeightMatching for a graph whose weights depend on the kinds of its vertices
// alone: vertex u is of kind kind[u-1], and the edge from u to v weighs weight[a*nk+b] for kinds
// a and b. Vertices of one kind are twins, known without comparing their edges (findTwins).
func (b *blossom) matchKinds(kind []int, nk int, weight []float64) []int {
	n := len(kind)
	wmax := b.build(n, func(u int, row []float64) {
		of := weight[kind[u-1]*nk : kind[u-1]*nk+nk]
		for v := 1; v < len(row); v++ {
			row[v] = of[kind[v-1]]
		}
	})
	if b.complete {
		b.twinsSized()
		first := resize(b.kindFirst, nk)
		clear(first)
		for u := 1; u <= n; u++ {
			if first[kind[u-1]] == 0 {
				first[kind[u-1]] = u
			}
			b.twin[u] = first[kind[u-1]]
		}
		b.kindFirst = first
	}
	return b.solve(wmax)
}

// build sets up the graph of n vertices whose weights from vertex u the function fills in
// (row[v] for 1 ≤ v ≤ n), and returns the largest.
func (b *blossom) build(n int, fill func(u int, row []float64)) float64 {
	// At most (n-1)/2 blossoms live at once (each holds three or more), and a new one takes the
	// lowest free id: ids stay below n+n/2+2.
	n1, s := n+1, n+n/2+2
	b.n, b.nx, b.t, b.stride = n, n, 0, s
	b.edge = resize(b.edge, s*s)
	b.w2 = resize(b.w2, n1*n1)
	b.w2T = resize(b.w2T, n1*n1)
	edges := 0
	wmax := 0.0
	for u := range n1 {
		row := b.w2[u*n1 : u*n1+n1]
		if u > 0 {
			fill(u, row)
		}
		for v := range n1 {
			e := bEdge{u: int32(u), v: int32(v)}
			if u > 0 && v > 0 && u != v {
				e.w = row[v]
				if e.w > 0 {
					edges++
				} else {
					e.w = 0
				}
			}
			if u > 0 && v > 0 && e.w > wmax {
				wmax = e.w
			}
			b.edge[u*s+v] = e
			row[v] = e.w * 2.0
			b.w2T[v*n1+u] = e.w * 2.0
		}
	}
	b.complete = edges == n*(n-1)
	return wmax
}

// solve runs the matching on the graph build set up, of largest weight wmax.
func (b *blossom) solve(wmax float64) []int {
	n1, s := b.n+1, b.stride
	b.vis = resize(b.vis, s)
	b.match = resize(b.match, s)
	clear(b.vis[:n1])
	clear(b.match[:n1])
	if wmax == 0 { // no edge
		return b.match[:n1]
	}
	b.pa = resize(b.pa, s)
	b.st = resize(b.st, s)
	b.lab = resize(b.lab, s)
	b.side = resize(b.side, s)
	b.slack = resize(b.slack, s)
	b.slackD = resize(b.slackD, s)
	b.distBl = resize(b.distBl, s)
	b.winner = resize(b.winner, s)
	b.offered = resize(b.offered, s)
	clear(b.offered)
	b.scan = 0
	b.flower = resize(b.flower, s)
	b.flowerFrom = resize(b.flowerFrom, s*n1)
	clear(b.pa[:n1])
	// flowerFrom's rows are a blossom's: they are cleared as it forms.
	for u := range n1 {
		b.st[u] = u
		b.flower[u] = b.flower[u][:0]
		b.lab[u] = wmax
	}
	for b.augmentOnce() {
	}
	return b.match[:n1]
}

// findTwins sets twin: vertices u and f are twins if every other vertex's edge from u weighs
// what its edge from f does, and u's edge to the first of its twins weighs what the others' do.
// Candidates are found by a hash of the weights of a row, which twins share in another order.
func (b *blossom) findTwins() {
	n1 := b.n + 1
	b.twinsSized()
	b.twinW2 = resize(b.twinW2, n1)
	b.twinNext = resize(b.twinNext, n1)
	if b.twinHash == nil {
		b.twinHash = map[uint64]int{}
	}
	clear(b.twinHash)
	for u := 1; u < n1; u++ {
		row := b.w2[u*n1+1 : u*n1+n1]
		h := uint64(0)
		for _, x := range row {
			h += mix64(math.Float64bits(x))
		}
		b.twin[u] = u
		f := b.twinHash[h]
		for ; f != 0; f = b.twinNext[f] {
			if b.isTwin(u, f) {
				break
			}
		}
		if f == 0 {
			b.twinW2[u], b.twinNext[u] = 0, b.twinHash[h]
			b.twinHash[h] = u
			continue
		}
		b.twin[u] = f
		if b.twinW2[f] == 0 {
			b.twinW2[f] = u*n1 + f
		}
	}
}

// twinsSized sizes the twins' arrays for the graph and marks that no twin was scanned yet.
func (b *blossom) twinsSized() {
	n1 := b.n + 1
	b.twin = resize(b.twin, n1)
	b.quietAt = resize(b.quietAt, n1)
	b.quietBy = resize(b.quietBy, n1)
	clear(b.quietAt)
}

// isTwin reports whether u is a twin of f, the first of its twins.
func (b *blossom) isTwin(u, f int) bool {
	n1 := b.n + 1
	ru, rf := b.w2[u*n1:u*n1+n1], b.w2[f*n1:f*n1+n1]
	if k := b.twinW2[f]; k != 0 && ru[f] != b.w2[k] {
		return false
	}
	for v := 1; v < n1; v++ {
		if ru[v] != rf[v] && v != u && v != f {
			return false
		}
	}
	return true
}

// mix64 is SplitMix64's finaliser: sums of it over a row's weights tell rows apart.
func mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// resize returns s with length n, reusing its array when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// at is the edge between ids u and v.
func (b *blossom) at(u, v int) *bEdge { return &b.edge[u*b.stride+v] }

// from is flowerFrom[bl][x].
func (b *blossom) from(bl, x int) *int { return &b.flowerFrom[bl*(b.n+1)+x] }

// dist is the slack of edge e.
func (b *blossom) dist(e *bEdge) float64 { return b.lab[e.u] + b.lab[e.v] - e.w*2.0 }

// notAbove is matching.py's my_cmp(x, y) <= 0: x ≤ y, or x within a relative 1e-5 of y.
func notAbove(x, y float64) bool { return x <= y || isClose(x, y, 1e-5) }

// isClose is Python's math.isclose with a relative tolerance and no absolute one.
func isClose(a, b, rel float64) bool {
	if a == b {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= rel*max(math.Abs(a), math.Abs(b))
}

// offerSlack makes u the slack vertex of x if x has none or u's edge to x, of slack d, is tighter.
func (b *blossom) offerSlack(u, x int, d float64) {
	if d < b.slackD[x] {
		b.slack[x], b.slackD[x] = u, d
	}
}

// noSlack marks that blossom x has no slack edge.
func (b *blossom) noSlack(x int) { b.slack[x], b.slackD[x] = 0, math.Inf(1) }

func (b *blossom) setSlack(x int) {
	b.noSlack(x)
	if n1 := b.n + 1; x < n1 {
		// Vertex x's edge from vertex u is edge(u, x): its slack from the weights.
		w2, lx := b.w2T[x*n1:x*n1+n1], b.lab[x]
		for u := 1; u < n1; u++ {
			if su := b.st[u]; w2[u] > 0 && su != x && b.side[su] == 0 {
				b.offerSlack(u, x, b.lab[u]+lx-w2[u])
			}
		}
		return
	}
	for u := 1; u <= b.n; u++ {
		if e := b.at(u, x); e.w > 0 && b.st[u] != x && b.side[b.st[u]] == 0 {
			b.offerSlack(u, x, b.dist(e))
		}
	}
}

// qPush queues the vertices of blossom x, breadth first as matching.py does.
func (b *blossom) qPush(x int) {
	fifo := append(b.fifo[:0], x)
	for k := 0; k < len(fifo); k++ {
		if x := fifo[k]; x <= b.n {
			b.q = append(b.q, x)
		} else {
			fifo = append(fifo, b.flower[x]...)
		}
	}
	b.fifo = fifo
}

// setSt makes blossom bl the outermost blossom of x and everything inside it. Like matching.py,
// it stops at ids below n, which vertex n, having no flower, does not notice.
func (b *blossom) setSt(x, bl int) {
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
func (b *blossom) getPr(bl, xr int) int {
	f := b.flower[bl]
	pr := -1
	for i, v := range f {
		if v == xr {
			pr = i
			break
		}
	}
	if pr < 0 {
		panic("schedulers: blossom: sub-blossom not in its blossom")
	}
	if pr%2 == 1 {
		reverse(f[1:])
		return len(f) - pr
	}
	return pr
}

func reverse(s []int) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// setMatch matches u along edge (u, v), expanding into blossoms breadth first.
func (b *blossom) setMatch(u, v int) {
	type pair struct{ u, v int }
	fifo := []pair{{u, v}}
	for len(fifo) > 0 {
		p := fifo[0]
		fifo = fifo[1:]
		u, v := p.u, p.v
		e := b.at(u, v)
		b.match[u] = int(e.v)
		if u <= b.n {
			continue
		}
		xr := *b.from(u, int(e.u))
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
func (b *blossom) augment(u, v int) {
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

func (b *blossom) lca(u, v int) int {
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
func (b *blossom) addBlossom(u, lca, v int) {
	s, n1 := b.stride, b.n+1
	bl := b.n + 1
	for bl <= b.nx && b.st[bl] != 0 {
		bl++
	}
	if bl > b.nx {
		if bl >= s {
			panic(fmt.Sprintf("schedulers: blossom: id %d past the %d a graph of %d vertices needs", bl, s-1, b.n))
		}
		b.nx++
		for x := range bl {
			b.edge[x*s+bl] = bEdge{}
		}
		clear(b.edge[bl*s : bl*s+bl+1])
		clear(b.flowerFrom[bl*n1 : bl*n1+n1])
		b.st[bl] = bl
		b.side[bl], b.pa[bl], b.vis[bl] = 0, 0, 0
		b.noSlack(bl)
	} else {
		b.side[bl] = 0
	}
	b.lab[bl] = 0
	b.match[bl] = b.match[lca]
	b.flower[bl] = append(b.flower[bl][:0], lca)
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
	row := b.edge[bl*s : bl*s+s]
	win := b.winner
	for x := 1; x <= b.nx; x++ {
		row[x].w = 0
		win[x] = 0
	}
	clear(b.flowerFrom[bl*n1+1 : bl*n1+n1])
	// The best edge between bl and each x, in row[x] and the column edge[x][bl]: from the first
	// sub-blossom whose edge is least slack (dists[x]). The column is written once at the end,
	// from the winner win[x]; until then, edge[x][bl] holds its old end points.
	dists := b.distBl
	for _, xs := range b.flower[bl] {
		sub := b.edge[xs*s : xs*s+s]
		b.bestEdges(row, sub, dists, win, xs, 1, bl)
		// bl's edge to itself, as the lineage keeps it: the column write lands on row[bl] last.
		self := b.edge[xs*s+bl]
		self.w = 0
		if w := win[xs]; w != 0 {
			self = b.edge[xs*s+w]
		}
		if row[bl].w <= 0 || b.dist(&self) < dists[bl] {
			row[bl] = row[xs]
			dists[bl] = b.dist(&row[bl])
		}
		b.bestEdges(row, sub, dists, win, xs, bl+1, b.nx+1)
		// flowerFrom[xs] is not 0 at exactly the vertices inside xs.
		inside := append(b.fifo[:0], xs)
		for k := 0; k < len(inside); k++ {
			if y := inside[k]; y <= b.n {
				*b.from(bl, y) = xs
			} else {
				inside = append(inside, b.flower[y]...)
			}
		}
		b.fifo = inside
	}
	// The column, and bl's slack edge as setSlack finds it.
	b.noSlack(bl)
	for x := 1; x <= b.nx; x++ {
		if x == bl {
			continue
		}
		col := &b.edge[x*s+bl]
		*col = b.edge[x*s+win[x]]
		if x <= b.n && col.w > 0 && b.st[x] != bl && b.side[b.st[x]] == 0 {
			b.offerSlack(x, bl, b.dist(col))
		}
	}
}

// bestEdges is addBlossom's pass over sub-blossom xs for ids lo..hi-1: it takes xs's edge to x
// where bl has none yet or xs's is less slack.
func (b *blossom) bestEdges(row, sub []bEdge, dists []float64, win []int, xs, lo, hi int) {
	if n1 := b.n + 1; xs < n1 {
		// A vertex's edge to vertex x is edge(xs, x): its slack from the weights.
		w2, lab, lxs := b.w2[xs*n1:xs*n1+n1], b.lab[:n1], b.lab[xs]
		for x := lo; x < min(hi, n1); x++ {
			d := lxs + lab[x] - w2[x]
			if row[x].w <= 0 || d < dists[x] {
				row[x] = sub[x]
				win[x] = xs
				dists[x] = d
			}
		}
		lo = max(lo, n1)
	}
	for x := lo; x < hi; x++ {
		d := b.dist(&sub[x])
		if row[x].w <= 0 || d < dists[x] {
			row[x] = sub[x]
			win[x] = xs
			dists[x] = d
		}
	}
}

// expandBlossom dissolves odd blossom bl whose label reached zero.
func (b *blossom) expandBlossom(bl int) {
	for _, i := range b.flower[bl] {
		b.setSt(i, i)
	}
	xr := *b.from(bl, int(b.at(bl, b.pa[bl]).u))
	pr := b.getPr(bl, xr)
	f := b.flower[bl]
	for i := 0; i < pr; i += 2 {
		xs, xns := f[i], f[i+1]
		b.pa[xs] = int(b.at(xns, xs).u)
		b.side[xs], b.side[xns] = 1, 0
		b.noSlack(xs)
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
func (b *blossom) onFoundEdge(e bEdge) bool {
	u, v := b.st[e.u], b.st[e.v]
	switch b.side[v] {
	case -1:
		b.gen++
		b.pa[v] = int(e.u)
		b.side[v] = 1
		nu := b.st[b.match[v]]
		b.noSlack(v)
		b.noSlack(nu)
		b.side[nu] = 0
		b.qPush(nu)
	case 0:
		b.gen++
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

// scanFrom looks at every edge of vertex u, an even vertex: it takes a tight edge to another
// blossom, reporting whether that augmented the matching, and offers any other as slack.
func (b *blossom) scanFrom(u int) bool {
	n1 := b.n + 1
	w2 := b.w2[u*n1 : u*n1+n1]
	st, lab := b.st[:len(w2)], b.lab[:len(w2)]
	slack, slackD, offered := b.slack, b.slackD, b.offered
	su, lu := st[u], lab[u]
	// A blossom's edge from u is one, whichever of its vertices leads to it: it is offered once,
	// until a tight edge changes the blossoms.
	b.scan++
	v := 1
	if b.complete {
		if b.twinScan(u, su, lu) {
			return false
		}
		v = b.quietScan(u, su, lu, w2, st, lab)
		if v == len(w2) {
			if f := b.twin[u]; su == u {
				b.quietAt[f], b.quietBy[f] = b.gen, u
			}
			return false
		}
	}
	for ; v < len(w2); v++ {
		x := st[v]
		if w2[v] <= 0 || x == su {
			continue
		}
		// The slack of the edge between vertices u and v, as dist computes it.
		d := lu + lab[v] - w2[v]
		if d <= 0 {
			if b.onFoundEdge(*b.at(u, v)) {
				return true
			}
			su = st[u]
			b.scan++
			continue
		}
		if x != v {
			if offered[x] == b.scan {
				continue
			}
			offered[x] = b.scan
			d = b.dist(b.at(u, x))
		}
		if d < slackD[x] {
			slack[x], slackD[x] = u, d
		}
	}
	return false
}

// quietScan does scanFrom's work, for u in blossom su with label lu, when every two vertices have
// an edge, up to u's first tight edge to another blossom that is not odd (a tight edge to an odd
// blossom changes nothing), and returns where that edge leads (n+1 if nowhere). Up to there, offers
// are all that happens, and their order does not matter. Each vertex is offered its edge from u,
// and each blossom but su its best edge from u, at once: an offer scanFrom would not make, to a
// vertex or blossom inside a blossom, or would make later, to one that the tight edge then puts
// inside a blossom, labels odd or labels even (which clears its slack), leaves a slack that
// nothing reads before it is cleared or the stage ends.
func (b *blossom) quietScan(u, su int, lu float64, w2 []float64, st []int, lab []float64) int {
	slack, slackD, side := b.slack[:len(w2)], b.slackD[:len(w2)], b.side
	v := 1
	for ; v < len(w2); v++ {
		d := lu + lab[v] - w2[v]
		if d <= 0 && st[v] != su && side[st[v]] != 1 {
			break
		}
		if d < slackD[v] && v != u {
			slack[v], slackD[v] = u, d
		}
	}
	b.offerBlossoms(u, su)
	return v
}

// offerBlossoms offers every blossom but su its best edge from u.
func (b *blossom) offerBlossoms(u, su int) {
	for x := b.n + 1; x <= b.nx; x++ {
		if b.st[x] == x && x != su {
			b.offerSlack(u, x, b.dist(b.at(u, x)))
			b.offered[x] = b.scan
		}
	}
}

// twinScan does the quiet scan of u, a vertex alone in its blossom su, in short when a twin f
// alone in its blossom, with the same label, was scanned quietly since the last change: every
// other vertex has an edge from u as slack as its edge from f, which found no tight edge and left
// a slack no larger. What is left is the edge between u and f, and the blossoms. It does nothing
// and reports false when it does not apply or that edge is tight.
func (b *blossom) twinScan(u, su int, lu float64) bool {
	t := b.twin[u]
	f := b.quietBy[t]
	if su != u || b.quietAt[t] != b.gen || f == u || b.st[f] != f || math.Float64bits(b.lab[f]) != math.Float64bits(lu) {
		return false
	}
	d := lu + b.lab[f] - b.w2[u*(b.n+1)+f]
	if d <= 0 {
		return false
	}
	b.offerSlack(u, f, d)
	b.offerBlossoms(u, su)
	return true
}

// augmentOnce grows alternating trees from the single vertices, adjusting labels, until it finds
// an augmenting path worth taking (true) or none is left (false).
func (b *blossom) augmentOnce() bool {
	b.gen++
	for x := range b.nx + 1 {
		b.side[x] = -1
		b.noSlack(x)
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
			if b.scanFrom(u) {
				return true
			}
		}
		// The step: the least of the odd blossoms' half labels and the slacks; min commutes.
		d := math.Inf(1)
		for x := 1; x <= b.nx; x++ {
			if b.st[x] != x {
				continue
			}
			if x > b.n && b.side[x] == 1 {
				d = min(d, b.lab[x]/2.0)
			}
			if b.slack[x] != 0 {
				switch b.side[x] {
				case -1:
					d = min(d, b.slackD[x])
				case 0:
					d = min(d, b.slackD[x]/2.0)
				}
			}
		}
		b.gen++
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
		// The slacks under the new labels, and the edges they made tight. Blossoms this loop forms
		// are not visited (Python's range is fixed at its start). Where the lineage computes every
		// slack before it takes the first tight edge, this takes each as it computes it: what a
		// tight edge changes (sides, blossoms and their blossom labels) is not what a slack reads,
		// and the slack of a blossom it forms is computed under the same labels.
		b.q = b.q[:0]
		for x, nx := 1, b.nx; x <= nx; x++ {
			if b.slack[x] == 0 {
				continue
			}
			b.slackD[x] = b.dist(b.at(b.slack[x], x))
			if b.st[x] == x && b.st[b.slack[x]] != x && b.slackD[x] <= 0 {
				if b.onFoundEdge(*b.at(b.slack[x], x)) {
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
