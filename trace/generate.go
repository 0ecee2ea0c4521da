package trace

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
)

// Sample is one (gang size, duration) pair of a job-size distribution, such as one row of
// the Philly table.
type Sample struct {
	GPUs     int
	Duration time.Duration // run time on exclusive GPUs
}

// GenConfig configures [Generate].
type GenConfig struct {
	// Jobs is the number of jobs to generate; it must be positive.
	Jobs int
	// Load is the target offered load: Σ gpus × duration ÷ (GPUs × arrival span).
	// It must be positive and finite.
	Load float64
	// GPUs is the number of GPUs of the cluster the load refers to.
	GPUs int
	// MaxGPUs excludes pool samples with more GPUs than this; 0 means GPUs.
	MaxGPUs int
	// Pool is the empirical distribution of (GPUs, Duration) pairs sampled from, uniformly.
	Pool []Sample
	// Models lists the models assigned to jobs, with weights; empty means [DefaultModels].
	Models []ModelSpec
}

// MaxGenJobs is the most jobs Generate makes at once: 10^7 (about 1 GB of jobs), ten times the
// largest traces the simulator is benchmarked on.
const MaxGenJobs = 10_000_000

// Generate returns cfg.Jobs synthetic jobs with Poisson arrivals, drawing every variate from
// rng.Uint64 through the package's own transformations, so that a given generator state
// yields the same trace on every Go release.
//
// For each job i, in order: if i > 0 its submit time is the previous one plus an exponential
// gap (inverse CDF, rounded to the nanosecond); job 0 arrives at 0. Then one pool sample is
// chosen uniformly (multiply-shift), then a model by weight. The arrival rate is
// λ = Load × GPUs ÷ E[gpus × duration], the expectation taken over the eligible pool, so the
// offered load over the arrival span approaches Load as the trace grows. The job gets the
// sample's GPUs, Iters = max(1, round(duration ÷ IterTime)) with the model's IterTime and
// Batch, ID = i and Line = 0.
func Generate(cfg GenConfig, rng *rand.Rand) ([]Job, error) {
	maxGPUs := cfg.MaxGPUs
	if maxGPUs == 0 {
		maxGPUs = cfg.GPUs
	}
	switch {
	case rng == nil:
		return nil, fmt.Errorf("trace: generate: nil random source")
	case cfg.Jobs <= 0:
		return nil, fmt.Errorf("trace: generate: job count %d is not positive", cfg.Jobs)
	case cfg.Jobs > MaxGenJobs:
		return nil, fmt.Errorf("trace: generate: job count %d exceeds the maximum of %d", cfg.Jobs, MaxGenJobs)
	case !(cfg.Load > 0) || math.IsInf(cfg.Load, 0):
		return nil, fmt.Errorf("trace: generate: load %v is not a positive finite number", cfg.Load)
	case cfg.GPUs <= 0:
		return nil, fmt.Errorf("trace: generate: cluster GPU count %d is not positive", cfg.GPUs)
	case maxGPUs < 0:
		return nil, fmt.Errorf("trace: generate: maximum gang size %d is negative", cfg.MaxGPUs)
	}
	models := cfg.Models
	if len(models) == 0 {
		models = defaultModels[:] // read only
	}
	total, err := checkModels(models)
	if err != nil {
		return nil, fmt.Errorf("trace: generate: %w", err)
	}
	pool, err := eligible(cfg.Pool, maxGPUs)
	if err != nil {
		return nil, fmt.Errorf("trace: generate: %w", err)
	}
	var sum float64 // Σ gpus × duration in GPU-seconds; conversions forbid fused multiply-adds
	for _, s := range pool {
		sum += float64(float64(s.GPUs) * s.Duration.Seconds())
	}
	mean := sum / float64(len(pool))
	lambda := cfg.Load * float64(cfg.GPUs) / mean // arrivals per second
	meanGap := 1e9 / lambda                       // nanoseconds
	if math.IsInf(meanGap, 0) || meanGap*float64(cfg.Jobs) > float64(Horizon/2) {
		return nil, fmt.Errorf("trace: generate: load %v gives arrival times beyond the %d-year horizon", cfg.Load, simtime.HorizonYears)
	}

	jobs := make([]Job, cfg.Jobs)
	var submit time.Duration
	n := uint64(len(pool))
	for i := range jobs {
		if i > 0 {
			u := float64(rng.Uint64()>>11) * 0x1p-53
			gap := simtime.FromNanos(-math.Log1p(-u) * meanGap)
			if submit = simtime.Add(submit, gap); submit > Horizon {
				return nil, fmt.Errorf("trace: generate: job %d: %s", i, simtime.ErrBeyond("arrives after", submit))
			}
		}
		k, _ := bits.Mul64(rng.Uint64(), n)
		s := pool[k]
		m := &models[pickModel(models, total, rng.Uint64())]
		if end := simtime.Add(submit, s.Duration); end > Horizon {
			return nil, fmt.Errorf("trace: generate: job %d: %s", i, simtime.ErrBeyond("ends after", end))
		}
		jobs[i] = Job{
			ID:       JobID(i),
			Submit:   submit,
			GPUs:     s.GPUs,
			Iters:    max(1, divRound(int64(s.Duration), int64(m.IterTime))),
			Model:    m.Name,
			Batch:    m.Batch,
			IterTime: m.IterTime,
		}
	}
	return jobs, nil
}

// eligible validates pool and returns its samples with at most maxGPUs GPUs, without copying
// when all are eligible.
func eligible(pool []Sample, maxGPUs int) ([]Sample, error) {
	n := 0
	for i, s := range pool {
		if s.GPUs <= 0 || s.Duration <= 0 {
			return nil, fmt.Errorf("pool sample %d: GPUs %d and duration %v must be positive", i, s.GPUs, s.Duration)
		}
		if s.GPUs <= maxGPUs {
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("no pool sample needs at most %d GPUs (pool of %d)", maxGPUs, len(pool))
	}
	if n == len(pool) {
		return pool, nil
	}
	out := make([]Sample, 0, n)
	for _, s := range pool {
		if s.GPUs <= maxGPUs {
			out = append(out, s)
		}
	}
	return out, nil
}

// ReadPhillyPool reads the Philly table in r and returns one Sample per valid row, in file
// order, with the row's exact duration. Under opt.SkipInvalid, rows whose duration or GPU
// count is not positive are skipped and counted; otherwise they are errors. The name is used
// in error messages.
func ReadPhillyPool(r io.Reader, name string, opt Options) (pool []Sample, skipped int, err error) {
	rd := NewReader(r, name, FormatPhilly, opt)
	if !rd.readHeader() {
		return nil, 0, rd.err
	}
	var st phillyState
	if err := rd.loadPhilly(&st); err != nil {
		return nil, 0, err
	}
	if len(st.rows) == 0 {
		rd.finish()
		return nil, rd.skipped, rd.err
	}
	pool = make([]Sample, len(st.rows))
	for i, row := range st.rows {
		pool[i] = Sample{GPUs: row.gpus, Duration: row.dur}
	}
	return pool, rd.skipped, nil
}

// JobPool returns the (GPUs, Iters × IterTime) pair of every job, for sampling job sizes
// from an existing trace. Every job must have an IterTime.
func JobPool(jobs []Job) ([]Sample, error) {
	pool := make([]Sample, len(jobs))
	for i, j := range jobs {
		if j.IterTime <= 0 || j.GPUs <= 0 || j.Iters <= 0 {
			return nil, fmt.Errorf("trace: job %d (line %d) has no positive GPUs, iterations and iteration time", j.ID, j.Line)
		}
		hi, lo := bits.Mul64(uint64(j.Iters), uint64(j.IterTime))
		if hi != 0 || lo > math.MaxInt64 {
			return nil, fmt.Errorf("trace: job %d (line %d): duration overflows", j.ID, j.Line)
		}
		pool[i] = Sample{GPUs: j.GPUs, Duration: time.Duration(lo)}
	}
	return pool, nil
}
