package schedulers

import "github.com/sharebench/sharebench/policy"

// YARN is the authors' exclusive placement for the non-sharing baselines (docs/paper.md §5.9). A
// job of at most a node's GPUs goes to the first node, by index, with that many idle GPUs, on its
// lowest idle GPUs. A larger job takes the first whole idle nodes it needs, then the rest of its
// GPUs on the first other node with enough idle ones. Jobs run at their fastest sub-batch.
type YARN struct{}

// Place places j with the YARN rule.
func (YARN) Place(c *policy.Call, j *policy.Job) (policy.Placement, bool, error) {
	cl := c.Cluster
	sh := cl.Shape()
	per := sh.GPUsPerNode
	idle := func(node, n int) []int { // the lowest n idle GPUs of node
		var gpus []int
		for g := node * per; g < (node+1)*per && len(gpus) < n; g++ {
			if cl.Count(g) == 0 {
				gpus = append(gpus, g)
			}
		}
		return gpus
	}
	var gpus []int
	if j.GPUs <= per {
		for n := range sh.Nodes {
			if cl.NodeIdle(n) >= j.GPUs {
				gpus = idle(n, j.GPUs)
				break
			}
		}
	} else {
		whole, rest := j.GPUs/per, j.GPUs%per
		taken := make([]bool, sh.Nodes)
		for n := 0; n < sh.Nodes && whole > 0; n++ {
			if cl.NodeIdle(n) == per {
				gpus = append(gpus, idle(n, per)...)
				taken[n] = true
				whole--
			}
		}
		if whole > 0 {
			return policy.Placement{}, false, nil
		}
		for n := 0; n < sh.Nodes && rest > 0; n++ {
			if !taken[n] && cl.NodeIdle(n) >= rest {
				gpus = append(gpus, idle(n, rest)...)
				rest = 0
			}
		}
		if rest > 0 {
			return policy.Placement{}, false, nil
		}
	}
	if gpus == nil {
		return policy.Placement{}, false, nil
	}
	pl := policy.Placement{GPUs: gpus, Opt: j.Fast}
	if c.Env.Explain {
		pl.Reason = "exclusive (yarn)"
	}
	return pl, true, nil
}
