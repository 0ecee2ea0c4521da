package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// niceTicks places about six labelled ticks on round values (1, 2, 2.5 or 5 × 10^k) and one
// unlabelled minor tick between each pair.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: tickLabel(lo, 1)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	first := math.Ceil(lo/step - 1e-9)
	for i := 0; ; i++ {
		v := (first + float64(i)) * step
		if v > hi+step*1e-9 {
			break
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: tickLabel(v, step)})
		if m := v + step/2; m <= hi {
			ticks = append(ticks, plot.Tick{Value: m})
		}
	}
	if first*step-step/2 >= lo {
		ticks = append(ticks, plot.Tick{Value: first*step - step/2})
	}
	return ticks
}

// tickLabel formats v with as many decimals as the tick step needs.
func tickLabel(v, step float64) string {
	dec := 0
	for s := step; dec < 6 && math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, math.Abs(s)); s *= 10 {
		dec++
	}
	if math.Abs(v) < step*1e-9 {
		v = 0
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.HasPrefix(s, "-") {
		s = "−" + s[1:]
	}
	return s
}

// logTicks places ticks at m × 10^k (m = 1..9) and labels 1, 2 and 5 × 10^k when the axis
// spans at most three decades, else only the powers of ten.
type logTicks struct{}

// Ticks implements plot.Ticker. lo must be positive.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi >= lo) {
		return nil
	}
	k0 := int(math.Floor(math.Log10(lo)))
	k1 := int(math.Ceil(math.Log10(hi)))
	dense := k1-k0 <= 3
	var ticks []plot.Tick
	for k := k0; k <= k1; k++ {
		p := math.Pow(10, float64(k))
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (dense && (m == 2 || m == 5)) {
				t.Label = logLabel(m, k)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// logLabel writes m × 10^k: plainly for 10⁻³ ≤ v < 10⁵ ("0.02", "5000"), else with a
// superscript power ("10⁶", "2×10⁶"), never as "1e+06" or "10000000".
func logLabel(m, k int) string {
	if k >= -3 && k < 5 {
		return strconv.FormatFloat(float64(m)*math.Pow(10, float64(k)), 'f', max(0, -k), 64)
	}
	sup := strings.NewReplacer("-", "⁻", "0", "⁰", "1", "¹", "2", "²", "3", "³", "4", "⁴", "5", "⁵", "6", "⁶", "7", "⁷", "8", "⁸", "9", "⁹")
	p := "10" + sup.Replace(strconv.Itoa(k))
	if m == 1 {
		return p
	}
	return strconv.Itoa(m) + "×" + p
}

// log10Ticks labels an axis whose data are log10 values as a log axis: ticks of logTicks at
// the corresponding powers. Figures draw log axes this way, on a linear scale of log10(x),
// because gonum's LogScale places the axis label's glyph box at the linear midpoint of the
// range, which distorts the layout.
type log10Ticks struct{}

// Ticks implements plot.Ticker.
func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := logTicks{}.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
	}
	return ts
}

// Scale selects linear or logarithmic drawing of an axis.
type Scale int

const (
	// ScaleAuto draws the axis on a log scale when its positive values span more than a
	// decade (largest / smallest > 10), else linearly.
	ScaleAuto Scale = iota
	// ScaleLinear always draws the axis linearly.
	ScaleLinear
	// ScaleLog always draws the axis on a log scale.
	ScaleLog
)

// String returns "auto", "linear" or "log".
func (s Scale) String() string {
	switch s {
	case ScaleLinear:
		return "linear"
	case ScaleLog:
		return "log"
	}
	return "auto"
}

// ParseScale accepts auto, linear (or lin) and log.
func ParseScale(s string) (Scale, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return ScaleAuto, nil
	case "linear", "lin":
		return ScaleLinear, nil
	case "log":
		return ScaleLog, nil
	}
	return ScaleAuto, fmt.Errorf("unknown axis scale %q (known: auto, linear, log)", s)
}

// spansDecades reports whether the positive values of vs span more than a decade.
func spansDecades(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return hi > 10*lo
}

// decide resolves ScaleAuto for the values vs: true for a log axis.
func (s Scale) decide(vs []float64) bool {
	switch s {
	case ScaleLog:
		return true
	case ScaleLinear:
		return false
	}
	return spansDecades(vs)
}

// timeUnit picks the unit of a linear time axis whose largest value is maxS seconds, so that
// tick labels stay short: s below 20 min, min below 10 h, h below 4 days, else days.
func timeUnit(maxS float64) (name string, div float64) {
	switch {
	case maxS >= 4*86400:
		return "days", 86400
	case maxS >= 36000:
		return "h", 3600
	case maxS >= 1200:
		return "min", 60
	}
	return "s", 1
}

// A namedTime is a duration with a short label, a candidate tick of a log time axis.
type namedTime struct {
	s     float64
	label string
	major bool // labelled whenever it is in range; the others only when few majors are
}

// timeMarks are the candidate ticks of a log time axis, roughly a decade apart for the majors
// (10 h is left out: it sits too close to 1 day to be labelled next to it).
var timeMarks = []namedTime{
	{0.001, "1 ms", true}, {0.002, "2 ms", false}, {0.005, "5 ms", false},
	{0.01, "10 ms", true}, {0.02, "20 ms", false}, {0.05, "50 ms", false},
	{0.1, "0.1 s", true}, {0.2, "0.2 s", false}, {0.5, "0.5 s", false},
	{1, "1 s", true}, {2, "2 s", false}, {5, "5 s", false},
	{10, "10 s", true}, {30, "30 s", false},
	{60, "1 min", true}, {120, "2 min", false}, {300, "5 min", false},
	{600, "10 min", true}, {1800, "30 min", false},
	{3600, "1 h", true}, {2 * 3600, "2 h", false}, {6 * 3600, "6 h", false}, {12 * 3600, "12 h", false},
	{86400, "1 day", true}, {2 * 86400, "2 days", false}, {5 * 86400, "5 days", false},
	{10 * 86400, "10 days", true}, {20 * 86400, "20 days", false}, {50 * 86400, "50 days", false},
	{100 * 86400, "100 days", true}, {200 * 86400, "200 days", false}, {500 * 86400, "500 days", false},
	{1000 * 86400, "1000 days", true}, {2000 * 86400, "2000 days", false}, {5000 * 86400, "5000 days", false},
	{10000 * 86400, "10⁴ days", true},
}

// timeLogTicks labels a log time axis whose data are log10(seconds) with durations in
// natural units (1 s, 1 min, 1 h, 1 day, 10 days, …). The minor marks are labelled too when
// fewer than three majors are in range. With zero, the position at is a floor that stands for
// 0 (a tick labelled "0").
type timeLogTicks struct {
	zero bool
	at   float64
}

// Ticks implements plot.Ticker.
func (t timeLogTicks) Ticks(lo, hi float64) []plot.Tick {
	in := func(v float64) bool { return v >= lo-1e-9 && v <= hi+1e-9 }
	majors := 0
	for _, m := range timeMarks {
		if m.major && in(math.Log10(m.s)) {
			majors++
		}
	}
	var ticks []plot.Tick
	for _, m := range timeMarks {
		v := math.Log10(m.s)
		if !in(v) {
			continue
		}
		tk := plot.Tick{Value: v}
		if m.major || majors < 3 {
			tk.Label = m.label
		}
		ticks = append(ticks, tk)
	}
	return withZero(ticks, t.zero, t.at)
}

// withZero, when zero, replaces the tick at the floor position at by one labelled "0" and
// drops the labels that would crowd it (within a fifth of a decade).
func withZero(ticks []plot.Tick, zero bool, at float64) []plot.Tick {
	if !zero {
		return ticks
	}
	out := []plot.Tick{{Value: at, Label: "0"}}
	for _, tk := range ticks {
		switch d := math.Abs(tk.Value - at); {
		case d < 1e-9:
			continue
		case d < 0.2:
			tk.Label = ""
		}
		out = append(out, tk)
	}
	return out
}

// zeroLog10Ticks is log10Ticks with a floor tick labelled "0" (see withZero).
type zeroLog10Ticks struct {
	zero bool
	at   float64
}

// Ticks implements plot.Ticker.
func (t zeroLog10Ticks) Ticks(lo, hi float64) []plot.Tick {
	return withZero(log10Ticks{}.Ticks(lo, hi), t.zero, t.at)
}

// valueAxis maps the values of one quantity onto a plot axis: linearly in a display unit, or
// as log10 of the value with values below a floor drawn at the floor.
type valueAxis struct {
	log   bool
	time  bool    // the values are seconds
	unit  string  // linear time axes: the display unit
	div   float64 // linear axes: value / div is drawn
	floor float64 // log axes: the smallest value drawn (values below are drawn here)
	zero  bool    // log axes: the floor stands for 0 and its tick is labelled "0"
}

// pos returns the drawn coordinate of v.
func (a valueAxis) pos(v float64) float64 {
	if a.log {
		return math.Log10(max(v, a.floor))
	}
	return v / a.div
}

// newValueAxis builds the axis of values vs (seconds when isTime), on a log scale as s
// decides. On a log axis the floor is the power of ten at or below the smallest positive
// value, one decade lower when zeroBelow and some value is ≤ 0 (the floor then stands for 0).
func newValueAxis(vs []float64, isTime bool, s Scale, zeroBelow bool) (valueAxis, error) {
	a := valueAxis{time: isTime, div: 1, log: s.decide(vs)}
	maxV, minPos, nonPos := 0.0, math.Inf(1), false
	for _, v := range vs {
		if math.IsNaN(v) {
			continue
		}
		maxV = max(maxV, v)
		if v > 0 {
			minPos = min(minPos, v)
		} else {
			nonPos = true
		}
	}
	if !a.log {
		if isTime {
			a.unit, a.div = timeUnit(maxV)
		}
		return a, nil
	}
	if math.IsInf(minPos, 1) {
		return a, fmt.Errorf("a log axis needs positive values")
	}
	a.floor = math.Pow(10, math.Floor(math.Log10(minPos)+1e-9))
	if zeroBelow && nonPos {
		a.floor /= 10
		a.zero = true
	}
	return a, nil
}

// label returns the axis label for quantity q ("average JCT") with unit u for non-time
// values ("%", or "" for counts): linear time axes carry their display unit, log time axes
// say "log scale" (their ticks carry the units).
func (a valueAxis) label(q, u string) string {
	var parts []string
	switch {
	case a.time && !a.log:
		parts = append(parts, a.unit)
	case !a.time && u != "":
		parts = append(parts, u)
	}
	if a.log {
		parts = append(parts, "log scale")
	}
	if len(parts) == 0 {
		return q
	}
	return q + " (" + strings.Join(parts, ", ") + ")"
}

// ticker returns the tick marker of the axis.
func (a valueAxis) ticker() plot.Ticker {
	at := 0.0
	if a.log {
		at = math.Log10(a.floor)
	}
	switch {
	case a.log && a.time:
		return timeLogTicks{zero: a.zero, at: at}
	case a.log:
		return zeroLog10Ticks{zero: a.zero, at: at}
	}
	return niceTicks{}
}
