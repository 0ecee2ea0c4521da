package trace

import (
	"cmp"
	"fmt"
	"github.com/sharebench/sharebench/internal/clip"
	"slices"
	"time"
)

// JobID identifies a job within one trace.
type JobID int64

// Job is the immutable specification of one training job.
type Job struct {
	ID       JobID
	Submit   time.Duration // offset from trace start
	GPUs     int           // gang size
	Iters    int64         // total iterations (optimizer steps)
	Model    string        // model key as in the trace, e.g. "resnet18", "vgg16", "bert"
	Batch    int           // per-GPU batch; 0 = not given by the trace (the profile's default batch applies)
	IterTime time.Duration // exclusive iteration time given by the trace; 0 if none
	Line     int           // 1-based source line in the trace file; 0 for generated jobs
	// Stages is what Muri's dialect says of the job beyond the other dialects' columns, which
	// the Muri simulator's AntMan reads; nil for the other dialects. Readers intern it: jobs
	// with the same values share one, which must not be modified.
	Stages *Stages
}

// Stages splits one iteration of a job into the time it spends on each resource, and gives its
// AntMan priority: Muri's resource_time_0..2 and priority columns. Muri's simulator reads the
// three times as data loading, GPU computation and communication (run_sim.py
// antman_calc_iter_time) and treats priority 0 as resource-guaranteed and any other as
// opportunistic.
type Stages struct {
	Time     [3]time.Duration
	Priority int
	// Duration is the duration column in whole milliseconds, as the lineage reads it: Muri-S
	// orders a job that never ran by it rather than by its iterations.
	Duration time.Duration
}

// Opportunistic reports whether the job is one of AntMan's opportunistic jobs (priority ≠ 0).
func (s *Stages) Opportunistic() bool { return s.Priority != 0 }

// Sort orders jobs by (Submit, ID), the order in which the simulator sees them. It is stable,
// so jobs that compare equal keep their relative order.
func Sort(jobs []Job) { slices.SortStableFunc(jobs, Compare) }

// Compare orders two jobs by (Submit, ID).
func Compare(a, b Job) int {
	if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Format names a trace dialect.
type Format int

const (
	// FormatAuto detects the dialect from the header line.
	FormatAuto Format = iota
	// FormatCanonical is sharebench's own CSV: times in seconds, written by [Write].
	FormatCanonical
	// FormatMuri is the 13-column CSV of Muri and of the SJF-BSBF testbed: times in milliseconds.
	FormatMuri
	// FormatTiresias is the 7-column CSV of the Tiresias simulator: times in seconds, no batch.
	FormatTiresias
	// FormatPhilly is the cleaned Philly job table of the Pollux artifact, mapped to jobs by a
	// seeded rule (see [Options]).
	FormatPhilly
)

// formatNames lists the names of the formats, indexed by Format.
var formatNames = [...]string{
	FormatAuto:      "auto",
	FormatCanonical: "canonical",
	FormatMuri:      "muri",
	FormatTiresias:  "tiresias",
	FormatPhilly:    "philly",
}

// String returns the name of f as accepted by [ParseFormat].
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat returns the format named s: "auto", "canonical", "muri", "tiresias" or "philly".
func ParseFormat(s string) (Format, error) {
	for f, name := range formatNames {
		if s == name {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("trace: unknown format %s (known: auto, canonical, muri, tiresias, philly)", clip.Quote(s))
}
