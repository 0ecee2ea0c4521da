package walk

import (
	"strconv"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// SJFFFS is SJF ordering with aggressive first-fit sharing (the authors' merge placement,
// docs/paper.md §5.5): idle GPUs first, then any GPU with room, with no benefit check. Pairs the
// profile lacks are never shared. It takes the largest sub-batch that fits.
type SJFFFS struct{ g greedy }

var _ policy.Policy = (*SJFFFS)(nil)

// SJFFFSArgs are the arguments of sjf-ffs.
type SJFFFSArgs struct {
	// Exhaustive walks every pending job with no shortcut (same decisions, slower; for tests).
	Exhaustive bool `json:"exhaustive,omitempty"`
	// NoKeptFails tries again in every call the jobs that failed in an earlier one (same
	// decisions and pairs looked up, slower; for tests).
	NoKeptFails bool   `json:"no_kept_fails,omitempty"`
	Preempt     bool   `json:"preempt"`
	Victims     string `json:"victims"`
	Consolidate bool   `json:"consolidate"`
	MPS         bool   `json:"mps"`
}

func newSJFFFS(a SJFFFSArgs) *SJFFFS {
	place := func(p *placer, j *policy.Job) (policy.Placement, bool, error) {
		for opt := range j.Options {
			var gpus []int
			var partners []trace.JobID
			var err error
			if a.Consolidate {
				p.wait = 0 // not kept across calls
				gpus, partners, _, err = p.consolidated(j, opt, false)
			}
			if gpus == nil && err == nil {
				gpus, partners, err = p.firstFit(j, opt)
			}
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
	g := greedy{name: KeySJFFFS, drain: true, place: place, preempt: a.Preempt, tentative: a.Victims == VictimsTentative, exhaustive: a.Exhaustive, mps: a.MPS}
	// First fit reads no remaining time: a failure holds until a GPU frees up (greedy.fails).
	g.keepFails = !a.Preempt && !a.Exhaustive && !a.NoKeptFails
	g.p.anyShare = true
	return &SJFFFS{g}
}

// Name returns the registry key.
func (p *SJFFFS) Name() string { return KeySJFFFS }

// Key orders pending jobs by remaining exclusive time.
func (p *SJFFFS) Key(j *policy.Job) policy.Key { return remKey(j) }

// Mode returns the sharing mode whose slowdowns apply.
func (p *SJFFFS) Mode() profile.Mode { return profile.Mode(p.g.mode()) }

// Schedule places the shortest jobs first, sharing wherever there is room.
func (p *SJFFFS) Schedule(s *policy.State) (policy.Plan, error) {
	return p.g.schedule(s, runRemKey(s.Now))
}

// sharingWith explains a first fit with partners, formatting the IDs as fmt's %v would ("[1 2]")
// without its reflection, at every start that shares.
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
