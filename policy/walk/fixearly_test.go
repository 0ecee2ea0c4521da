package walk

import (
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// earlyCluster is the tests' cluster below: 3 nodes of 4 GPUs, no sharing.
func earlyCluster() *cluster.Cluster {
	return cluster.New(cluster.Shape{Nodes: 3, GPUsPerNode: 4, GPUMemBytes: cluster.GiB, MaxShare: 1})
}

// earlyJob makes job id (its index too) of gpus GPUs with 1000 iterations left, running on the
// GPUs on of cl if any are given, else waiting.
func earlyJob(t *testing.T, cl *cluster.Cluster, id, gpus int, on ...int) *policy.Job {
	t.Helper()
	j := &policy.Job{Job: trace.Job{ID: trace.JobID(id), GPUs: gpus}, Idx: int32(id), On: on, Running: on != nil}
	j.P.Rem = 1000
	if on != nil {
		if err := cl.Place(j.ID, on, 1); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// earlyWalk returns a walk of fifo's kind after a settled one, at a call where done (not on cl)
// finished: the other jobs (all keyed alike, so ranked by ID) run or wait, and arrived of them
// had arrived by the last call.
func earlyWalk(cl *cluster.Cluster, jobs []*policy.Job, done *policy.Job, arrived int) (*greedy, *policy.State) {
	var pending policy.Queue
	g := &greedy{bySize: true, exclusive: true, preempt: true, timeless: true, stats: &Stats{}}
	g.rs.fixed = true
	g.rs.grow(len(jobs))
	for _, j := range jobs {
		switch {
		case j == done:
		case j.Running:
			g.rs.put(entry(j, policy.Key{}, 0))
		default:
			pending.Insert(j)
		}
	}
	s := &policy.State{Cluster: cl, Pending: &pending, Jobs: jobs, Finished: []trace.JobID{done.ID},
		Lookup: func(id trace.JobID) *policy.Job { return jobs[id] }}
	g.s, g.arrived = s, arrived
	return g, s
}

// leftInPlace reports whether running job j lies in the range fixEarly leaves in place.
func leftInPlace(g *greedy, j *policy.Job) bool {
	if !g.early || g.rs.where[j.Idx] < 0 {
		return false
	}
	p := g.rs.pos(&g.rs.ent[g.rs.where[j.Idx]])
	return g.earlyLo <= p && p < g.earlyHi
}

// TestFixEarlyStops pins where fixEarly's run of jobs left in place ends, on a 3×4 cluster
// where a job of the packing (on node 0) sits below the first waiting job W (a whole node) and
// a job that finished freed a GPU on node 1: a waiting job ranked between them that the last
// walk never tried (an arrival), or one that could use the freed GPU, ends the run before it.
func TestFixEarlyStops(t *testing.T) {
	for _, c := range []struct {
		name    string
		between int // GPUs of the waiting job ranked between W and the packed job
		arrived int // jobs of State.Jobs that had arrived by the last call
		want    int
	}{
		{"tried, cannot use the freed GPU", 4, 5, 1},
		{"arrival", 4, 2, 0},
		{"could use the freed GPU", 1, 5, 0},
	} {
		cl := earlyCluster()
		base := earlyJob(t, cl, 0, 3, 5, 6, 7) // ranked above W, on node 1
		w := earlyJob(t, cl, 1, 4)
		between := earlyJob(t, cl, 2, c.between)
		packed := earlyJob(t, cl, 3, 1, 0) // node 0
		done := earlyJob(t, cl, 4, 1)
		done.On = []int{4} // finished on node 1: GPU 4 is idle now
		g, s := earlyWalk(cl, []*policy.Job{base, w, between, packed, done}, done, c.arrived)
		if got := g.fixEarly(s); got != c.want {
			t.Errorf("%s: fixEarly left %d jobs in place, want %d", c.name, got, c.want)
		}
		if got := leftInPlace(g, packed); got != (c.want == 1) {
			t.Errorf("%s: packed job in fixEarly's range = %v", c.name, got)
		}
	}
}

// TestFixEarlyRange pins the range of the running set's order that fixEarly leaves in place when
// it stops between two jobs of the packing, both on node 0 below W (a whole node): a waiting job
// ranked between them that could use the GPU a finished job freed on node 1 ends the range above
// the lower one; one that could not lets the range take both.
func TestFixEarlyRange(t *testing.T) {
	for _, c := range []struct {
		name   string
		qGPUs  int // GPUs of the waiting job ranked between the two packed jobs
		marked int
		lo     int // the range's start; it ends at 2, below W
	}{
		{"stops at the waiting job", 1, 1, 1},
		{"runs to the bottom", 4, 2, 0},
	} {
		cl := earlyCluster()
		base := earlyJob(t, cl, 0, 3, 5, 6, 7) // ranked above W, on node 1
		w := earlyJob(t, cl, 1, 4)
		p1 := earlyJob(t, cl, 2, 1, 0)
		q := earlyJob(t, cl, 3, c.qGPUs)
		p2 := earlyJob(t, cl, 4, 1, 1)
		done := earlyJob(t, cl, 5, 1)
		done.On = []int{4} // finished on node 1: GPU 4 is idle now
		jobs := []*policy.Job{base, w, p1, q, p2, done}
		g, s := earlyWalk(cl, jobs, done, len(jobs))
		if got := g.fixEarly(s); got != c.marked {
			t.Errorf("%s: fixEarly left %d jobs in place, want %d", c.name, got, c.marked)
		}
		if !g.early || g.earlyLo != c.lo || g.earlyHi != 2 {
			t.Errorf("%s: range [%d, %d) (early %v), want [%d, 2)", c.name, g.earlyLo, g.earlyHi, g.early, c.lo)
		}
		if !leftInPlace(g, p1) || leftInPlace(g, p2) != (c.lo == 0) {
			t.Errorf("%s: in the range: p1 %v, p2 %v", c.name, leftInPlace(g, p1), leftInPlace(g, p2))
		}
	}
}
