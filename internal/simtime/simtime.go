// Package simtime is the simulator's time model: the horizon that every simulated instant stays
// within, and the checked and saturating arithmetic that keeps durations computed from input
// (solo times, remaining times, restart costs, intervals) from overflowing int64 nanoseconds.
//
// Inputs are checked against Horizon where they enter (trace readers, profiles, flags), so a
// valid schedule's instants are all at most Horizon. Horizon is a third of the int64 range, so
// the sum of two instants or durations within it never overflows; where a value is
// derived by multiplication (iterations × step time × slowdown) it saturates at Never instead,
// and the engine reports a schedule that passes the horizon as an error.
package simtime

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// HorizonYears is the horizon in years of 365 days.
const HorizonYears = 100

// Horizon is the latest instant, from the start of a trace, that a simulated schedule may reach:
// 100 years of 365 days (3.1536e18 ns, 34% of the int64 nanosecond range, so that the sum of
// two in-horizon values fits).
const Horizon = HorizonYears * 365 * 24 * time.Hour

// MaxRestart bounds a restart cost (what a preempted job pays to start again): a year.
const MaxRestart = 365 * 24 * time.Hour

// MaxSlowdown bounds a slowdown ξ (a job's step time next to another job over its step time
// alone): 1000. Measured slowdowns of two jobs sharing a GPU are below 10.
const MaxSlowdown = 1000

// Never is what saturating operations return for an instant or duration beyond any horizon.
const Never = time.Duration(math.MaxInt64)

// FromSeconds converts float seconds to a Duration, rounding to the nearest nanosecond. Values
// beyond the int64 range saturate at Never (or its negative); NaN gives Never.
func FromSeconds(s float64) time.Duration { return FromNanos(s * 1e9) }

// FromNanos converts float nanoseconds to a Duration like FromSeconds. It is small enough to be
// inlined in the engine's hot loop. (Below 2^63 no rounding reaches 2^63: floats that large are
// integers.)
func FromNanos(ns float64) time.Duration {
	switch {
	case ns < 0x1p63 && ns >= -0x1p63:
		return time.Duration(math.Round(ns))
	case ns < 0:
		return -Never
	}
	return Never // ≥ 2^63 or NaN
}

// FromNonNegNanos is FromNanos for a value known not to be negative (or NaN, which gives Never):
// one comparison on the way.
func FromNonNegNanos(ns float64) time.Duration {
	if ns < 0x1p63 {
		return time.Duration(math.Round(ns))
	}
	return Never
}

// Add returns a+b for non-negative a and b, saturating at Never.
func Add(a, b time.Duration) time.Duration {
	if b > Never-a {
		return Never
	}
	return a + b
}

// Mul returns d×n for non-negative d and n, saturating at Never.
func Mul(d time.Duration, n int64) time.Duration {
	hi, lo := bits.Mul64(uint64(d), uint64(n))
	if hi != 0 || lo > math.MaxInt64 {
		return Never
	}
	return time.Duration(lo)
}

// Within reports whether the instant t lies in [0, Horizon].
func Within(t time.Duration) bool { return t >= 0 && t <= Horizon }

// Format writes d in the largest unit that keeps it readable in an error message: seconds up to
// a day, then days up to a year, then years ("beyond the horizon" for Never).
func Format(d time.Duration) string {
	const day, year = 24 * time.Hour, 365 * 24 * time.Hour
	switch {
	case d == Never:
		return "more than 292 years"
	case d < day:
		return fmt.Sprintf("%.6g s", d.Seconds())
	case d < year:
		return fmt.Sprintf("%.4g days", float64(d)/float64(day))
	}
	return fmt.Sprintf("%.4g years", float64(d)/float64(year))
}

// ErrBeyond returns the message for an instant or duration past the horizon, e.g. "ends after
// 317.1 years, beyond the 100-year horizon".
func ErrBeyond(what string, d time.Duration) string {
	return fmt.Sprintf("%s %s, beyond the %d-year horizon", what, Format(d), HorizonYears)
}
