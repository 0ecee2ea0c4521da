package analysis

import (
	"strconv"

	"github.com/sharebench/sharebench/results"
)

// Breakdown tabulates average JCT and queueing delay by the trace's model and by GPU demand
// (summary.json's by_model and by_gpus, which cover every job even where jobs.csv keeps a
// sample), for every cell and policy, the jobs of all seeds pooled.
func Breakdown(runs []*results.Run) (Table, error) {
	groups, err := GroupRuns(runs)
	if err != nil {
		return Table{}, err
	}
	l := newLayout(groups)
	t := Table{
		Title:  "Average JCT and queueing delay by model and by GPU demand (jobs of all seeds pooled)",
		Header: l.header("policy", "by", "group", "jobs", "avg JCT (s)", "avg queue (s)"),
	}
	for _, g := range groups {
		for _, by := range []struct {
			name string
			of   func(*results.Summary) []results.Breakdown
		}{
			{"model", func(s *results.Summary) []results.Breakdown { return s.ByModel }},
			{"GPUs", func(s *results.Summary) []results.Breakdown { return s.ByGPUs }},
		} {
			type acc struct{ jobs, jct, queue float64 }
			var keys []string
			sums := map[string]*acc{}
			for _, r := range g.Runs {
				for _, b := range by.of(&r.Summary) {
					a, ok := sums[b.Key]
					if !ok {
						a = &acc{}
						sums[b.Key] = a
						keys = append(keys, b.Key)
					}
					n := float64(b.Jobs)
					a.jobs += n
					a.jct += n * b.AvgJCTS
					a.queue += n * b.AvgQueueS
				}
			}
			for _, k := range keys {
				a := sums[k]
				t.Rows = append(t.Rows, l.row(g, g.Series, by.name, k, strconv.Itoa(int(a.jobs)),
					fmtFixed(a.jct/a.jobs, 1), fmtFixed(a.queue/a.jobs, 1)))
			}
		}
	}
	t.Notes = []string{
		"From summary.json (by_model, by_gpus): every job of every run, also where jobs.csv keeps a sample.",
		"GPU demand buckets: 1, 2, 3–4, 5–8, ≥9 GPUs (the traces ask for powers of two: 1, 2, 4, 8, ≥16).",
		"Averages pool the jobs of all seeds of a cell; queueing delay is JCT minus the time run.",
	}
	return t, nil
}
