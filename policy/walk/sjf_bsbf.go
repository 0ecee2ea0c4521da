package walk

import (
	"strconv"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// SJFBSBF is the paper's scheduler: shortest job first, best sharing benefit first (docs/paper.md §4).
// Pending jobs go in SJF order to idle GPUs first; when too few are idle, every job on the
// candidate GPUs is share-checked (Theorem 1: share now iff t_con < t_seq) and passing partners
// are used in order of t_con. With sub-batch choice, each memory-feasible sub-batch of the pending
// job is evaluated (the partner keeps its own) and the one with the smallest t_con wins. No
// preemption unless asked for.
type SJFBSBF struct{ g greedy }

var _ policy.Policy = (*SJFBSBF)(nil)

// SJFBSBFArgs are the arguments of sjf-bsbf.
type SJFBSBFArgs struct {
	// Exhaustive walks every pending job with no shortcut (same decisions, slower; for tests).
	Exhaustive bool `json:"exhaustive,omitempty"`
	// NoKeptFails tries again in every call the jobs that failed in an earlier one (same
	// decisions and pairs looked up, slower; for tests).
	NoKeptFails bool   `json:"no_kept_fails,omitempty"`
	Preempt     bool   `json:"preempt"`
	Victims     string `json:"victims"`
	Consolidate bool   `json:"consolidate"`
	MPS         bool   `json:"mps"`
	// SubBatch enables the choice of sub-batch (gradient accumulation); false keeps every job at
	// its fastest sub-batch that fits on an idle GPU.
	SubBatch bool `json:"sub_batch"`
}

func newSJFBSBF(a SJFBSBFArgs) *SJFBSBF {
	place := func(p *placer, j *policy.Job) (policy.Placement, bool, error) {
		if gpus, ok := p.exclusive(j, j.Fast); ok {
			pl := policy.Placement{GPUs: gpus, Opt: j.Fast}
			if p.s.Env.Explain {
				pl.Reason = "idle GPUs"
			}
			return pl, true, nil
		}
		first, last := j.Fast, j.Fast
		if a.SubBatch {
			first, last = 0, len(j.Options)-1
		}
		var best policy.Placement
		bestScore, found := 0.0, false
		var bestWhy string
		for opt := first; opt <= last; opt++ {
			var gpus []int
			var partners []trace.JobID
			var score float64
			var why string
			var err error
			if a.Consolidate {
				p.wait = 0 // not bounded in time
				gpus, partners, score, err = p.consolidated(j, opt, true)
				why = "consolidated share check passed"
			}
			if gpus == nil && err == nil {
				gpus, partners, score, err = p.bestBenefit(j, opt)
				why = ""
			}
			if err != nil {
				return policy.Placement{}, false, err
			}
			// Strict <: among equal t_con the larger sub-batch (earlier option) wins.
			if gpus != nil && (!found || score < bestScore) {
				best = policy.Placement{GPUs: gpus, Opt: opt, Partners: partners}
				if p.s.Env.Explain {
					// The reason is made for the chosen placement only: keep its partners.
					if why == "" && len(partners) == 0 {
						why = "idle GPUs"
					}
					bestWhy, p.bestNotes = why, append(p.bestNotes[:0], p.notes...)
				}
				bestScore, found = score, true
			}
		}
		if found && p.s.Env.Explain {
			if bestWhy == "" {
				bestWhy = p.shareReason(p.bestNotes)
			}
			best.Reason = "sub-batch " + strconv.Itoa(j.Options[best.Opt].SubBatch) + ": " + bestWhy
		}
		return best, found, nil
	}
	g := greedy{name: KeySJFBSBF, drain: true, place: place, preempt: a.Preempt, tentative: a.Victims == VictimsTentative, exhaustive: a.Exhaustive, mps: a.MPS}
	// The share index holds running jobs only: with preemption, victims' GPUs would hold jobs
	// it does not list.
	g.p.ix.on = !a.Preempt && !a.Exhaustive
	g.keepFails = !a.Preempt && !a.Exhaustive && !a.NoKeptFails
	return &SJFBSBF{g}
}

// Name returns the registry key.
func (p *SJFBSBF) Name() string { return KeySJFBSBF }

// Key orders pending jobs by remaining exclusive time.
func (p *SJFBSBF) Key(j *policy.Job) policy.Key { return remKey(j) }

// Mode returns the sharing mode whose slowdowns apply.
func (p *SJFBSBF) Mode() profile.Mode { return profile.Mode(p.g.mode()) }

// Schedule places the shortest jobs first, sharing only where Theorem 1 says it pays.
func (p *SJFBSBF) Schedule(s *policy.State) (policy.Plan, error) {
	return p.g.schedule(s, runRemKey(s.Now))
}
