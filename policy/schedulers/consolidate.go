package schedulers

import (
	"cmp"
	"slices"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// consolidated is the authors' consolidating placement (docs/paper.md §5.6): the whole job inside
// one node, trying the nodes best fit first (fewest idle GPUs left after the job, then most idle
// GPUs, then fewest resident jobs), each with its idle GPUs first and then the GPUs of jobs the
// profile pairs with it; with check, those jobs must also pass the share check, and the GPUs
// whose jobs have the smallest t_con go first. It finds nothing when no single node works.
func consolidated(c *policy.Call, j *policy.Job, opt int, check bool) (sharing, error) {
	cl := c.Cluster
	sh := cl.Shape()
	need := j.GPUs
	if need > sh.GPUsPerNode || cl.Open() < need {
		return sharing{}, nil
	}
	type node struct{ n, fit, idle, work int }
	var nodes []node
	for n := range sh.Nodes {
		if cl.NodeOpen(n) < need {
			continue
		}
		idle := cl.NodeIdle(n)
		fit := sh.GPUsPerNode
		if idle >= need {
			fit = idle - need
		}
		nodes = append(nodes, node{n, fit, idle, cl.Workload(n)})
	}
	slices.SortStableFunc(nodes, func(a, b node) int {
		return cmp.Or(cmp.Compare(a.fit, b.fit), cmp.Compare(b.idle, a.idle), cmp.Compare(a.work, b.work))
	})
	o := j.Options[opt]
	// A job stopped earlier in this call still runs on paper: its work counts at now.
	rem := j.RemIters(c.Now)
	etcA, etcWait := rem*o.Excl.Seconds(), rem*j.Options[j.Fast].Excl.Seconds()
	for _, k := range nodes {
		var idle, busy []int
		for g := k.n * sh.GPUsPerNode; g < (k.n+1)*sh.GPUsPerNode; g++ {
			switch {
			case cl.Count(g) >= sh.MaxShare || cl.FreeMem(g) < o.Mem:
			case cl.Count(g) == 0:
				idle = append(idle, g)
			default:
				busy = append(busy, g)
			}
		}
		if len(idle) >= need {
			return sharing{gpus: idle[:need]}, nil
		}
		if len(idle)+len(busy) < need {
			continue
		}
		type gpu struct {
			g    int
			tCon float64
			ids  []trace.JobID
		}
		var usable []gpu
		for _, g := range busy {
			u := gpu{g: g, ids: slices.Clone(cl.Jobs(g))}
			ok := true
			for _, id := range u.ids {
				r, err := c.Resident(id)
				if err != nil {
					return sharing{}, err
				}
				xiA, okA := c.Env.Xi(j, opt, r.Job, r.Opt)
				xiB, okB := c.Env.Xi(r.Job, r.Opt, j, opt)
				if !okA || !okB {
					ok = false
					break
				}
				if check {
					share, tCon, _ := ShareAt(etcA, etcWait, r.Rem, xiA, xiB)
					ok = ok && share
					u.tCon = max(u.tCon, tCon)
				}
			}
			if ok {
				usable = append(usable, u)
			}
		}
		if len(idle)+len(usable) < need {
			continue
		}
		slices.SortStableFunc(usable, func(a, b gpu) int { return cmp.Compare(a.tCon, b.tCon) })
		s := sharing{gpus: idle}
		for _, u := range usable[:need-len(idle)] {
			s.gpus = append(s.gpus, u.g)
			s.partners = appendNew(s.partners, u.ids...)
			s.score = max(s.score, u.tCon)
		}
		return s, nil
	}
	return sharing{}, nil
}
