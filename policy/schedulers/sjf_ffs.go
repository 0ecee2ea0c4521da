package schedulers

import (
	"fmt"

	"github.com/sharebench/sharebench/policy"
)

// SJFFFSArgs are sjf-ffs's arguments.
type SJFFFSArgs struct {
	Preempt     bool   `json:"preempt"`
	Victims     string `json:"victims"`
	Consolidate bool   `json:"consolidate"`
	MPS         bool   `json:"mps"`
}

// SJFFFS is SJF with aggressive first-fit sharing, the paper's SJF-FFS (the authors'
// sjf-ffs-no-preempt, merge_alloc_res; docs/paper.md §5.5):
//   - order: SJF (RemainingKey, RunningKey);
//   - placement: idle GPUs first, then any GPU with room whose jobs the profile pairs with the
//     job, with no benefit check (FirstFit); a pair the profile lacks is never shared;
//   - sub-batch: the largest one that fits;
//   - victims: none unless Preempt (then as sjf).
func SJFFFS(a SJFFFSArgs) (*policy.Greedy, error) {
	if err := policy.CheckVictims(a.Victims); err != nil {
		return nil, err
	}
	return &policy.Greedy{
		Name:    KeySJFFFS,
		Key:     RemainingKey,
		Rank:    RunningKey,
		Order:   policy.OrderRemaining,
		Place:   FirstFit{Consolidate: a.Consolidate},
		Preempt: a.Preempt,
		Victims: a.Victims,
		Mode:    mode(a.MPS),
	}, nil
}

// FirstFit is SJF-FFS's placement.
type FirstFit struct {
	Consolidate bool // try one node first (the authors' consolidating variant)
}

// Place places j at its largest sub-batch that fits anywhere.
func (f FirstFit) Place(c *policy.Call, j *policy.Job) (policy.Placement, bool, error) {
	for opt := range j.Options {
		var s sharing
		var err error
		if f.Consolidate {
			s, err = consolidated(c, j, opt, false)
		}
		if s.gpus == nil && err == nil {
			s, err = firstFit(c, j, opt)
		}
		if err != nil {
			return policy.Placement{}, false, err
		}
		if s.gpus != nil {
			pl := policy.Placement{GPUs: s.gpus, Opt: opt, Partners: s.partners}
			if c.Env.Explain {
				pl.Reason = "first fit"
				if len(s.partners) > 0 {
					pl.Reason = fmt.Sprintf("first fit, sharing with %v", s.partners)
				}
			}
			return pl, true, nil
		}
	}
	return policy.Placement{}, false, nil
}

// firstFit is the authors' merge placement of j at option opt: the idle GPUs of the scan if
// there are enough, else they and then the GPUs with room, in scan order, whose jobs the profile
// pairs with j both ways.
func firstFit(c *policy.Call, j *policy.Job, opt int) (sharing, error) {
	cl := c.Cluster
	need := j.GPUs
	if cl.Open() < need {
		return sharing{}, nil
	}
	if gpus := idleGPUs(c, j, opt); gpus != nil {
		return sharing{gpus: gpus}, nil
	}
	idle, shared := candidates(c, j.Options[opt].Mem)
	if len(idle)+len(shared) < need {
		return sharing{}, nil
	}
	s := sharing{gpus: idle}
	for _, g := range shared {
		paired := true
		for _, id := range cl.Jobs(g) {
			r, err := c.Resident(id)
			if err != nil {
				return sharing{}, err
			}
			if _, ok := c.Env.Xi(j, opt, r.Job, r.Opt); !ok {
				paired = false
				break
			}
		}
		if paired {
			s.gpus = append(s.gpus, g)
			s.partners = appendNew(s.partners, cl.Jobs(g)...)
			if len(s.gpus) == need {
				return s, nil
			}
		}
	}
	return sharing{}, nil
}
