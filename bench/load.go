package bench

import (
	"fmt"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// TraceStats describes a trace as the simulator sees it: job durations are the iterations times
// the exclusive step time the simulator uses (the profile's, at the job's default
// configuration), not the trace's own iteration times.
type TraceStats struct {
	// Jobs is the number of jobs.
	Jobs int `json:"jobs"`
	// SpanS is the arrival span: the last submit time minus the first, in seconds.
	SpanS float64 `json:"arrival_span_s"`
	// GPUSeconds is Σ GPUs × exclusive duration over the jobs.
	GPUSeconds float64 `json:"gpu_seconds"`
	// MeanDurationS is the mean exclusive duration of a job in seconds.
	MeanDurationS float64 `json:"mean_duration_s"`
	// MaxGPUs is the largest gang size.
	MaxGPUs int `json:"max_gpus"`
}

// OfferedLoad is GPUSeconds ÷ (gpus × SpanS): the fraction of a cluster of that many GPUs the
// trace asks for over its arrival span (docs/paper.md §9.1). Above 1 the queue grows for the whole
// trace. It is 0 for a trace whose jobs all arrive at once.
func (s TraceStats) OfferedLoad(gpus int) float64 {
	if s.SpanS <= 0 || gpus <= 0 {
		return 0
	}
	return s.GPUSeconds / (float64(gpus) * s.SpanS)
}

// soloStep returns the exclusive time per iteration the simulator gives job j: the profile's
// step time of the job's mapped configuration at the largest sub-batch whose memory fits in
// memBytes (the simulator's default option), else the trace's iteration time. This mirrors the
// simulator's job setup (sim/setup.go); a job the simulator would reject is an error here too.
func soloStep(j trace.Job, prof *profile.Table, mm *profile.ModelMap, memBytes int64) (time.Duration, error) {
	if prof != nil {
		model, batch := mm.Resolve(j.Model, j.Batch)
		if prof.Model(model) == nil {
			return 0, fmt.Errorf("job %d: model %q (trace model %q) is not in the profile", j.ID, model, j.Model)
		}
		if batch == 0 {
			batch = prof.DefaultBatch(model)
		}
		for _, sub := range prof.SubBatches(model, batch) {
			c := profile.Config{Model: model, Batch: batch, SubBatch: sub}
			step, ok := prof.IterTime(c, j.GPUs)
			if !ok {
				continue
			}
			if mem, _, _ := prof.Mem(c); mem > memBytes {
				continue
			}
			return step, nil
		}
	}
	if j.IterTime <= 0 {
		return 0, fmt.Errorf("job %d: no step time for model %q on %d GPUs in the profile, and the trace gives none", j.ID, j.Model, j.GPUs)
	}
	return j.IterTime, nil
}

// Stats computes the TraceStats of jobs under a profile, model map and GPU memory, as the
// simulator would run them.
func Stats(jobs []trace.Job, prof *profile.Table, mm *profile.ModelMap, memBytes int64) (TraceStats, error) {
	var s TraceStats
	if len(jobs) == 0 {
		return s, nil
	}
	first, last := jobs[0].Submit, jobs[0].Submit
	var total float64
	for _, j := range jobs {
		step, err := soloStep(j, prof, mm, memBytes)
		if err != nil {
			return TraceStats{}, err
		}
		d := float64(j.Iters) * step.Seconds()
		total += d
		s.GPUSeconds += float64(j.GPUs) * d
		first, last = min(first, j.Submit), max(last, j.Submit)
		s.MaxGPUs = max(s.MaxGPUs, j.GPUs)
	}
	s.Jobs = len(jobs)
	s.SpanS = (last - first).Seconds()
	s.MeanDurationS = total / float64(len(jobs))
	return s, nil
}
