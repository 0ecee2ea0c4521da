package bench

import (
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/sim"
)

// RunMetrics are the metrics summary.json carries beyond the simulator's own: bench computes
// them from every job of the run (jobs.csv may keep only a sample), so that tables and the
// report can judge more than average JCT. docs/results-format.md defines them.
type RunMetrics struct {
	// SlowdownMean, SlowdownP95 and SlowdownP99 describe the per-job slowdown JCT / solo time
	// (solo: the job's iterations at its fastest exclusive step time), the quantiles with the
	// authors' definition sorted(x)[int(q·n)] as the JCT quantiles.
	SlowdownMean float64 `json:"slowdown_mean"`
	SlowdownP95  float64 `json:"slowdown_p95"`
	SlowdownP99  float64 `json:"slowdown_p99"`
	// SlowdownFairness is Jain's index over the slowdowns, (Σx)² / (n·Σx²): 1 when every job is
	// slowed down alike, 1/n when one job takes all of it.
	SlowdownFairness float64 `json:"slowdown_fairness"`
	// EffectiveGPUUtil is the GPU time the jobs needed alone, Σ GPUs·solo, over the cluster's
	// GPU time to the makespan: the time average of Σ 1/ξ over the jobs on a GPU, a sharing
	// GPU counting for what it delivers rather than for being busy. Beside gpu_util (a GPU
	// holding a job): above it where sharing adds throughput, below it where interference,
	// restarts or slower sub-batches waste it.
	EffectiveGPUUtil float64 `json:"effective_gpu_util"`
	// SubBatchJobs counts the jobs whose last placement ran a sub-batch smaller than their
	// batch (gradient accumulation).
	SubBatchJobs int `json:"subbatch_jobs"`
	// Counterfactual says how the run's profile departs from measurements on purpose
	// ("ξ scaled ×0.5", "ξ made symmetric"); empty for a measured or derived profile. The
	// claims table reports such runs as sensitivity, apart from the evidence.
	Counterfactual string `json:"counterfactual,omitempty"`
}

// runSummary is summary.json as bench writes it: the simulator's summary, then RunMetrics.
type runSummary struct {
	*sim.Summary
	RunMetrics
}

// writeSummary writes summary.json of res with its RunMetrics.
func writeSummary(w io.Writer, res *sim.Result, counterfactual string) error {
	m := ComputeMetrics(res)
	m.Counterfactual = counterfactual
	return writeJSON(w, runSummary{&res.Summary, m})
}

// ComputeMetrics computes the RunMetrics of a result from every job (Counterfactual is left
// empty).
func ComputeMetrics(res *sim.Result) RunMetrics {
	var m RunMetrics
	if len(res.Jobs) == 0 {
		return m
	}
	slow := make([]float64, 0, len(res.Jobs))
	var sum, sumSq, work float64
	var end int64
	for _, j := range res.Jobs {
		if j.SubBatch > 0 && j.SubBatch < j.Batch {
			m.SubBatchJobs++
		}
		end = max(end, int64(j.End))
		work += float64(j.GPUs) * j.Solo.Seconds()
		if j.Solo <= 0 {
			continue // no solo time, no slowdown
		}
		x := j.JCT.Seconds() / j.Solo.Seconds()
		slow = append(slow, x)
		sum += x
		sumSq += x * x
	}
	if n := float64(len(slow)); n > 0 {
		slices.Sort(slow)
		q := func(p float64) float64 { return slow[min(int(p*n), len(slow)-1)] }
		m.SlowdownMean = round6(sum / n)
		m.SlowdownP95 = round6(q(0.95))
		m.SlowdownP99 = round6(q(0.99))
		if sumSq > 0 {
			m.SlowdownFairness = round6(sum * sum / (n * sumSq))
		}
	}
	if span := float64(end) / 1e9; span > 0 && res.Summary.GPUs > 0 {
		m.EffectiveGPUUtil = round6(work / (float64(res.Summary.GPUs) * span))
	}
	return m
}

// counterfactual describes how a profile spec departs from its measurements on purpose (see
// RunMetrics.Counterfactual).
func (p ProfileSpec) counterfactual() string {
	var parts []string
	if p.XiScale != nil && *p.XiScale != 1 {
		parts = append(parts, "ξ scaled ×"+strconv.FormatFloat(*p.XiScale, 'f', -1, 64))
	}
	if p.Derive != DeriveNone && slices.Contains(strings.Split(p.Derive, "+"), DeriveSymmetric) {
		parts = append(parts, "ξ made symmetric")
	}
	return strings.Join(parts, ", ")
}
