package schedulers

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// SJFBSBFArgs are sjf-bsbf's arguments.
type SJFBSBFArgs struct {
	Preempt bool   `json:"preempt"`
	Victims string `json:"victims"`
	// Consolidate tries to place a job inside one node first (the authors' "s" variants).
	Consolidate bool `json:"consolidate"`
	// MPS applies the profile's MPS slowdowns instead of time-slicing's.
	MPS bool `json:"mps"`
	// SubBatch lets a sharing job run at a smaller sub-batch (gradient accumulation); false keeps
	// every job at its fastest sub-batch.
	SubBatch bool `json:"sub_batch"`
}

// SJFBSBF is the paper's scheduler, shortest job first with best sharing benefit first
// (docs/paper.md §4; the authors' sjf-bsbf-no-preempt, Lai-JX/Scheduler bsbf_alloc_res and
// switch.share_check):
//   - order: SJF (RemainingKey, RunningKey);
//   - placement: idle GPUs first; when too few are idle, the job shares the GPUs of running jobs
//     that pass the share check, partners with the smallest t_con first (BestBenefit);
//   - sub-batch: each sub-batch that fits in memory is tried, the partner keeping its own, and
//     the one with the smallest t_con wins, the larger sub-batch among equals;
//   - victims: none unless Preempt (then as sjf).
func SJFBSBF(a SJFBSBFArgs) (*policy.Greedy, error) {
	if err := policy.CheckVictims(a.Victims); err != nil {
		return nil, err
	}
	return &policy.Greedy{
		Name:    KeySJFBSBF,
		Key:     RemainingKey,
		Rank:    RunningKey,
		Order:   policy.OrderRemaining,
		Place:   BestBenefit{SubBatch: a.SubBatch, Consolidate: a.Consolidate},
		Preempt: a.Preempt,
		Victims: a.Victims,
		Mode:    mode(a.MPS),
	}, nil
}

func mode(mps bool) profile.Mode {
	if mps {
		return profile.MPS
	}
	return profile.Timeslice
}

// BestBenefit is SJF-BSBF's placement.
type BestBenefit struct {
	SubBatch    bool // try every sub-batch that fits, not only the fastest
	Consolidate bool // try one node first (the authors' consolidated share check)
}

// Place places j on idle GPUs if there are enough, else sharing where Theorem 1 says it pays.
func (b BestBenefit) Place(c *policy.Call, j *policy.Job) (policy.Placement, bool, error) {
	if gpus := idleGPUs(c, j, j.Fast); gpus != nil {
		pl := policy.Placement{GPUs: gpus, Opt: j.Fast}
		if c.Env.Explain {
			pl.Reason = "idle GPUs"
		}
		return pl, true, nil
	}
	first, last := j.Fast, j.Fast
	if b.SubBatch {
		first, last = 0, len(j.Options)-1
	}
	var best sharing
	bestOpt := -1
	for opt := first; opt <= last; opt++ {
		var s sharing
		var err error
		if b.Consolidate {
			s, err = consolidated(c, j, opt, true)
			s.why = "consolidated share check passed"
		}
		if s.gpus == nil && err == nil {
			s, err = shareGPUs(c, j, opt)
		}
		if err != nil {
			return policy.Placement{}, false, err
		}
		// Strict <: among equal t_con the larger sub-batch (the earlier option) wins.
		if s.gpus != nil && (bestOpt < 0 || s.score < best.score) {
			best, bestOpt = s, opt
		}
	}
	if bestOpt < 0 {
		return policy.Placement{}, false, nil
	}
	pl := policy.Placement{GPUs: best.gpus, Opt: bestOpt, Partners: best.partners}
	if c.Env.Explain {
		why := best.why
		if why == "" {
			why = "idle GPUs"
		}
		pl.Reason = "sub-batch " + strconv.Itoa(j.Options[bestOpt].SubBatch) + ": " + why
	}
	return pl, true, nil
}

// shareGPUs is the authors' sharing placement of j at option opt (docs/paper.md §4.2): every job
// on the GPUs with room is share-checked once; a GPU can be used if every job on it passes; the
// passing jobs, smallest t_con first (ties in the order of the scan), give their usable GPUs in
// the order of the scan until, with the idle GPUs, j has its GPUs. The score is the largest t_con
// of the partners used.
func shareGPUs(c *policy.Call, j *policy.Job, opt int) (sharing, error) {
	cl := c.Cluster
	need := j.GPUs
	if cl.Open() < need {
		return sharing{}, nil
	}
	o := j.Options[opt]
	idle, shared := candidates(c, o.Mem)
	if len(idle)+len(shared) < need {
		return sharing{}, nil
	}
	// A job stopped earlier in this call still runs on paper: its work counts at now.
	rem := j.RemIters(c.Now)
	etcA, etcWait := rem*o.Excl.Seconds(), rem*j.Options[j.Fast].Excl.Seconds()
	type check struct {
		id         trace.JobID
		ok         bool
		tCon, tSeq float64
		gpus       []int // the usable GPUs it is on, in scan order
	}
	var checks []check
	index := map[trace.JobID]int{}
	for _, g := range shared {
		for _, id := range cl.Jobs(g) {
			if _, seen := index[id]; seen {
				continue
			}
			r, err := c.Resident(id)
			if err != nil {
				return sharing{}, err
			}
			k := check{id: id}
			xiA, okA := c.Env.Xi(j, opt, r.Job, r.Opt)
			xiB, okB := c.Env.Xi(r.Job, r.Opt, j, opt)
			if okA && okB {
				k.ok, k.tCon, k.tSeq = ShareAt(etcA, etcWait, r.Rem, xiA, xiB)
			}
			index[id] = len(checks)
			checks = append(checks, k)
		}
	}
	usable := 0
	for _, g := range shared {
		ids := cl.Jobs(g)
		if !slices.ContainsFunc(ids, func(id trace.JobID) bool { return !checks[index[id]].ok }) {
			usable++
			for _, id := range ids {
				checks[index[id]].gpus = append(checks[index[id]].gpus, g)
			}
		}
	}
	if len(idle)+usable < need {
		return sharing{}, nil
	}
	var order []int
	for i, k := range checks {
		if k.ok {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(checks[a].tCon, checks[b].tCon) })
	s := sharing{gpus: slices.Clone(idle)}
	var why []string
	for _, i := range order {
		if len(s.gpus) == need {
			break
		}
		k := checks[i]
		used := false
		for _, g := range k.gpus {
			if slices.Contains(s.gpus, g) {
				continue // another partner on it gave it
			}
			s.gpus = append(s.gpus, g)
			used = true
			if len(s.gpus) == need {
				break
			}
		}
		if used {
			s.partners = append(s.partners, k.id)
			s.score = max(s.score, k.tCon)
			if c.Env.Explain {
				why = append(why, fmt.Sprintf("share with %d: t_con=%.3fs < t_seq=%.3fs", k.id, k.tCon, k.tSeq))
			}
		}
	}
	if len(s.gpus) < need {
		return sharing{}, nil
	}
	s.why = strings.Join(why, "; ")
	return s, nil
}

// ShareCheck is the authors' pairwise rule (docs/paper.md §3.1, Lai-JX/Scheduler
// switch.share_check): should a pending job A start now on the GPUs of a running job B, or wait
// until B finishes? etcA and etcB are the remaining times in seconds (A at its exclusive step
// time, B at its current, possibly slowed, one); xiA and xiB are the slowdowns each suffers next
// to the other. tCon is the pair's average completion time from now if A starts sharing now,
// tSeq if A waits; A shares iff tCon < tSeq. By Theorem 1 (docs/paper.md §3.3) no later sharing
// time beats both. The arithmetic follows the authors' expression order, so results equal
// theirs to the last bit.
func ShareCheck(etcA, etcB, xiA, xiB float64) (share bool, tCon, tSeq float64) {
	hatA := xiA * etcA
	hatB := xiB * etcB
	if hatA >= hatB {
		tCon = 0.5*etcA + (1-1/(2*xiA))*hatB
	} else {
		tCon = 0.5*etcB + (1-1/(2*xiB))*hatA
	}
	tSeq = etcB + 0.5*etcA
	return tCon < tSeq, tCon, tSeq
}

// PairAverage returns the pair's average completion time, measured from now, when A starts
// sharing B's GPUs after a delay tau ∈ [0, etcB] (B runs alone until then): the brute-force model
// behind Theorem 1, for tests. ShareCheck's tCon is PairAverage(0) and its tSeq PairAverage(etcB).
func PairAverage(etcA, etcB, xiA, xiB, tau float64) float64 {
	if tau >= etcB {
		return (etcB + etcB + etcA) / 2
	}
	restB := etcB - tau // B's remaining exclusive time when sharing begins
	hatA, hatB := xiA*etcA, xiB*restB
	if hatA >= hatB {
		// B finishes first, at tau + hatB; A has done hatB/xiA of its work by then.
		endB := tau + hatB
		endA := endB + etcA - hatB/xiA
		return (endA + endB) / 2
	}
	endA := tau + hatA
	endB := endA + restB - hatA/xiB
	return (endA + endB) / 2
}

// ShareAt is ShareCheck for a pending job that would share at one sub-batch (remaining time
// etcShare) but would run alone at its fastest one (etcWait): t_con is computed with the former,
// t_seq with the latter, since waiting means running alone later. With one sub-batch it is
// exactly ShareCheck.
func ShareAt(etcShare, etcWait, etcB, xiA, xiB float64) (share bool, tCon, tSeq float64) {
	_, tCon, _ = ShareCheck(etcShare, etcB, xiA, xiB)
	tSeq = etcB + 0.5*etcWait
	return tCon < tSeq, tCon, tSeq
}
