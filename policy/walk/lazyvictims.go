package walk

import "fmt"

// Lazy victims. With exclusive YARN placement and the authors' victims, a pending job that
// cannot fit even once every running job below it is preempted still preempts them all, and
// the walk then places each back at its rank, mostly on exactly its GPUs, which cancels the
// preemption (near saturation, most victims of sjf; docs/simulator.md, "Speed"). A lazy victim is preempted on paper only: it stays on
// its GPUs while the walk counts them as idle (free) and keeps, per node, how many GPUs lazy
// victims hold, so that every placement the walk tries reads the cluster T that the victims'
// releases would have left. Only their placement is saved, never a decision: the moment the
// difference between T and the cluster could change one, the lazy victims are released for
// real, in their order (materialize), and the walk goes on as it would have.
//
// The argument, with part = yarnPart(GPUs) the fewest GPUs a YARN placement needs on one node:
//   - A node of no lazy victim has the same GPUs idle in T as on the cluster. So when no node of
//     a lazy victim has part GPUs idle in T, the nodes a YARN placement of the job may use (and
//     the GPUs it takes on them) are the same in T and on the cluster: it places the same, or
//     fails in both (lazyReach, try).
//   - In the attempt, the preempting job j failed where it was tried, or fewer GPUs than it
//     asks for were idle. A victim whose nodes keep fewer than j's part GPUs idle in T adds no
//     node j could use: if j fit now, it would have fit, with the same GPUs, one victim before
//     (as many GPUs were idle on the nodes it uses), so j still fails. Only when a node of the
//     last victim has j's part, and j asks for at most the free GPUs, may j fit: the victims
//     are then released for real and the attempt goes on as before.
//   - A lazy victim walked again goes back exactly on its GPUs (lazyBack) when it runs at its
//     fastest option (the one YARN places at), lies on one node, no node before its own has as
//     many GPUs idle in T as it has, and the GPUs idle in T on its node below its last one are
//     its own. Then it stays where it is, as the cancelled preemption would leave it; else the
//     lazy victims are released and it is walked as before. (The first two always hold for a
//     victim of at most a node's GPUs, as YARN placed it; they are checked as the argument
//     needs them.)
//   - No job is released while victims are lazy but by materialize: after an attempt with lazy
//     victims, every running job left to take ranks above it, and the walk only descends (the
//     jobs it starts are not taken in the call). Placements go through try.
//
// Every walk walks all of its victims again, so none stays lazy after it. The reference
// executor never makes a victim lazy.
type lazyState struct {
	n     int     // lazy victims neither walked again nor released yet
	first int     // index in greedy.victims of the first of them (they are one attempt's run)
	free  int     // GPUs they hold
	per   int     // GPUs per node
	words int     // words of a set of nodes
	extra []int32 // by node: GPUs lazy victims hold on it
	nodes []int32 // nodes with extra > 0 once (some may be back to 0)
	gpu   []bool  // by GPU: held by a lazy victim
	// reach[k*words:][:words] is the set of nodes of lazy victims with at least k GPUs idle in
	// T (k from 1 to per). Their GPUs idle on the cluster do not change while they are lazy:
	// every placement that could take one, and every release, releases the victims first.
	reach []uint64
}

// The causes of a release of lazy victims for real.
const (
	matFits  = iota // the preempting job may fit in T
	matMoves        // a lazy victim walked again may not go back exactly
	matPlace        // a placement may take a lazy victim's node
)

// lazyOn reports whether an attempt of this walk may make its victims lazy: the shortcut applies
// (shortcuts) and no lazy victims are left.
func (g *greedy) lazyOn() bool { return g.lazy && g.lz.n == 0 }

// level adds node nd to (on) or drops it from the set of nodes with at least k GPUs idle in T.
func (z *lazyState) level(k, nd int, on bool) {
	w := &z.reach[k*z.words+nd>>6]
	if on {
		*w |= 1 << (nd & 63)
	} else {
		*w &^= 1 << (nd & 63)
	}
}

// lazyRelease preempts r on paper, and reports whether one of its nodes now has at least part
// GPUs idle in T.
func (g *greedy) lazyRelease(r *ranked, part int) bool {
	z := &g.lz
	cl := g.s.Cluster
	if z.extra == nil {
		sh := cl.Shape()
		z.per, z.words = sh.GPUsPerNode, (sh.Nodes+63)/64
		z.extra = make([]int32, sh.Nodes)
		z.gpu = make([]bool, sh.Nodes*sh.GPUsPerNode)
		z.reach = make([]uint64, (z.per+1)*z.words)
	}
	if z.n == 0 {
		z.first = len(g.victims)
	}
	g.addVictim(r, true)
	z.n++
	z.free += len(r.j.On)
	reach := false
	for _, gpu := range r.j.On {
		z.gpu[gpu] = true
		nd := gpu / z.per
		idle := cl.NodeIdle(nd) + int(z.extra[nd])
		if z.extra[nd] == 0 {
			z.nodes = append(z.nodes, int32(nd))
			for k := 1; k <= idle; k++ {
				z.level(k, nd, true)
			}
		}
		z.extra[nd]++
		z.level(idle+1, nd, true)
		reach = reach || idle+1 >= part
	}
	if g.checkLazy {
		g.verify()
	}
	return reach
}

// lazyReach reports whether a node of a lazy victim has at least the part of a job of gpus GPUs
// idle in T.
func (g *greedy) lazyReach(gpus int) bool {
	z := &g.lz
	k := yarnPart(gpus, z.per)
	for _, w := range z.reach[k*z.words:][:z.words] {
		if w != 0 {
			return true
		}
	}
	return false
}

// drop forgets lazy victims that a walk cut short by an error left (a walk walks all its victims
// again otherwise), with their marks.
func (z *lazyState) drop() {
	if z.n == 0 {
		return
	}
	z.clearNodes()
	clear(z.gpu)
	z.n = 0
}

// clearNodes forgets the GPUs lazy victims hold on each node, and the nodes' sets.
func (z *lazyState) clearNodes() {
	for _, nd := range z.nodes {
		z.extra[nd] = 0
		for k := 1; k <= z.per; k++ {
			z.level(k, int(nd), false)
		}
	}
	z.nodes, z.free = z.nodes[:0], 0
}

// verify checks reach, extra, gpu and free against the lazy victims and the cluster.
func (g *greedy) verify() {
	z, cl := &g.lz, g.s.Cluster
	extra := make([]int32, len(z.extra))
	free := 0
	for _, v := range g.victims {
		if v.lazy {
			for _, gpu := range v.j.On {
				extra[gpu/z.per]++
				free++
			}
		}
	}
	marked := 0
	for _, m := range z.gpu {
		if m {
			marked++
		}
	}
	if free != z.free || marked != free {
		panic(fmt.Sprintf("policy: lazy victims hold %d GPUs, %d counted, %d marked", free, z.free, marked))
	}
	for nd := range extra {
		if extra[nd] != z.extra[nd] {
			panic(fmt.Sprintf("policy: lazy victims hold %d GPUs on node %d, %d counted", extra[nd], nd, z.extra[nd]))
		}
		for k := 1; k <= z.per; k++ {
			want := extra[nd] > 0 && cl.NodeIdle(nd)+int(extra[nd]) >= k
			if got := z.reach[k*z.words+nd>>6]&(1<<(nd&63)) != 0; got != want {
				panic(fmt.Sprintf("policy: node %d in the set of %d GPUs idle in T: %v, want %v", nd, k, got, want))
			}
		}
	}
}

// materialize releases the lazy victims for real, in their order.
func (g *greedy) materialize(cause int) error {
	z := &g.lz
	if z.n == 0 {
		return nil
	}
	g.stats.LazyReleases[cause]++
	z.clearNodes()
	for i := z.first; i < len(g.victims) && z.n > 0; i++ {
		v := &g.victims[i]
		if !v.lazy {
			continue
		}
		v.lazy = false
		z.n--
		for _, gpu := range v.j.On {
			z.gpu[gpu] = false
		}
		if err := g.s.Cluster.Release(v.j.ID); err != nil {
			return fmt.Errorf("policy %s: preempt job %d: %w", g.name, v.j.ID, err)
		}
	}
	if g.checkLazy {
		g.verify()
	}
	return nil
}

// lazyBack walks lazy victim vi again when it provably goes back exactly on its GPUs: it stays
// there, its preemption cancelled. It reports false, changing nothing, otherwise.
func (g *greedy) lazyBack(vi int) bool {
	v := &g.victims[vi]
	j, cl, z := v.j, g.s.Cluster, &g.lz
	on := j.On
	need := len(on)
	if need == 0 || need > z.per || j.Opt != j.Fast {
		return false
	}
	nd := on[0] / z.per
	if on[need-1] >= (nd+1)*z.per {
		return false // on two nodes
	}
	// YARN takes the first node with need GPUs idle in T: on the cluster, or a lazy victim's.
	if m := cl.NextIdleNode(need, 0); m >= 0 && m < nd {
		return false
	}
	set := z.reach[need*z.words:][:z.words]
	for w := range nd >> 6 {
		if set[w] != 0 {
			return false
		}
	}
	if set[nd>>6]&(1<<(nd&63)-1) != 0 {
		return false
	}
	// Then, on its node, the GPUs idle in T from the first one: they must be its own.
	for i, gpu := 0, nd*z.per; gpu <= on[need-1]; gpu++ {
		if gpu == on[i] {
			i++
		} else if cl.Count(gpu) == 0 || z.gpu[gpu] {
			return false
		}
	}
	v.lazy, v.cancelled = false, true
	z.n--
	z.free -= need
	idle := cl.NodeIdle(nd) + int(z.extra[nd])
	z.extra[nd] -= int32(need)
	low := idle - need // its GPUs idle in T now
	if z.extra[nd] == 0 {
		low = 0 // no lazy victim left on it
	}
	for k := low + 1; k <= idle; k++ {
		z.level(k, nd, false)
	}
	for _, gpu := range on {
		z.gpu[gpu] = false
	}
	if z.n == 0 {
		z.nodes = z.nodes[:0]
	}
	g.stats.LazyBacks++
	if g.checkLazy {
		g.verify()
	}
	if g.remOn {
		g.remPlaced(j, v.k, false)
	}
	return true
}
