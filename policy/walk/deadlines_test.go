package walk

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// TestDeadlinesAsAllDeadlines checks deadlines against a list of every deadline ever pushed:
// at each instant it pops, in the same order, the deadlines due that no later push for their
// job replaced, and it wakes at the same instants (replaced deadlines included).
func TestDeadlinesAsAllDeadlines(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		jobs := make([]*policy.Job, 1+rng.IntN(12))
		for i := range jobs {
			jobs[i] = &policy.Job{Job: trace.Job{ID: trace.JobID(100 - 3*i)}, Idx: int32(i)} // ids not in Idx order
		}
		var q deadlines
		type ref struct {
			d      deadline
			latest bool // no later push for the job
			popped bool
		}
		var all []*ref
		now := time.Duration(0)
		for step := range 300 {
			if rng.IntN(3) > 0 {
				j := jobs[rng.IntN(len(jobs))]
				d := deadline{at: now + 1 + time.Duration(rng.IntN(20)), job: j.ID, j: j, runs: step}
				for _, r := range all {
					if r.d.j == j {
						r.latest = false
					}
				}
				all = append(all, &ref{d: d, latest: true})
				q.push(d)
				continue
			}
			now += time.Duration(rng.IntN(8))
			var want []deadline
			for _, r := range all {
				if !r.popped && r.d.at <= now {
					r.popped = true
					if r.latest {
						want = append(want, r.d)
					}
				}
			}
			slices.SortFunc(want, func(a, b deadline) int {
				if deadlineBefore(a, b) {
					return -1
				}
				return 1
			})
			var got []deadline
			for {
				d, ok := q.pop(now)
				if !ok {
					break
				}
				got = append(got, d)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d step %d: popped %v, want %v", round, step, got, want)
			}
			wantNext, wantOK := time.Duration(0), false
			for _, r := range all {
				if r.d.at > now && (!wantOK || r.d.at < wantNext) {
					wantNext, wantOK = r.d.at, true
				}
			}
			if next, ok := q.next(now); ok != wantOK || ok && next != wantNext {
				t.Fatalf("round %d step %d: next %v %v, want %v %v", round, step, next, ok, wantNext, wantOK)
			}
		}
	}
}
