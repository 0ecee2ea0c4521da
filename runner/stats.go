package runner

import (
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/montanaflynn/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// BootstrapResamples is the number of percentile-bootstrap resamples behind a bootstrap CI.
const BootstrapResamples = 10000

// BootstrapMinRepeats is the number of repeat values from which a CI is a percentile bootstrap
// of the median. Below it the bootstrap only reports the sample range (with 5 values a
// resampled median equals the smallest value with probability 5.8% > 2.5%), so 2 to 9 values
// get a Student-t interval of their mean instead, and one value gets no interval.
const BootstrapMinRepeats = 10

// How a CI was computed (Estimate.Method).
const (
	CIBootstrap = "bootstrap" // percentile bootstrap of the median, seeded
	CIStudentT  = "t"         // mean ± t(0.975, R−1)·s/√R
	CINone      = "none"      // a single value: no interval
)

// Dist summarises a sample of step times (milliseconds) or ratios. Percentiles are
// Hyndman–Fan type 7 (linear interpolation between order statistics, as R's default and
// NumPy's "linear"); Std is the sample standard deviation.
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std,omitempty"`
	P10    float64 `json:"p10"`
	P25    float64 `json:"p25"`
	P75    float64 `json:"p75"`
	P90    float64 `json:"p90"`
}

// IQR returns the interquartile range P75 − P25.
func (d Dist) IQR() float64 { return d.P75 - d.P25 }

// Describe computes the Dist of xs; xs is not modified. An empty sample gives the zero Dist.
func Describe(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	d := Dist{N: len(xs), Median: Median(xs), P10: Quantile(xs, 0.10), P25: Quantile(xs, 0.25),
		P75: Quantile(xs, 0.75), P90: Quantile(xs, 0.90)}
	d.Mean, _ = stats.Mean(xs)
	if len(xs) > 1 {
		d.Std, _ = stats.StandardDeviationSample(xs)
	}
	return d
}

// Quantile returns the type-7 quantile p ∈ [0, 1] of xs (any order; p is clamped): NaN for an
// empty sample.
func Quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	if p <= 0 {
		v, _ := stats.Min(xs)
		return v
	}
	v, err := stats.Percentile(xs, min(p, 1)*100)
	if err != nil {
		return math.NaN()
	}
	return v
}

// Median returns the median of xs (the mean of the two middle values for even n); NaN for an
// empty sample. xs is not modified.
func Median(xs []float64) float64 {
	v, err := stats.Median(xs)
	if err != nil {
		return math.NaN()
	}
	return v
}

// Estimate is a value aggregated over repeats: the median of the per-repeat values with a 95%
// confidence interval whose Method depends on their number (BootstrapMinRepeats).
type Estimate struct {
	Median float64    `json:"median"`
	CI     [2]float64 `json:"ci"`
	// Method is CIBootstrap, CIStudentT or CINone.
	Method string `json:"ci_method,omitempty"`
	// N is the number of repeat values behind the estimate.
	N      int       `json:"n"`
	Values []float64 `json:"values"`
}

// HalfWidth returns the CI's half-width relative to the median (Inf when the median is 0).
func (e Estimate) HalfWidth() float64 {
	if e.Median == 0 {
		return math.Inf(1)
	}
	return (e.CI[1] - e.CI[0]) / 2 / math.Abs(e.Median)
}

// Estimate95 aggregates per-repeat values: their median and a 95% CI — a percentile bootstrap
// of the median from BootstrapResamples resamples drawn with a PCG seeded by seed when there
// are at least BootstrapMinRepeats values, else a Student-t interval of the mean, or none for
// a single value. The same values and seed always give the same interval. It returns the zero
// Estimate for no values.
func Estimate95(values []float64, seed uint64) Estimate {
	n := len(values)
	if n == 0 {
		return Estimate{}
	}
	e := Estimate{Median: Median(values), N: n, Values: slices.Clone(values)}
	switch {
	case n == 1:
		e.CI, e.Method = [2]float64{values[0], values[0]}, CINone
	case n < BootstrapMinRepeats:
		lo, hi := TInterval(values, 0.95)
		e.CI, e.Method = [2]float64{lo, hi}, CIStudentT
	default:
		lo, hi := BootstrapCI(values, BootstrapResamples, 0.95, seed)
		e.CI, e.Method = [2]float64{lo, hi}, CIBootstrap
	}
	return e
}

// TInterval returns the Student-t confidence interval (level e.g. 0.95) of the mean of xs:
// mean ± t(1−α/2, n−1)·s/√n. It needs two values; fewer give NaNs.
func TInterval(xs []float64, level float64) (lo, hi float64) {
	n := len(xs)
	if n < 2 {
		return math.NaN(), math.NaN()
	}
	mean, _ := stats.Mean(xs)
	s, _ := stats.StandardDeviationSample(xs)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-level)/2)
	h := t * s / math.Sqrt(float64(n))
	return mean - h, mean + h
}

// BootstrapCI returns the percentile-bootstrap confidence interval (level e.g. 0.95) of the
// median of xs from resamples resamples. Randomness comes from rand.NewPCG(seed, seed^γ) and
// only its Uint64 method, turned into indices by our own code (uniformIndex), so the interval
// is stable across Go releases. One value gives a degenerate interval [x, x].
func BootstrapCI(xs []float64, resamples int, level float64, seed uint64) (lo, hi float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	if n == 1 || resamples <= 0 {
		return xs[0], xs[0]
	}
	src := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	meds := make([]float64, resamples)
	buf := make([]float64, n)
	for r := range meds {
		for i := range buf {
			buf[i] = xs[uniformIndex(src, uint64(n))]
		}
		meds[r] = Median(buf)
	}
	alpha := (1 - level) / 2
	return Quantile(meds, alpha), Quantile(meds, 1-alpha)
}

// uniformIndex draws an unbiased integer in [0, n) from src (Lemire's multiply-and-reject).
func uniformIndex(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// SeedFor derives a 64-bit seed from identifiers (FNV-1a over the parts, separated by NUL),
// e.g. SeedFor(cellID, "xi-a"): one RNG stream per purpose.
func SeedFor(parts ...string) uint64 {
	h := fnv.New64a()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return h.Sum64()
}
