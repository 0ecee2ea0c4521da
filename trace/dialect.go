package trace

import (
	"fmt"
	"strings"
)

// dialect describes the header of one trace format.
type dialect struct {
	format   Format
	required []string // columns that must be present, in the order the format's files use
	optional []string // columns that may be present
}

// dialects lists the known formats in the order FormatAuto tries them.
var dialects = [...]dialect{
	{
		format:   FormatCanonical,
		required: []string{"job_id", "submit_s", "num_gpu", "model", "batch_size", "iterations"},
		optional: []string{"iteration_time_s"},
	},
	{
		format: FormatMuri,
		required: []string{"job_id", "num_gpu", "submit_time", "iterations", "model_name", "batch_size",
			"duration", "interval", "iteration_time", "resource_time_0", "resource_time_1",
			"resource_time_2", "priority"},
	},
	{
		format:   FormatTiresias,
		required: []string{"job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"},
	},
	{
		format:   FormatPhilly,
		required: []string{"timestamp", "duration", "num_gpus", "gpu_time", "cluster"},
	},
}

// spell returns the dialect's header as its files write it, with optional columns in brackets.
func (d *dialect) spell() string {
	s := strings.Join(d.required, ",")
	for _, o := range d.optional {
		s += "[," + o + "]"
	}
	return s
}

// matches reports whether the set of column names equals the dialect's required columns plus
// any of its optional ones. The names must be distinct.
func (d *dialect) matches(names []string) bool {
	if len(names) < len(d.required) || len(names) > len(d.required)+len(d.optional) {
		return false
	}
	for _, r := range d.required {
		if !contains(names, r) {
			return false
		}
	}
	for _, n := range names {
		if !contains(d.required, n) && !contains(d.optional, n) {
			return false
		}
	}
	return true
}

// contains reports whether s holds x.
func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// knownHeaders describes every dialect's header, for error messages.
func knownHeaders() string {
	var b strings.Builder
	for i := range dialects {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", dialects[i].format, dialects[i].spell())
	}
	return b.String()
}

// dialectOf returns the dialect of format f, which must not be FormatAuto.
func dialectOf(f Format) (*dialect, bool) {
	for i := range dialects {
		if dialects[i].format == f {
			return &dialects[i], true
		}
	}
	return nil, false
}
