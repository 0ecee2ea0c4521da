package schedulers

import (
	"time"

	"github.com/sharebench/sharebench/policy"
)

// SJFArgs are sjf's arguments.
type SJFArgs struct {
	Preempt bool   `json:"preempt"`
	Victims string `json:"victims"` // policy.VictimsAuthors (default) or policy.VictimsTentative
}

// SJF is shortest remaining time first on exclusive GPUs, as the authors' sjf
// (Lai-JX/Scheduler schedulers.py, docs/paper.md §5.3):
//   - order: a waiting job by its remaining time alone at its fastest sub-batch (RemainingKey),
//     a running job by its remaining time at its current, possibly slowed, step time (RunningKey;
//     docs/paper.md §9.3);
//   - placement: YARN;
//   - victims: preemptive by default, as fifo;
//   - sharing: never.
func SJF(a SJFArgs) (*policy.Greedy, error) {
	if err := policy.CheckVictims(a.Victims); err != nil {
		return nil, err
	}
	return &policy.Greedy{
		Name:      KeySJF,
		Key:       RemainingKey,
		Rank:      RunningKey,
		Order:     policy.OrderRemaining,
		Place:     YARN{},
		Exclusive: true,
		Preempt:   a.Preempt,
		Victims:   a.Victims,
	}, nil
}

// RemainingKey is the SJF key of a waiting job: its remaining time in seconds at its fastest
// sub-batch, alone on its GPUs.
func RemainingKey(j *policy.Job) policy.Key {
	return policy.Key{A: j.P.Rem * j.Options[j.Fast].Excl.Seconds()}
}

// RunningKey is the SJF key of a running job at time now: its remaining time in seconds at its
// current step time.
func RunningKey(now time.Duration, j *policy.Job) policy.Key {
	return policy.Key{A: j.RemTime(now).Seconds()}
}
