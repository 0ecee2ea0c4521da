package trace

import (
	"fmt"
	"github.com/sharebench/sharebench/internal/clip"
	"slices"
	"strings"
)

// CheckModels returns a *SyntaxError naming the first job, in slice order, whose model is
// not in known, for example `trace.csv:7: model: unknown model "x" (known: a, b, c)`.
// The file name is used in the message; Job.Line gives the line.
func CheckModels(jobs []Job, file string, known []string) error {
	for _, j := range jobs {
		if !slices.Contains(known, j.Model) {
			names := slices.Sorted(slices.Values(known))
			return &SyntaxError{File: file, Line: j.Line, Column: "model",
				Msg: fmt.Sprintf("unknown model %s (known: %s)", clip.Quote(j.Model), strings.Join(names, ", "))}
		}
	}
	return nil
}

// DropOversized handles jobs that need more than maxGPUs GPUs, which no cluster of that size
// can run. With drop it returns the other jobs, in order, and how many it dropped (the input
// slice itself when none is dropped). Without drop it returns a *SyntaxError naming the first
// such job and its line.
func DropOversized(jobs []Job, file string, maxGPUs int, drop bool) (kept []Job, dropped int, err error) {
	if maxGPUs <= 0 {
		return nil, 0, fmt.Errorf("trace: %s: cluster size %d is not positive", file, maxGPUs)
	}
	for _, j := range jobs {
		if j.GPUs <= maxGPUs {
			continue
		}
		if !drop {
			return nil, 0, &SyntaxError{File: file, Line: j.Line, Column: "num_gpu",
				Msg: fmt.Sprintf("job %d needs %d GPUs, more than the cluster's %d", j.ID, j.GPUs, maxGPUs)}
		}
		dropped++
	}
	if dropped == 0 {
		return jobs, 0, nil
	}
	kept = make([]Job, 0, len(jobs)-dropped)
	for _, j := range jobs {
		if j.GPUs <= maxGPUs {
			kept = append(kept, j)
		}
	}
	return kept, dropped, nil
}
