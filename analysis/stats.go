package analysis

import (
	"math"
	"slices"
)

// TCrit95 returns the two-sided 95% critical value t_{0.975, dof} of Student's t distribution.
// Values for 1–30 degrees of freedom and for 40, 60 and 120 are tabulated (four decimals); in
// between, the value of the next smaller tabulated dof is used, which is conservative (a
// slightly wider interval); above 120 it is 1.96 (the normal limit). dof < 1 gives NaN.
func TCrit95(dof int) float64 {
	// t_{0.975} for dof = 1..30.
	small := [...]float64{
		12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
		2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
		2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
	}
	switch {
	case dof < 1:
		return math.NaN()
	case dof <= len(small):
		return small[dof-1]
	case dof < 40:
		return small[len(small)-1]
	case dof < 60:
		return 2.0211
	case dof < 120:
		return 2.0003
	case dof == 120:
		return 1.9799
	default:
		return 1.9600
	}
}

// Estimate is a sample mean with the half-width of its 95% confidence interval.
type Estimate struct {
	// Mean is the sample mean (NaN for an empty sample).
	Mean float64
	// Half is the half-width of the 95% Student-t confidence interval, t_{0.975,n−1}·s/√n;
	// 0 when N < 2.
	Half float64
	// N is the sample size.
	N int
}

// HasCI reports whether the estimate has a confidence interval (N ≥ 2).
func (e Estimate) HasCI() bool { return e.N >= 2 }

// Lo returns the lower end of the confidence interval (the mean when there is none).
func (e Estimate) Lo() float64 { return e.Mean - e.Half }

// Hi returns the upper end of the confidence interval (the mean when there is none).
func (e Estimate) Hi() float64 { return e.Mean + e.Half }

// Mean returns the arithmetic mean of xs, or NaN when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// StdDev returns the sample standard deviation of xs (divisor n−1), or NaN when len(xs) < 2.
func StdDev(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// CI95 returns the mean of xs with the half-width of its two-sided 95% confidence interval
// from Student's t distribution with n−1 degrees of freedom: t·s/√n, s the sample standard
// deviation. With fewer than two values the half-width is 0 and HasCI is false.
func CI95(xs []float64) Estimate {
	e := Estimate{Mean: Mean(xs), N: len(xs)}
	if len(xs) >= 2 {
		e.Half = TCrit95(len(xs)-1) * StdDev(xs) / math.Sqrt(float64(len(xs)))
	}
	return e
}

// Quantile returns the q-quantile of xs with the authors' definition sorted(xs)[int(q·n)]
// (clamped to the last element), the same as the pXX fields of summary.json. xs need not be
// sorted; it is not modified. An empty xs gives NaN.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantileSorted(s, q)
}

func quantileSorted(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	i := int(q * float64(len(s)))
	return s[max(0, min(i, len(s)-1))]
}

// ECDF returns the points of the empirical distribution function of xs as a step function:
// the sorted distinct values and, for each, the fraction of values ≤ it. An empty xs gives
// nil slices.
func ECDF(xs []float64) (x, f []float64) {
	if len(xs) == 0 {
		return nil, nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	for i, v := range s {
		if i+1 < len(s) && s[i+1] == v {
			continue
		}
		x = append(x, v)
		f = append(f, float64(i+1)/n)
	}
	return x, f
}
