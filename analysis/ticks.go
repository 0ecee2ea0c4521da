package analysis

import (
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
				t.Label = strconv.FormatFloat(v, 'f', max(0, -k), 64)
				if v >= 1e7 {
					t.Label = strconv.FormatFloat(v, 'g', -1, 64)
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
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
