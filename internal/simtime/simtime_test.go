package simtime

import (
	"math"
	"testing"
	"time"
)

func TestFromSeconds(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want time.Duration
	}{
		{0, 0}, {1.5, 1500 * time.Millisecond}, {1e-9, 1}, {4e-10, 0}, {-2, -2 * time.Second},
		{9.2e9, time.Duration(9.2e18)}, {9.3e9, Never}, {1e300, Never}, {-1e300, -Never},
		{math.Inf(1), Never}, {math.Inf(-1), -Never}, {math.NaN(), Never},
		{9223372036.854775807, Never}, // rounds to 2^63
	} {
		if got := FromSeconds(c.s); got != c.want {
			t.Errorf("FromSeconds(%g) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestFromNonNegNanos(t *testing.T) {
	for _, ns := range []float64{0, 0.5, 1.5, 1e18, 0x1p63 - 1024} {
		if got, want := FromNonNegNanos(ns), FromNanos(ns); got != want {
			t.Errorf("FromNonNegNanos(%g) = %d, want %d", ns, got, want)
		}
	}
	for _, ns := range []float64{0x1p63, 1e300, math.Inf(1), math.NaN()} {
		if got := FromNonNegNanos(ns); got != Never {
			t.Errorf("FromNonNegNanos(%g) = %d, want Never", ns, got)
		}
	}
}

func TestAddMul(t *testing.T) {
	if got := Add(Horizon, Horizon); got != 2*Horizon {
		t.Errorf("Add(H, H) = %v", got)
	}
	if got := Add(Never-1, 2); got != Never {
		t.Errorf("Add saturates: got %v", got)
	}
	if got := Mul(time.Second, 1e9); got != 1e9*time.Second {
		t.Errorf("Mul = %v", got)
	}
	if got := Mul(1000*time.Second, 1e12); got != Never {
		t.Errorf("Mul(1000 s, 1e12) = %v, want Never", got)
	}
	if got := Mul(1, math.MaxInt64); got != Never {
		t.Errorf("Mul(1, max) = %v, want Never (the range ends at Never itself)", got)
	}
	if got := Mul(2, 1<<62); got != Never {
		t.Errorf("Mul(2, 2^62) = %v, want Never", got)
	}
	if Horizon > Never/2 {
		t.Errorf("Horizon %v: the sum of two in-horizon values overflows", Horizon)
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		90 * time.Second: "90 s",
		36 * time.Hour:   "1.5 days",
		Horizon:          "100 years",
		Never:            "more than 292 years",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}
