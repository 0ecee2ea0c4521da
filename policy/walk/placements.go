package walk

import (
	"strconv"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/trace"
)

// placeFunc finds a placement for j on the tentative cluster; ok is false when none exists now.
type placeFunc func(p *placer, j *policy.Job) (pl policy.Placement, ok bool, err error)

// placeFor returns the fast placement of d (shortcuts chose which): the same answers as d.Place,
// on the placer's indexes and copies.
func placeFor(d *policy.Greedy, kind placement) placeFunc {
	switch kind {
	case placeYARN:
		return yarnPlace
	case placeFirstFit:
		return firstFitPlace
	case placeBestBenefit:
		return bestBenefitPlace(d.Place.(schedulers.BestBenefit))
	}
	return func(p *placer, j *policy.Job) (policy.Placement, bool, error) { return p.delegate(d.Place, j) }
}

// delegate asks the declaration's own placement, with the jobs placed in this call as partners.
// Its answer is not bounded in time (placer.wait).
func (p *placer) delegate(rule policy.Placer, j *policy.Job) (policy.Placement, bool, error) {
	p.wait = 0
	if p.view == nil || p.view.State != p.s {
		p.view = policy.NewCall(p.s, func(id trace.JobID) (policy.Partner, error) {
			r, err := p.resident(id)
			return policy.Partner{Job: r.job, Opt: r.opt, Rem: r.etc}, err
		})
	}
	return rule.Place(p.view, j)
}

// yarnPlace is schedulers.YARN.
func yarnPlace(p *placer, j *policy.Job) (policy.Placement, bool, error) {
	gpus := p.yarn(j)
	if gpus == nil {
		return policy.Placement{}, false, nil
	}
	pl := policy.Placement{GPUs: gpus, Opt: j.Fast}
	if p.s.Env.Explain {
		pl.Reason = "exclusive (yarn)"
	}
	return pl, true, nil
}

// firstFitPlace is schedulers.FirstFit without consolidation.
func firstFitPlace(p *placer, j *policy.Job) (policy.Placement, bool, error) {
	for opt := range j.Options {
		gpus, partners, err := p.firstFit(j, opt)
		if err != nil {
			return policy.Placement{}, false, err
		}
		if gpus != nil {
			pl := policy.Placement{GPUs: gpus, Opt: opt, Partners: partners}
			if p.s.Env.Explain {
				pl.Reason = "first fit"
				if len(partners) > 0 {
					pl.Reason = sharingWith(partners)
				}
			}
			return pl, true, nil
		}
	}
	return policy.Placement{}, false, nil
}

// sharingWith explains a first fit with partners as FirstFit does ("first fit, sharing with
// [1 2]"), without fmt's reflection, at every start that shares.
func sharingWith(partners []trace.JobID) string {
	b := append(make([]byte, 0, 48), "first fit, sharing with ["...)
	for i, id := range partners {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(append(b, ']'))
}

// bestBenefitPlace is schedulers.BestBenefit without consolidation; its indexes assume at most
// two jobs per GPU, and with more it asks the rule.
func bestBenefitPlace(rule schedulers.BestBenefit) placeFunc {
	return func(p *placer, j *policy.Job) (policy.Placement, bool, error) {
		if p.s.Cluster.Shape().MaxShare != 2 {
			return p.delegate(rule, j)
		}
		if gpus, ok := p.exclusive(j, j.Fast); ok {
			pl := policy.Placement{GPUs: gpus, Opt: j.Fast}
			if p.s.Env.Explain {
				pl.Reason = "idle GPUs"
			}
			return pl, true, nil
		}
		first, last := j.Fast, j.Fast
		if rule.SubBatch {
			first, last = 0, len(j.Options)-1
		}
		var best policy.Placement
		bestScore, found := 0.0, false
		for opt := first; opt <= last; opt++ {
			gpus, partners, score, err := p.bestBenefit(j, opt)
			if err != nil {
				return policy.Placement{}, false, err
			}
			// Strict <: among equal t_con the larger sub-batch (earlier option) wins.
			if gpus != nil && (!found || score < bestScore) {
				best = policy.Placement{GPUs: gpus, Opt: opt, Partners: partners}
				if p.s.Env.Explain {
					// The reason is made for the chosen placement only: keep its partners.
					p.bestNotes = append(p.bestNotes[:0], p.notes...)
				}
				bestScore, found = score, true
			}
		}
		if found && p.s.Env.Explain {
			why := "idle GPUs"
			if len(best.Partners) > 0 {
				why = p.shareReason(p.bestNotes)
			}
			best.Reason = "sub-batch " + strconv.Itoa(j.Options[best.Opt].SubBatch) + ": " + why
		}
		return best, found, nil
	}
}
