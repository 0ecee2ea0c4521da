package replay

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// ReplayRule derives a small replay trace from the SJF-BSBF testbed trace (bench/traces/
// testbed61.csv): a dozen one-GPU jobs over the authors' eight models, with the testbed's
// arrival burst and a spread of lengths, sized for one GPU and a few minutes (the shipped
// bench/traces/replay12.csv; bench/traces/README.md states the rule in words).
type ReplayRule struct {
	// Jobs is the number of jobs kept (12), at most PerModel (2) of one model.
	Jobs, PerModel int
	// Span is the submit time of the last job kept (60 s); the others keep their proportion.
	Span time.Duration
	// Short is the solo length of the shortest third at the trace's iteration times (40 s);
	// the middle third runs twice, the longest third four times as long.
	Short time.Duration
}

// Replay12 is the rule of bench/traces/replay12.csv.
func Replay12() ReplayRule {
	return ReplayRule{Jobs: 12, PerModel: 2, Span: 60 * time.Second, Short: 40 * time.Second}
}

// Derive applies the rule to the testbed's jobs:
//  1. in (submit, id) order, keep the first job of each of the authors' eight models, then
//     the next jobs in that order whose model has fewer than PerModel kept, up to Jobs;
//  2. each job asks for one GPU;
//  3. submit := ⌊submit_ms × Span_ms ÷ last_ms⌋ ms, last the latest kept submit time;
//  4. rank the kept jobs by their testbed length (iterations × iteration time; ties by id):
//     the first third gets the solo length Short, the second 2·Short, the last 4·Short, and
//     iterations := max(1, round(length ÷ iteration time)); model, batch and iteration time
//     are kept.
func (r ReplayRule) Derive(testbed []trace.Job) ([]trace.Job, error) {
	jobs := slices.Clone(testbed)
	trace.Sort(jobs)
	authors := map[string]bool{}
	for _, j := range jobs {
		if _, ok := profile.AuthorsDisplayName(j.Model); ok {
			authors[j.Model] = true
		}
	}
	if len(authors) < 8 {
		return nil, fmt.Errorf("replay trace: the testbed trace has %d of the authors' eight models", len(authors))
	}
	kept, count := map[trace.JobID]bool{}, map[string]int{}
	var out []trace.Job
	take := func(j trace.Job) {
		kept[j.ID] = true
		count[j.Model]++
		out = append(out, j)
	}
	for _, j := range jobs {
		if authors[j.Model] && count[j.Model] == 0 {
			take(j)
		}
	}
	for _, j := range jobs {
		if len(out) >= r.Jobs {
			break
		}
		if !kept[j.ID] && authors[j.Model] && count[j.Model] < r.PerModel {
			take(j)
		}
	}
	if len(out) != r.Jobs {
		return nil, fmt.Errorf("replay trace: only %d jobs qualify, want %d", len(out), r.Jobs)
	}
	trace.Sort(out)
	last := out[len(out)-1].Submit.Milliseconds()
	for i := range out {
		if out[i].IterTime <= 0 {
			return nil, fmt.Errorf("replay trace: job %d has no iteration time", out[i].ID)
		}
		out[i].GPUs = 1
		if last > 0 {
			out[i].Submit = time.Duration(out[i].Submit.Milliseconds()*r.Span.Milliseconds()/last) * time.Millisecond
		}
		out[i].Line = 0
	}
	byLen := slices.Clone(out)
	length := func(j trace.Job) float64 { return float64(j.Iters) * j.IterTime.Seconds() }
	slices.SortFunc(byLen, func(a, b trace.Job) int { return cmp.Or(cmp.Compare(length(a), length(b)), cmp.Compare(a.ID, b.ID)) })
	iters := map[trace.JobID]int64{}
	for rank, j := range byLen {
		solo := r.Short << (3 * rank / len(byLen))
		iters[j.ID] = max(1, int64(float64(solo)/float64(j.IterTime)+0.5))
	}
	for i := range out {
		out[i].Iters = iters[out[i].ID]
	}
	return out, nil
}
