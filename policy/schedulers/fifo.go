package schedulers

import (
	"time"

	"github.com/sharebench/sharebench/policy"
)

// FIFOArgs are fifo's arguments.
type FIFOArgs struct {
	Preempt bool   `json:"preempt"`
	Victims string `json:"victims"` // policy.VictimsAuthors (default) or policy.VictimsTentative
}

// FIFO runs jobs first come, first served on exclusive GPUs, as the authors' fifo
// (Lai-JX/Scheduler schedulers.py, docs/paper.md §5.2):
//   - order: submission time, then job ID, for waiting and running jobs alike;
//   - placement: YARN, at the fastest sub-batch;
//   - victims: like the authors' fifo it preempts by default, so an earlier job stops later
//     ones, lowest first, when it does not fit;
//   - sharing: never.
func FIFO(a FIFOArgs) (*policy.Greedy, error) {
	if err := policy.CheckVictims(a.Victims); err != nil {
		return nil, err
	}
	return &policy.Greedy{
		Name:      KeyFIFO,
		Key:       nil, // submission order
		Rank:      func(time.Duration, *policy.Job) policy.Key { return policy.Key{} },
		Order:     policy.OrderFixed,
		Place:     YARN{},
		Exclusive: true,
		Preempt:   a.Preempt,
		Victims:   a.Victims,
	}, nil
}
