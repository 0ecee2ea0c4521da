package analysis

import (
	"math"
	"regexp"
	"slices"
	"testing"

	"gonum.org/v1/plot"
)

func labels(ts []plot.Tick) []string {
	var out []string
	for _, t := range ts {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

func TestTimeLogTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lo, hi float64 // seconds
		want   []string
	}{
		{5, 200 * 86400, []string{"10 s", "1 min", "10 min", "1 h", "1 day", "10 days", "100 days"}},
		// Fewer than three decades: the in-between marks are labelled too.
		{3 * 3600, 40 * 86400, []string{"6 h", "12 h", "1 day", "2 days", "5 days", "10 days", "20 days"}},
	}
	for _, tc := range tests {
		got := labels(timeLogTicks{}.Ticks(math.Log10(tc.lo), math.Log10(tc.hi)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("[%v s, %v s]: labels %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	// With a floor standing for 0 at 1 s: "0" there, and no label crowding it.
	got := labels(timeLogTicks{zero: true, at: 0}.Ticks(0, 4))
	if want := []string{"0", "10 s", "1 min", "10 min", "1 h"}; !slices.Equal(got, want) {
		t.Errorf("zero floor: labels %q, want %q", got, want)
	}
}

func TestLogLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m, k int
		want string
	}{{1, 0, "1"}, {5, 2, "500"}, {2, -2, "0.02"}, {1, 4, "10000"}, {1, 5, "10⁵"}, {2, 7, "2×10⁷"}, {1, -4, "10⁻⁴"}} {
		if got := logLabel(tc.m, tc.k); got != tc.want {
			t.Errorf("logLabel(%d, %d) = %q, want %q", tc.m, tc.k, got, tc.want)
		}
	}
	for _, tk := range (logTicks{}).Ticks(1, 1e9) {
		if regexp.MustCompile(`\d{6}|e\+`).MatchString(tk.Label) {
			t.Errorf("unreadable log label %q", tk.Label)
		}
	}
}

func TestValueAxis(t *testing.T) {
	t.Parallel()
	// Auto: log only when the positive values span more than a decade.
	for _, tc := range []struct {
		vs  []float64
		s   Scale
		log bool
	}{
		{[]float64{100, 900}, ScaleAuto, false},
		{[]float64{100, 1001}, ScaleAuto, true},
		{[]float64{0, 5, 60}, ScaleAuto, true},
		{[]float64{100, 1001}, ScaleLinear, false},
		{[]float64{100, 200}, ScaleLog, true},
	} {
		a, err := newValueAxis(tc.vs, true, tc.s, false)
		if err != nil || a.log != tc.log {
			t.Errorf("%v %v: log = %v (err %v), want %v", tc.vs, tc.s, a.log, err, tc.log)
		}
	}
	if _, err := newValueAxis([]float64{0, 0}, false, ScaleLog, false); err == nil {
		t.Error("a log axis of zeros gave no error")
	}
	// Log floor: the power of ten at or below the smallest value; with zeros drawn below it,
	// one decade lower, and 0 is drawn at the floor.
	a, _ := newValueAxis([]float64{0, 30, 5000}, true, ScaleLog, true)
	if a.floor != 1 || !a.zero || a.pos(0) != 0 || a.pos(5000) != math.Log10(5000) {
		t.Errorf("floor %v zero %v pos(0) %v", a.floor, a.zero, a.pos(0))
	}
	if a.label("queueing delay", "") != "queueing delay (log scale)" {
		t.Errorf("label %q", a.label("queueing delay", ""))
	}
	// Linear time axes pick a unit from the largest value.
	for _, tc := range []struct {
		maxS float64
		unit string
	}{{600, "s"}, {7200, "min"}, {2 * 86400, "h"}, {30 * 86400, "days"}} {
		a, _ := newValueAxis([]float64{tc.maxS / 2, tc.maxS}, true, ScaleLinear, false)
		if a.unit != tc.unit || a.label("average JCT", "") != "average JCT ("+tc.unit+")" {
			t.Errorf("max %v s: unit %q, label %q", tc.maxS, a.unit, a.label("average JCT", ""))
		}
	}
	if s, err := ParseScale("log"); err != nil || s != ScaleLog || s.String() != "log" {
		t.Errorf("ParseScale(log) = %v, %v", s, err)
	}
	if _, err := ParseScale("cubic"); err == nil {
		t.Error("ParseScale(cubic) gave no error")
	}
}
