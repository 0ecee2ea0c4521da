package walk

import "github.com/sharebench/sharebench/policy"

// SJF is shortest-remaining-time-first with exclusive YARN placement, preemptive by default, as
// the authors' sjf (docs/paper.md §5.3). Running jobs are ranked by their remaining time at their
// current, possibly slowed, iteration time.
type SJF struct{ g greedy }

var _ policy.Policy = (*SJF)(nil)

// SJFArgs are the arguments of sjf.
type SJFArgs struct {
	// Exhaustive walks every pending job with no shortcut (same decisions, slower; for tests).
	Exhaustive bool   `json:"exhaustive,omitempty"`
	Preempt    bool   `json:"preempt"`
	Victims    string `json:"victims"`
}

func newSJF(a SJFArgs) *SJF {
	return &SJF{greedy{name: KeySJF, drain: true, place: yarnPlace, exclusive: true, bySize: true, lazy: true, preempt: a.Preempt, tentative: a.Victims == VictimsTentative, exhaustive: a.Exhaustive}}
}

// Name returns the registry key.
func (p *SJF) Name() string { return KeySJF }

// Exclusive marks SJF as never sharing a GPU (YARN placement on idle GPUs).
func (p *SJF) Exclusive() {}

// Key orders pending jobs by remaining exclusive time.
func (p *SJF) Key(j *policy.Job) policy.Key { return remKey(j) }

// Schedule places the shortest jobs first.
func (p *SJF) Schedule(s *policy.State) (policy.Plan, error) {
	return p.g.schedule(s, runRemKey(s.Now))
}
