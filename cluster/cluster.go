package cluster

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/sharebench/sharebench/trace"
)

// GPUID names a GPU by node and index within the node.
type GPUID struct{ Node, Index int }

// String formats the GPU as "node-index", the authors' gpu_id form.
func (g GPUID) String() string { return fmt.Sprintf("%d-%d", g.Node, g.Index) }

// Cluster tracks the jobs on every GPU. GPUs are addressed by a flat index
// g = node*GPUsPerNode + index, so that (node, index) order is index order.
//
// Changes made after Mark can be undone with Rollback; policies use this to place tentatively
// on the engine's cluster without copying it.
type Cluster struct {
	shape Shape
	occ   []trace.JobID // MaxShare slots per GPU, residents sorted by job ID
	tags  []int32       // the residents' tags, slot by slot (see PlaceTagged)
	sole  []int32       // by tag: GPUs holding exactly one job, which carries the tag
	cnt   []int32       // residents per GPU
	free  []int64       // free memory per GPU

	nodeJobs []int32 // distinct jobs per node
	nodeIdle []int32 // GPUs with no job, per node
	nodeOpen []int32 // GPUs with room for another job, per node
	idle     int
	open     int
	shared   int // GPUs with two or more jobs

	// Node sets as bitsets: by workload (distinct jobs), with an idle GPU, with an open GPU.
	// They let placement visit nodes in (workload, node) order without sorting.
	byLoad    [][]uint64
	idleNodes []uint64
	openNodes []uint64
	// idleAtLeast[k] holds the nodes with at least k GPUs without jobs (k ≥ 1; [1] is idleNodes).
	idleAtLeast [][]uint64

	allocs map[trace.JobID]*alloc
	// dense holds the allocations of jobs with IDs in [lo, lo+len(dense)) instead of allocs
	// (see Dense): most traces number their jobs densely, and a slice beats a map.
	dense []*alloc
	lo    trace.JobID
	spare []*alloc // allocations undone by Rollback, reused by Place
	undo  []change
	// released is a Bloom filter of the jobs released into the undo log since it was last
	// empty, one bit per job ID modulo its size: a placement looks for its job's release in the
	// log (undone) only when the bit is set, as a fresh start's is not.
	released [16]uint64
	// relAt[j-lo] is where in the undo log job j (of the dense range) was last released: a hint,
	// as a removal from the log shifts the entries after it (undone checks it).
	relAt   []int32
	marks   []int // open marks' checkpoints, innermost last
	version uint64
}

type alloc struct {
	gpus []int
	mem  int64
	tag  int32
}

type change struct {
	place bool // true: undo a Place by releasing; false: undo a Release by placing again
	job   trace.JobID
	a     *alloc
}

// New returns an empty cluster of the given shape. It panics on an invalid shape; callers
// validate user input with Shape.Validate first.
func New(s Shape) *Cluster {
	if err := s.Validate(); err != nil {
		panic(err)
	}
	n := s.GPUs()
	c := &Cluster{
		shape:    s,
		occ:      make([]trace.JobID, n*s.MaxShare),
		tags:     make([]int32, n*s.MaxShare),
		sole:     make([]int32, 1),
		cnt:      make([]int32, n),
		free:     make([]int64, n),
		nodeJobs: make([]int32, s.Nodes),
		nodeIdle: make([]int32, s.Nodes),
		nodeOpen: make([]int32, s.Nodes),
		idle:     n,
		open:     n,
		allocs:   make(map[trace.JobID]*alloc),
	}
	for g := range c.free {
		c.free[g] = s.GPUMemBytes
	}
	words := (s.Nodes + 63) / 64
	c.byLoad = make([][]uint64, s.GPUsPerNode*s.MaxShare+1)
	for w := range c.byLoad {
		c.byLoad[w] = make([]uint64, words)
	}
	c.openNodes = make([]uint64, words)
	c.idleAtLeast = make([][]uint64, s.GPUsPerNode+1)
	for k := range c.idleAtLeast {
		c.idleAtLeast[k] = make([]uint64, words)
	}
	c.idleNodes = c.idleAtLeast[1]
	for i := range s.Nodes {
		c.nodeIdle[i] = int32(s.GPUsPerNode)
		c.nodeOpen[i] = int32(s.GPUsPerNode)
		setBit(c.byLoad[0], i, true)
		setBit(c.openNodes, i, true)
		for k := range c.idleAtLeast {
			setBit(c.idleAtLeast[k], i, true)
		}
	}
	return c
}

func setBit(b []uint64, i int, on bool) {
	if on {
		b[i>>6] |= 1 << (i & 63)
	} else {
		b[i>>6] &^= 1 << (i & 63)
	}
}

// NodeSet selects the nodes EachNode visits.
type NodeSet int

// The node sets of EachNode.
const (
	// WithIdle is the set of nodes with at least one GPU without jobs.
	WithIdle NodeSet = iota
	// WithOpen is the set of nodes with at least one GPU that can take another job.
	WithOpen
)

// EachNode calls fn for the nodes of the set in the order of the authors' placement scan:
// by number of distinct resident jobs ascending, ties by node index. It stops when fn returns
// false. fn must not change the cluster.
func (c *Cluster) EachNode(set NodeSet, fn func(node int) bool) {
	mask := c.idleNodes
	if set == WithOpen {
		mask = c.openNodes
	}
	for _, load := range c.byLoad {
		for w, bits := range load {
			bits &= mask[w]
			for bits != 0 {
				i := bits & -bits
				bits ^= i
				if !fn(w<<6 | trailingZeros(i)) {
					return
				}
			}
		}
	}
}

func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }

// AppendIdle appends to dst up to n GPUs without jobs, lowest index first, and returns it.
func (c *Cluster) AppendIdle(dst []int, n int) []int {
	per := c.shape.GPUsPerNode
	for w, bits := range c.idleNodes {
		for bits != 0 && n > 0 {
			i := bits & -bits
			bits ^= i
			node := w<<6 | trailingZeros(i)
			for g := node * per; g < (node+1)*per && n > 0; g++ {
				if c.cnt[g] == 0 {
					dst = append(dst, g)
					n--
				}
			}
		}
	}
	return dst
}

// NextIdleNode returns the first node from node from on (by index) with at least k GPUs
// without jobs, or -1.
func (c *Cluster) NextIdleNode(k, from int) int {
	if k > c.shape.GPUsPerNode {
		return -1
	}
	k = max(k, 0)
	set := c.idleAtLeast[k]
	for w := from >> 6; w < len(set); w++ {
		bits := set[w]
		if w == from>>6 {
			bits &^= 1<<(from&63) - 1
		}
		if bits != 0 {
			if n := w<<6 | trailingZeros(bits); n < c.shape.Nodes {
				return n
			}
			return -1
		}
	}
	return -1
}

// setLoad moves node n from workload bucket old to new.
func (c *Cluster) setLoad(n int, old, new int32) {
	setBit(c.byLoad[old], n, false)
	setBit(c.byLoad[new], n, true)
}

// Dense tells the cluster that most job IDs lie in [lo, lo+n), so that it can keep their
// allocations in a slice. It must be called while the cluster is empty.
func (c *Cluster) Dense(lo trace.JobID, n int) {
	c.lo, c.dense, c.relAt = lo, make([]*alloc, n), make([]int32, n)
}

func (c *Cluster) alloc(j trace.JobID) *alloc {
	if d := uint64(j - c.lo); d < uint64(len(c.dense)) {
		return c.dense[d]
	}
	return c.allocs[j]
}

func (c *Cluster) setAlloc(j trace.JobID, a *alloc) {
	switch d := uint64(j - c.lo); {
	case d < uint64(len(c.dense)):
		c.dense[d] = a
	case a == nil:
		delete(c.allocs, j)
	default:
		c.allocs[j] = a
	}
}

// Shape returns the cluster's shape.
func (c *Cluster) Shape() Shape { return c.shape }

// NumGPUs returns the number of GPUs.
func (c *Cluster) NumGPUs() int { return len(c.cnt) }

// ID returns the (node, index) name of flat GPU g.
func (c *Cluster) ID(g int) GPUID { return GPUID{g / c.shape.GPUsPerNode, g % c.shape.GPUsPerNode} }

// Node returns the node of flat GPU g.
func (c *Cluster) Node(g int) int { return g / c.shape.GPUsPerNode }

// Count returns the number of jobs on GPU g.
func (c *Cluster) Count(g int) int { return int(c.cnt[g]) }

// Jobs returns the jobs on GPU g, sorted by ID. The slice is only valid until the next change.
func (c *Cluster) Jobs(g int) []trace.JobID {
	k := g * c.shape.MaxShare
	return c.occ[k : k+int(c.cnt[g])]
}

// FreeMem returns the free memory of GPU g in bytes.
func (c *Cluster) FreeMem(g int) int64 { return c.free[g] }

// Workload returns the number of distinct jobs on a node (the authors' node.workload).
func (c *Cluster) Workload(node int) int { return int(c.nodeJobs[node]) }

// NodeIdle returns the number of GPUs without jobs on a node.
func (c *Cluster) NodeIdle(node int) int { return int(c.nodeIdle[node]) }

// NodeOpen returns the number of GPUs on a node that can take another job.
func (c *Cluster) NodeOpen(node int) int { return int(c.nodeOpen[node]) }

// Idle returns the number of GPUs without jobs.
func (c *Cluster) Idle() int { return c.idle }

// Open returns the number of GPUs that can take another job (fewer than MaxShare residents).
func (c *Cluster) Open() int { return c.open }

// Shared returns the number of GPUs holding two or more jobs.
func (c *Cluster) Shared() int { return c.shared }

// Sole returns, by tag, the number of GPUs that hold exactly one job, which carries the tag (see
// PlaceTagged; Place tags 0). The slice is only valid until the next change.
func (c *Cluster) Sole() []int32 { return c.sole }

// Version changes whenever the occupancy changes, so callers can cache derived views.
func (c *Cluster) Version() uint64 { return c.version }

// Placed returns the GPUs and per-GPU memory of job j. The slice is valid until j is released.
func (c *Cluster) Placed(j trace.JobID) (gpus []int, mem int64, ok bool) {
	a := c.alloc(j)
	if a == nil {
		return nil, 0, false
	}
	return a.gpus, a.mem, true
}

// CanPlace reports why job j could not be placed on gpus with mem bytes per GPU, or nil.
func (c *Cluster) CanPlace(j trace.JobID, gpus []int, mem int64) error {
	if c.alloc(j) != nil {
		return fmt.Errorf("job %d is already placed", j)
	}
	if len(gpus) == 0 {
		return fmt.Errorf("job %d: empty placement", j)
	}
	if mem < 0 {
		return fmt.Errorf("job %d: negative memory", j)
	}
	for i, g := range gpus {
		if g < 0 || g >= len(c.cnt) {
			return fmt.Errorf("job %d: GPU index %d out of range", j, g)
		}
		if slices.Contains(gpus[:i], g) {
			return fmt.Errorf("job %d: GPU %s listed twice", j, c.ID(g))
		}
		if int(c.cnt[g]) >= c.shape.MaxShare {
			return fmt.Errorf("job %d: GPU %s already holds %d jobs (max %d)", j, c.ID(g), c.cnt[g], c.shape.MaxShare)
		}
		if c.free[g] < mem {
			return fmt.Errorf("job %d: GPU %s has %d bytes free, needs %d", j, c.ID(g), c.free[g], mem)
		}
	}
	return nil
}

// Place puts job j on gpus, taking mem bytes on each. It returns an error, changing nothing,
// when the placement is illegal.
func (c *Cluster) Place(j trace.JobID, gpus []int, mem int64) error {
	return c.PlaceTagged(j, gpus, mem, 0)
}

// PlaceTagged is Place with a tag (≥ 0) for the job: Sole counts, by tag, the GPUs that hold
// one job only, so that placement can tell how many GPUs could take a partner of which kind
// without visiting them.
func (c *Cluster) PlaceTagged(j trace.JobID, gpus []int, mem int64, tag int32) error {
	if err := c.CanPlace(j, gpus, mem); err != nil {
		return err
	}
	if tag < 0 {
		return fmt.Errorf("job %d: negative tag", j)
	}
	for int(tag) >= len(c.sole) {
		c.sole = append(c.sole, 0)
	}
	// j goes back exactly where it was released since the innermost mark: the release is
	// forgotten, so that rolling back has nothing to do for j. Placements list GPUs in order,
	// as allocations keep them, so this needs no copy; an unordered list is sorted first.
	if back := c.undone(j, gpus, mem, tag); back != nil {
		c.place(j, back)
		return nil
	}
	var a *alloc
	if k := len(c.spare); k > 0 {
		a, c.spare = c.spare[k-1], c.spare[:k-1]
	} else {
		a = &alloc{}
	}
	a.gpus, a.mem, a.tag = append(a.gpus[:0], gpus...), mem, tag
	if !slices.IsSorted(a.gpus) {
		slices.Sort(a.gpus)
		if back := c.undone(j, a.gpus, mem, tag); back != nil {
			c.spare = append(c.spare, a)
			c.place(j, back)
			return nil
		}
	}
	c.place(j, a)
	if len(c.marks) > 0 {
		c.undo = append(c.undo, change{place: true, job: j})
	}
	return nil
}

// undoneWindow bounds how far back undone looks for a release.
const undoneWindow = 64

// undone finds, among the last changes since the innermost mark, a release of j from exactly
// gpus (in order), mem and tag, removes it from the undo log and returns its allocation; nil
// if there is none.
func (c *Cluster) undone(j trace.JobID, gpus []int, mem int64, tag int32) *alloc {
	if len(c.marks) == 0 || c.released[uint64(j)/64%16]&(1<<(uint64(j)%64)) == 0 {
		return nil
	}
	floor := max(c.marks[len(c.marks)-1], len(c.undo)-undoneWindow)
	if d := uint64(j - c.lo); d < uint64(len(c.relAt)) {
		// A release of j where the hint points is its last change: no later release of j can
		// have shifted there, and j is not placed (CanPlace), so none of its placements follows.
		if i := int(c.relAt[d]); i < len(c.undo) && c.undo[i].job == j && !c.undo[i].place {
			if i < floor {
				return nil
			}
			return c.undoAt(i, gpus, mem, tag)
		}
	}
	for i := len(c.undo) - 1; i >= floor; i-- {
		if c.undo[i].job == j {
			return c.undoAt(i, gpus, mem, tag)
		}
	}
	return nil
}

// undoAt removes the undo log's entry i, the last change of its job, if it releases exactly
// gpus (in order), mem and tag, and returns the allocation released; nil otherwise.
func (c *Cluster) undoAt(i int, gpus []int, mem int64, tag int32) *alloc {
	ch := c.undo[i]
	if ch.place || ch.a.mem != mem || ch.a.tag != tag || !slices.Equal(ch.a.gpus, gpus) {
		return nil
	}
	if n := len(c.undo) - 1; i == n {
		// The usual case (jobs go back in the reverse order of their release), without
		// Delete's generic copy and clear.
		c.undo[n] = change{}
		c.undo = c.undo[:n]
	} else {
		c.undo = slices.Delete(c.undo, i, i+1)
	}
	return ch.a
}

func (c *Cluster) place(j trace.JobID, a *alloc) {
	ms := c.shape.MaxShare
	lastNode := -1
	for _, g := range a.gpus {
		n := c.Node(g)
		if n != lastNode {
			c.nodeJobs[n]++
			c.setLoad(n, c.nodeJobs[n]-1, c.nodeJobs[n])
			lastNode = n
		}
		k := int(c.cnt[g])
		if at := g * ms; k == 0 {
			// An idle GPU (always, without sharing): no slot to move.
			c.occ[at], c.tags[at] = j, a.tag
			c.sole[a.tag]++
		} else {
			slots, tags := c.occ[at:at+k+1], c.tags[at:at+k+1]
			if k == 1 {
				c.sole[tags[0]]--
			}
			i := k
			for i > 0 && slots[i-1] > j {
				slots[i], tags[i] = slots[i-1], tags[i-1]
				i--
			}
			slots[i], tags[i] = j, a.tag
		}
		c.cnt[g]++
		c.free[g] -= a.mem
		if k == 0 {
			c.idle--
			setBit(c.idleAtLeast[c.nodeIdle[n]], n, false)
			c.nodeIdle[n]--
		}
		if k == 1 {
			c.shared++
		}
		if k+1 == ms {
			c.open--
			c.nodeOpen[n]--
			if c.nodeOpen[n] == 0 {
				setBit(c.openNodes, n, false)
			}
		}
	}
	c.setAlloc(j, a)
	c.version++
}

// Release removes job j from its GPUs.
func (c *Cluster) Release(j trace.JobID) error {
	a := c.alloc(j)
	if a == nil {
		return fmt.Errorf("job %d is not placed", j)
	}
	c.release(j, a)
	if len(c.marks) > 0 {
		c.undo = append(c.undo, change{place: false, job: j, a: a})
		c.released[uint64(j)/64%16] |= 1 << (uint64(j) % 64)
		if d := uint64(j - c.lo); d < uint64(len(c.relAt)) {
			c.relAt[d] = int32(len(c.undo) - 1)
		}
	} else {
		c.spare = append(c.spare, a) // nothing refers to it any more
	}
	return nil
}

func (c *Cluster) release(j trace.JobID, a *alloc) {
	ms := c.shape.MaxShare
	lastNode := -1
	for _, g := range a.gpus {
		n := c.Node(g)
		if n != lastNode {
			c.nodeJobs[n]--
			c.setLoad(n, c.nodeJobs[n]+1, c.nodeJobs[n])
			lastNode = n
		}
		k := int(c.cnt[g])
		if at := g * ms; k == 1 && c.occ[at] == j {
			// j alone (always, without sharing): the GPU empties, no slot to move.
			c.sole[a.tag]--
		} else {
			slots, tags := c.occ[at:at+k], c.tags[at:at+k]
			i := slices.Index(slots, j)
			if i < 0 {
				panic(fmt.Sprintf("cluster: job %d missing from GPU %s", j, c.ID(g)))
			}
			copy(slots[i:], slots[i+1:])
			copy(tags[i:], tags[i+1:])
			if k == 2 {
				c.sole[tags[0]]++
			}
		}
		c.cnt[g]--
		c.free[g] += a.mem
		if k == ms {
			c.open++
			c.nodeOpen[n]++
			setBit(c.openNodes, n, true)
		}
		if k == 1 {
			c.idle++
			c.nodeIdle[n]++
			setBit(c.idleAtLeast[c.nodeIdle[n]], n, true)
		}
		if k == 2 {
			c.shared--
		}
	}
	c.setAlloc(j, nil)
	c.version++
}

// Mark starts recording changes and returns a checkpoint for Rollback. Marks nest.
func (c *Cluster) Mark() int {
	c.marks = append(c.marks, len(c.undo))
	return len(c.undo)
}

// Rollback undoes every change made since the checkpoint and ends that mark.
func (c *Cluster) Rollback(mark int) {
	for i := len(c.undo) - 1; i >= mark; i-- {
		ch := c.undo[i]
		if ch.place {
			a := c.alloc(ch.job)
			c.release(ch.job, a)
			c.spare = append(c.spare, a) // nothing else refers to a tentative placement
		} else {
			c.place(ch.job, ch.a)
		}
	}
	c.undo = c.undo[:mark]
	c.marks = c.marks[:len(c.marks)-1]
	if mark == 0 {
		c.released = [16]uint64{}
	}
}

// Depth returns the number of open marks.
func (c *Cluster) Depth() int { return len(c.marks) }

// PlacedAs reports whether job j is placed on exactly gpus (in any order) with mem bytes per
// GPU and the tag.
func (c *Cluster) PlacedAs(j trace.JobID, gpus []int, mem int64, tag int32) bool {
	a := c.alloc(j)
	if a == nil || a.mem != mem || a.tag != tag || len(a.gpus) != len(gpus) {
		return false
	}
	for i, g := range gpus {
		if _, found := slices.BinarySearch(a.gpus, g); !found || slices.Contains(gpus[:i], g) {
			return false
		}
	}
	return true
}

// EachChange calls fn for each change recorded since mark, oldest first, with its job and
// whether the job's placement now is what it was just before that change (for the first change
// of a job, what it was at the mark). A release undone by placing the job back where it was is
// not recorded (see PlaceTagged).
func (c *Cluster) EachChange(mark int, fn func(j trace.JobID, unchanged bool)) {
	for _, ch := range c.undo[mark:] {
		now := c.alloc(ch.job)
		if ch.place { // not placed before
			fn(ch.job, now == nil)
			continue
		}
		fn(ch.job, now != nil && now.mem == ch.a.mem && now.tag == ch.a.tag && slices.Equal(now.gpus, ch.a.gpus))
	}
}

// Commit keeps the changes made since the checkpoint and ends that mark.
func (c *Cluster) Commit(mark int) {
	c.marks = c.marks[:len(c.marks)-1]
	if len(c.marks) == 0 {
		for _, ch := range c.undo {
			if !ch.place {
				c.spare = append(c.spare, ch.a) // released for good: nothing refers to it
			}
		}
		c.undo = c.undo[:0]
		c.released = [16]uint64{}
	}
}
