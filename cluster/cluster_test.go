package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/trace"
)

func shape(nodes, gpus int) Shape {
	return Shape{Nodes: nodes, GPUsPerNode: gpus, GPUMemBytes: 10 * GiB, MaxShare: 2}
}

func nodeOrder(c *Cluster, set NodeSet) []int {
	var out []int
	c.EachNode(set, func(n int) bool { out = append(out, n); return true })
	return out
}

func TestPlaceReleaseCounters(t *testing.T) {
	t.Parallel()
	c := New(shape(2, 2))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Place(7, []int{1, 0}, 4*GiB))
	must(c.Place(3, []int{0}, 4*GiB))
	if c.Idle() != 2 || c.Open() != 3 || c.Shared() != 1 || c.Workload(0) != 2 || c.Workload(1) != 0 {
		t.Fatalf("idle %d open %d shared %d workloads %d %d", c.Idle(), c.Open(), c.Shared(), c.Workload(0), c.Workload(1))
	}
	if got := c.Jobs(0); !slices.Equal(got, []trace.JobID{3, 7}) {
		t.Errorf("jobs on GPU 0: %v, want sorted [3 7]", got)
	}
	if c.FreeMem(0) != 2*GiB {
		t.Errorf("free memory %d", c.FreeMem(0))
	}
	for _, tc := range []struct {
		gpus []int
		mem  int64
		want string
	}{
		{[]int{0}, 1, "already holds 2 jobs"},
		{[]int{1}, 7 * GiB, "bytes free"},
		{[]int{2, 2}, 1, "listed twice"},
		{[]int{9}, 1, "out of range"},
	} {
		if err := c.Place(99, tc.gpus, tc.mem); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Place(%v, %d) = %v, want %q", tc.gpus, tc.mem, err, tc.want)
		}
	}
	must(c.Release(7))
	must(c.Release(3))
	if c.Idle() != 4 || c.Open() != 4 || c.Shared() != 0 || c.Workload(0) != 0 {
		t.Errorf("after release: idle %d open %d shared %d", c.Idle(), c.Open(), c.Shared())
	}
	if err := c.Release(3); err == nil {
		t.Error("double release succeeded")
	}
}

// TestCanPlaceTwice checks that CanPlace finds a GPU listed twice in any order, ascending lists
// included, and nothing else in lists without one.
func TestCanPlaceTwice(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	c := New(shape(4, 8))
	for range 20_000 {
		gpus := rng.Perm(32)[:1+rng.IntN(12)]
		if rng.IntN(2) == 0 {
			slices.Sort(gpus)
		}
		twice := rng.IntN(2) == 0 && len(gpus) > 1
		if twice {
			i, k := rng.IntN(len(gpus)), rng.IntN(len(gpus))
			if i == k {
				k = (k + 1) % len(gpus)
			}
			gpus[k] = gpus[i]
		}
		err := c.CanPlace(1, gpus, GiB)
		if got := err != nil && strings.Contains(err.Error(), "listed twice"); got != twice || !twice && err != nil {
			t.Fatalf("CanPlace(%v) = %v, twice %v", gpus, err, twice)
		}
	}
}

func TestEachNodeOrder(t *testing.T) {
	t.Parallel()
	c := New(shape(4, 2))
	c.Place(1, []int{2}, GiB)    // node 1: one job
	c.Place(2, []int{0, 1}, GiB) // node 0: one job
	c.Place(3, []int{1}, GiB)    // node 0: two jobs, GPU 1 full
	c.Place(4, []int{6, 7}, GiB) // node 3: one job, no idle GPU
	if got, want := nodeOrder(c, WithOpen), []int{2, 1, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("open nodes by workload: %v, want %v", got, want)
	}
	if got, want := nodeOrder(c, WithIdle), []int{2, 1}; !slices.Equal(got, want) {
		t.Errorf("idle nodes by workload: %v, want %v", got, want)
	}
}

func TestRollback(t *testing.T) {
	t.Parallel()
	c := New(shape(2, 2))
	c.Place(1, []int{0, 1}, GiB)
	before := snapshot(c)
	m := c.Mark()
	c.Release(1)
	c.Place(2, []int{1, 2}, 3*GiB)
	c.Place(3, []int{1}, GiB)
	c.Rollback(m)
	if after := snapshot(c); after != before {
		t.Errorf("rollback:\n%s\nwant\n%s", after, before)
	}
	if got := nodeOrder(c, WithIdle); !slices.Equal(got, []int{1}) {
		t.Errorf("idle nodes after rollback %v", got)
	}
}

func snapshot(c *Cluster) string {
	var b strings.Builder
	for g := range c.NumGPUs() {
		b.WriteString(c.ID(g).String())
		for _, j := range c.Jobs(g) {
			b.WriteString(" ")
			b.WriteString(string(rune('0' + j)))
		}
		b.WriteString("|")
	}
	return b.String()
}

func TestParseShapeAndSpec(t *testing.T) {
	t.Parallel()
	if s, err := ParseShape("8x8"); err != nil || s.GPUs() != 64 {
		t.Errorf("ParseShape(8x8) = %v, %v", s, err)
	}
	for _, bad := range []string{"", "8", "0x8", "8x-1", "axb"} {
		if _, err := ParseShape(bad); err == nil {
			t.Errorf("ParseShape(%q) succeeded", bad)
		}
	}
	s, err := LoadSpec(strings.NewReader(specHeader+"\n1,4,8,128,49140\n"), "n4g8.csv")
	if err != nil || s.Nodes != 4 || s.GPUsPerNode != 8 || s.GPUMemBytes != 49140*MiB {
		t.Errorf("LoadSpec = %+v, %v", s, err)
	}
	if _, err := LoadSpec(strings.NewReader(specHeader+"\n1,4,x,128,49140\n"), "bad.csv"); err == nil || !strings.Contains(err.Error(), "bad.csv:2: num_gpu_p_node") {
		t.Errorf("LoadSpec bad = %v", err)
	}
}

// TestShapeBounds: every shape a user can type is either within the documented bounds or a
// one-line error, never an overflowed size or an allocation that exhausts memory.
func TestShapeBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"8x8", ""},
		{"1024x1024", ""},
		{"1x1024", ""},
		{"1048576x1", ""},
		{"2305843009213693953x8", "more than the maximum of 1048576 GPUs"},
		{"100000x100000", "100000 GPUs per node exceeds the maximum of 1024"},
		{"4294967297x1024", "more than the maximum of 1048576 GPUs"},
		{"9223372036854775807x1", "more than the maximum"},
		{"99999999999999999999x1", "want NODESxGPUS"},
		{"1025x1024", "more than the maximum"},
		{"0x8", "want NODESxGPUS"},
		{"8x-1", "want NODESxGPUS"},
	} {
		s, err := ParseShape(c.in)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.in, err)
				continue
			}
			s.GPUMemBytes = GiB
			if err := s.Validate(); err != nil {
				t.Errorf("%s: Validate: %v", c.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line containing %q", c.in, err, c.want)
		}
	}
	// Shapes built in code are checked by Validate, which New calls.
	for _, s := range []Shape{
		{Nodes: 1 << 40, GPUsPerNode: 1 << 30, GPUMemBytes: GiB, MaxShare: 2},
		{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: GiB, MaxShare: 1 << 40},
		{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 1 << 62, MaxShare: 2},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	long := strings.Repeat("9", 1<<20) + "x8"
	if _, err := ParseShape(long); err == nil || len(err.Error()) > 400 {
		t.Errorf("a 1 MB shape is echoed in full: %d bytes", len(err.Error()))
	}
}

func TestSpecBounds(t *testing.T) {
	t.Parallel()
	for _, row := range []string{
		"4294967296,4294967296,8,32,16000",
		"1,1,100000,32,16000",
		"1,1,8,32,9223372036854775807",
		"2048,1024,8,32,16000",
	} {
		_, err := LoadSpec(strings.NewReader(specHeader+"\n"+row+"\n"), "spec.csv")
		if err == nil || !strings.Contains(err.Error(), "spec.csv:2:") {
			t.Errorf("%s: got %v, want a positioned error", row, err)
		}
	}
}

// TestNextIdleNode checks the per-count node sets against NodeIdle, and the sole-resident counts
// against the residents' tags, after random placements, releases and rollbacks on 70 nodes (two
// bitset words).
func TestNextIdleNode(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	c := New(shape(70, 4))
	c.Dense(0, 1500)
	var placed []trace.JobID
	tagOf := map[trace.JobID]int32{}
	check := func(step int) {
		want := make([]int32, 4)
		for g := range c.NumGPUs() {
			if jobs := c.Jobs(g); len(jobs) == 1 {
				want[tagOf[jobs[0]]]++
			}
		}
		got := append(slices.Clone(c.Sole()), make([]int32, 4)...)[:4]
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: Sole %v, want %v", step, got, want)
		}
		for k := 0; k <= 5; k++ {
			for from := 0; from <= 70; from += 1 + rng.IntN(9) {
				want := -1
				for n := from; n < 70; n++ {
					if c.NodeIdle(n) >= k {
						want = n
						break
					}
				}
				if got := c.NextIdleNode(k, from); got != want {
					t.Fatalf("step %d: NextIdleNode(%d, %d) = %d, want %d", step, k, from, got, want)
				}
			}
		}
	}
	for step := range 3000 {
		switch {
		case len(placed) > 0 && rng.IntN(3) == 0:
			k := rng.IntN(len(placed))
			if err := c.Release(placed[k]); err != nil {
				t.Fatal(err)
			}
			placed = slices.Delete(placed, k, k+1)
		case rng.IntN(10) == 0:
			m := c.Mark()
			id := trace.JobID(100000 + step)
			tagOf[id] = int32(rng.IntN(4))
			c.PlaceTagged(id, []int{rng.IntN(280)}, GiB, tagOf[id])
			if len(placed) > 0 {
				c.Release(placed[rng.IntN(len(placed))])
			}
			c.Rollback(m)
		default:
			id := trace.JobID(step)
			tagOf[id] = int32(rng.IntN(4))
			if c.PlaceTagged(id, []int{rng.IntN(280), rng.IntN(280)}, GiB, tagOf[id]) == nil {
				placed = append(placed, id)
			}
		}
		check(step)
	}
}

// TestRollbackPlacedBack checks that a job released and placed back where it was since the
// innermost mark leaves nothing to undo, under nested marks (some rolled back in between) and
// random changes around it.
func TestRollbackPlacedBack(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	c := New(shape(3, 4))
	c.Dense(2, 4) // jobs 2-5 in the slice, the others in the map
	var placed []trace.JobID
	for id := range trace.JobID(8) {
		if c.PlaceTagged(id, []int{rng.IntN(12)}, GiB, int32(id%3)) == nil {
			placed = append(placed, id)
		}
	}
	for step := range 2000 {
		before, sole, idle := snapshot(c), slices.Clone(c.Sole()), c.Idle()
		outer := c.Mark()
		for range 1 + rng.IntN(4) {
			j := placed[rng.IntN(len(placed))]
			gpus, mem, ok := c.Placed(j)
			if !ok {
				continue
			}
			gpus = slices.Clone(gpus)
			inner := c.Mark()
			if err := c.Release(j); err != nil {
				t.Fatal(err)
			}
			c.Commit(inner)
			if rng.IntN(2) == 0 {
				c.PlaceTagged(trace.JobID(1000+step), []int{rng.IntN(12)}, GiB, 1)
			}
			if rng.IntN(2) == 0 {
				// A mark rolled back above the release keeps it findable (undone's filter).
				c.Rollback(c.Mark())
			}
			n := len(c.undo)
			if err := c.PlaceTagged(j, gpus, mem, int32(j%3)); err != nil {
				continue // its GPU filled up meanwhile
			}
			if len(c.undo) != n-1 {
				t.Fatalf("step %d: placing job %d back left %d changes, want %d", step, j, len(c.undo), n-1)
			}
		}
		c.Rollback(outer)
		if after := snapshot(c); after != before {
			t.Fatalf("step %d: rollback:\n%s\nwant\n%s", step, after, before)
		}
		if got := c.Sole()[:len(sole)]; !slices.Equal(got, sole) || c.Idle() != idle {
			t.Fatalf("step %d: after rollback sole %v idle %d, want %v %d", step, got, c.Idle(), sole, idle)
		}
	}
}

// TestPlacedBackOutOfOrder places released jobs back in the order they were released, so that
// each removal from the undo log shifts the releases after it (undone's hints go stale), and
// checks that a release further back than undone looks is left in the log.
func TestPlacedBackOutOfOrder(t *testing.T) {
	t.Parallel()
	c := New(shape(2, 4))
	c.Dense(2, 4) // jobs 2-5 in the slice, 7 in the map
	jobs := []trace.JobID{2, 3, 7, 4}
	for i, j := range jobs {
		if err := c.PlaceTagged(j, []int{i}, GiB, 1); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(c)
	mark := c.Mark()
	for _, j := range jobs {
		if err := c.Release(j); err != nil {
			t.Fatal(err)
		}
	}
	for i, j := range jobs {
		if err := c.PlaceTagged(j, []int{i}, GiB, 1); err != nil {
			t.Fatal(err)
		}
		if want := len(jobs) - 1 - i; len(c.undo) != want {
			t.Fatalf("job %d placed back: %d changes left, want %d", j, len(c.undo), want)
		}
	}
	// A release followed by more changes than undone looks back at: placing the job back is a
	// change of its own.
	if err := c.Release(2); err != nil {
		t.Fatal(err)
	}
	for k := range undoneWindow / 2 {
		j := trace.JobID(100 + k)
		if err := c.PlaceTagged(j, []int{7}, GiB, 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Release(j); err != nil {
			t.Fatal(err)
		}
	}
	n := len(c.undo)
	if err := c.PlaceTagged(2, []int{0}, GiB, 1); err != nil {
		t.Fatal(err)
	}
	if len(c.undo) != n+1 {
		t.Fatalf("job 2 placed back past the window: %d changes, want %d", len(c.undo), n+1)
	}
	c.Rollback(mark)
	if after := snapshot(c); after != before {
		t.Fatalf("rollback:\n%s\nwant\n%s", after, before)
	}
}

// TestPlacedBackUnordered places a released job back on its GPUs listed in another order: the
// release is still found and forgotten, and the allocation keeps its GPUs in order.
func TestPlacedBackUnordered(t *testing.T) {
	t.Parallel()
	c := New(shape(2, 4))
	c.Dense(2, 4)
	if err := c.PlaceTagged(2, []int{1, 6, 3}, GiB, 1); err != nil {
		t.Fatal(err)
	}
	before := snapshot(c)
	mark := c.Mark()
	if err := c.Release(2); err != nil {
		t.Fatal(err)
	}
	if err := c.PlaceTagged(2, []int{6, 3, 1}, GiB, 1); err != nil {
		t.Fatal(err)
	}
	if len(c.undo) != 0 {
		t.Fatalf("job 2 placed back unordered: %d changes left, want 0", len(c.undo))
	}
	if gpus, _, _ := c.Placed(2); !slices.Equal(gpus, []int{1, 3, 6}) {
		t.Fatalf("job 2 on %v, want [1 3 6]", gpus)
	}
	c.Rollback(mark)
	if after := snapshot(c); after != before {
		t.Fatalf("rollback:\n%s\nwant\n%s", after, before)
	}
}

// TestEachChange checks what EachChange reports against placements compared before and after
// random changes under a mark: a job's first reported change is unchanged exactly when the job
// sits as it did at the mark. It also checks PlacedAs and Depth.
func TestEachChange(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	c := New(shape(2, 4))
	where := func(j trace.JobID) string {
		gpus, mem, ok := c.Placed(j)
		if !ok {
			return "-"
		}
		return fmt.Sprint(gpus, mem)
	}
	for step := range 500 {
		before := map[trace.JobID]string{}
		for j := range trace.JobID(10) {
			before[j] = where(j)
		}
		mark := c.Mark()
		if c.Depth() != 1 {
			t.Fatalf("step %d: depth %d under one mark", step, c.Depth())
		}
		for range 1 + rng.IntN(6) {
			j := trace.JobID(rng.IntN(10))
			if _, _, ok := c.Placed(j); ok {
				c.Release(j)
			} else {
				c.PlaceTagged(j, []int{rng.IntN(8)}, GiB*int64(1+rng.IntN(2)), 0)
			}
		}
		seen := map[trace.JobID]bool{}
		c.EachChange(mark, func(j trace.JobID, unchanged bool) {
			if seen[j] {
				return
			}
			seen[j] = true
			if same := where(j) == before[j]; unchanged != same {
				t.Fatalf("step %d: job %d reported unchanged=%v, placed %s, at the mark %s", step, j, unchanged, where(j), before[j])
			}
		})
		for j := range trace.JobID(10) {
			if !seen[j] && where(j) != before[j] {
				t.Fatalf("step %d: job %d moved without a reported change", step, j)
			}
			if gpus, mem, ok := c.Placed(j); ok {
				if !c.PlacedAs(j, gpus, mem, 0) || c.PlacedAs(j, gpus, mem+1, 0) || c.PlacedAs(j, gpus, mem, 1) ||
					c.PlacedAs(j, append(slices.Clone(gpus), gpus[0]), mem, 0) {
					t.Fatalf("step %d: PlacedAs of job %d on %v", step, j, gpus)
				}
			} else if c.PlacedAs(j, []int{0}, GiB, 0) {
				t.Fatalf("step %d: PlacedAs of job %d, which is not placed", step, j)
			}
		}
		if rng.IntN(2) == 0 {
			c.Commit(mark)
		} else {
			c.Rollback(mark)
		}
	}
}
