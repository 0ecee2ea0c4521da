package schedulers

import (
	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// candidates returns, in the order of the authors' scan (docs/paper.md §4.2 steps 1–2: nodes by
// number of resident jobs ascending, ties by node index, then GPUs by index), the idle GPUs and
// the GPUs that hold jobs but have room for one more using mem bytes.
func candidates(c *policy.Call, mem int64) (idle, shared []int) {
	cl := c.Cluster
	sh := cl.Shape()
	cl.EachNode(cluster.WithOpen, func(n int) bool {
		for g := n * sh.GPUsPerNode; g < (n+1)*sh.GPUsPerNode; g++ {
			switch k := cl.Count(g); {
			case k >= sh.MaxShare || cl.FreeMem(g) < mem:
			case k == 0:
				idle = append(idle, g)
			default:
				shared = append(shared, g)
			}
		}
		return true
	})
	return idle, shared
}

// idleGPUs returns the first j.GPUs idle GPUs of the scan, or nil if there are fewer.
func idleGPUs(c *policy.Call, j *policy.Job, opt int) []int {
	if c.Cluster.Idle() < j.GPUs {
		return nil
	}
	idle, _ := candidates(c, j.Options[opt].Mem)
	if len(idle) < j.GPUs {
		return nil
	}
	return idle[:j.GPUs]
}

// sharing is a placement found on shared GPUs: the GPUs, the jobs on them the job shares with,
// the placement's score (the largest t_con of those partners, when share-checked) and, with
// Env.Explain, why.
type sharing struct {
	gpus     []int
	partners []trace.JobID
	score    float64
	why      string
}

// appendNew appends the IDs that dst does not hold yet.
func appendNew(dst []trace.JobID, ids ...trace.JobID) []trace.JobID {
	for _, id := range ids {
		if !containsID(dst, id) {
			dst = append(dst, id)
		}
	}
	return dst
}

func containsID(ids []trace.JobID, id trace.JobID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
