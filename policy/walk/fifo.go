package walk

import "github.com/sharebench/sharebench/policy"

// FIFO runs jobs in submission order on exclusive GPUs (YARN placement). Like the authors'
// fifo it is preemptive by default: an earlier job may preempt later ones (docs/paper.md §5.2).
// It is not a Keyer: the engine then keeps pending jobs by (Submit, ID), first come, first
// served, as job indices (Queue.ByIndex).
type FIFO struct{ g greedy }

var _ policy.Policy = (*FIFO)(nil)

// FIFOArgs are the arguments of fifo.
type FIFOArgs struct {
	// Exhaustive walks every pending job with no shortcut (same decisions, slower; for tests).
	Exhaustive bool   `json:"exhaustive,omitempty"`
	Preempt    bool   `json:"preempt"`
	Victims    string `json:"victims"` // "authors" (default) or "tentative"
}

func newFIFO(a FIFOArgs) *FIFO {
	return &FIFO{greedy{name: KeyFIFO, place: yarnPlace, exclusive: true, bySize: true, timeless: true, preempt: a.Preempt, tentative: a.Victims == VictimsTentative, exhaustive: a.Exhaustive}}
}

// Name returns the registry key.
func (p *FIFO) Name() string { return KeyFIFO }

// Exclusive marks FIFO as never sharing a GPU (YARN placement on idle GPUs).
func (p *FIFO) Exclusive() {}

// Schedule places pending jobs first come, first served.
func (p *FIFO) Schedule(s *policy.State) (policy.Plan, error) {
	return p.g.schedule(s, submitKey)
}
