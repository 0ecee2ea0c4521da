//go:build !unix

package gpu

import "time"

// MonotonicNs returns the time in nanoseconds. Without CLOCK_MONOTONIC it falls back to the
// wall clock, which does not line up with the workload's time.monotonic_ns().
func MonotonicNs() int64 { return time.Now().UnixNano() }
