//go:build unix

package gpu

import "golang.org/x/sys/unix"

// MonotonicNs returns CLOCK_MONOTONIC in nanoseconds: the clock of Python's
// time.monotonic_ns() and of every step timestamp in protocol v1.
func MonotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
