package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// steps builds n back-to-back steps of d ns starting at t0.
func steps(t0, d int64, n int) []Step {
	out := make([]Step, n)
	for i := range out {
		out[i] = Step{T0Ns: t0 + int64(i)*d, T1Ns: t0 + int64(i+1)*d, StepMs: float64(d) / 1e6, Samples: 1}
	}
	return out
}

func TestOverlapWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		jobs   [][]Step
		lo, hi int64
		ok     bool
	}{
		{"solo: its own span", [][]Step{steps(100, 10, 5)}, 100, 150, true},
		{"pair: latest start, earliest end", [][]Step{steps(100, 10, 10), steps(125, 20, 3)}, 125, 185, true},
		{"no overlap", [][]Step{steps(0, 10, 2), steps(100, 10, 2)}, 100, 20, false},
		{"a job without steps", [][]Step{steps(0, 10, 2), nil}, 0, 0, false},
		{"no jobs", nil, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := OverlapWindow(tt.jobs)
			if ok != tt.ok || (ok && (lo != tt.lo || hi != tt.hi)) {
				t.Errorf("OverlapWindow = [%d, %d] %v, want [%d, %d] %v", lo, hi, ok, tt.lo, tt.hi, tt.ok)
			}
		})
	}
}

func TestInWindowTrims(t *testing.T) {
	t.Parallel()
	a := steps(0, 10, 10) // [0,10) ... [90,100)
	tests := []struct {
		name   string
		lo, hi int64
		trim   int
		want   []int64 // T0 of kept steps
	}{
		{"whole span, trim 2", 0, 100, 2, []int64{20, 30, 40, 50, 60, 70}},
		{"partial steps at both ends are dropped", 5, 95, 0, []int64{10, 20, 30, 40, 50, 60, 70, 80}},
		{"partial ends, then trim 2", 5, 95, 2, []int64{30, 40, 50, 60}},
		{"too few to trim", 0, 40, 2, nil},
		{"exactly 2*trim+1", 0, 50, 2, []int64{20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			for _, s := range InWindow(a, tt.lo, tt.hi, tt.trim) {
				got = append(got, s.T0Ns)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("InWindow mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMeetsWindow(t *testing.T) {
	t.Parallel()
	w := Window{MinSteps: 30, MinSeconds: 20, FloorSteps: 10, Trim: 2, MaxSeconds: 120}
	sec := int64(1e9)
	tests := []struct {
		name string
		kept []Step
		want bool
	}{
		{"30 short steps", steps(0, 1e6, 30), true},
		{"29 short steps", steps(0, 1e6, 29), false},
		{"10 steps over 20 s", steps(0, 2*sec, 10), true},
		{"9 steps over 27 s: below the floor", steps(0, 3*sec, 9), false},
		{"15 steps over 15 s", steps(0, sec, 15), false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MeetsWindow(tt.kept, w); got != tt.want {
				t.Errorf("MeetsWindow = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWindowSatisfied(t *testing.T) {
	t.Parallel()
	w := Window{MinSteps: 5, MinSeconds: 1e6, FloorSteps: 1, Trim: 2}
	// A runs 20 steps of 10 ns from 0; B starts at 50 with steps of 30 ns.
	a := steps(0, 10, 20)
	tests := []struct {
		name string
		b    []Step
		want bool
	}{
		{"B too short: window [50, 170] holds 2 B steps", steps(50, 30, 4), false},
		{"B long enough but A ends first", steps(50, 30, 20), false},
		{"both have 5 steps after trimming", steps(0, 10, 20), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WindowSatisfied([][]Step{a, tt.b}, w); got != tt.want {
				t.Errorf("WindowSatisfied = %v, want %v", got, tt.want)
			}
		})
	}
}
