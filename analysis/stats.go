package analysis

import (
	"math"
	"slices"

	"github.com/montanaflynn/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// TCrit95 returns the two-sided 95% critical value t_{0.975, dof} of Student's t distribution,
// the exact quantile from gonum's distuv.StudentsT. dof < 1 gives NaN.
func TCrit95(dof int) float64 {
	if dof < 1 {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(dof)}.Quantile(0.975)
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
	m, err := stats.Mean(xs)
	if err != nil {
		return math.NaN()
	}
	return m
}

// StdDev returns the sample standard deviation of xs (divisor n−1), or NaN when len(xs) < 2.
func StdDev(xs []float64) float64 {
	s, err := stats.StandardDeviationSample(xs)
	if err != nil {
		return math.NaN()
	}
	return s
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
// sorted; it is not modified. An empty xs gives NaN. It stays here because no library offers
// this definition: stats.Percentile interpolates (Hyndman–Fan type 7) and
// stats.PercentileNearestRank takes sorted(xs)[⌈q·n⌉−1], which differs whenever q·n is an
// integer (the median of an even sample, p90 of 10 jobs).
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
// nil slices. (gonum's stat.CDF evaluates the ECDF at one point; the whole step function is a
// single pass over the sorted sample.)
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
