package runner

import (
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// BootstrapResamples is the number of percentile-bootstrap resamples behind every CI.
const BootstrapResamples = 10000

// Dist summarises a sample of step times (milliseconds) or ratios. Percentiles are
// Hyndman–Fan type 7 (linear interpolation between order statistics, as R's default and
// NumPy's "linear").
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
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
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Dist{
		N: len(s), Median: Quantile(s, 0.5), Mean: sum / float64(len(s)),
		P10: Quantile(s, 0.10), P25: Quantile(s, 0.25), P75: Quantile(s, 0.75), P90: Quantile(s, 0.90),
	}
}

// Quantile returns the type-7 quantile p ∈ [0, 1] of an ascending sorted sample:
// h = (n−1)p, Q = x[⌊h⌋] + (h−⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]). It returns NaN for an empty sample.
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	p = min(max(p, 0), 1)
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Median returns the median of xs (type 7: the mean of the two middle values for even n);
// NaN for an empty sample. xs is not modified.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Quantile(s, 0.5)
}

// Estimate is a value aggregated over repeats: the median of the per-repeat values with a
// percentile-bootstrap 95% confidence interval.
type Estimate struct {
	Median float64    `json:"median"`
	CI     [2]float64 `json:"ci"`
	// N is the number of repeat values behind the estimate.
	N      int       `json:"n"`
	Values []float64 `json:"values"`
}

// Estimate95 aggregates per-repeat values: their median and a bootstrap 95% CI of the median
// from BootstrapResamples resamples drawn with a PCG seeded by seed. The same values and seed
// always give the same interval. It returns the zero Estimate for no values.
func Estimate95(values []float64, seed uint64) Estimate {
	if len(values) == 0 {
		return Estimate{}
	}
	lo, hi := BootstrapCI(values, BootstrapResamples, 0.95, seed)
	return Estimate{Median: Median(values), CI: [2]float64{lo, hi}, N: len(values), Values: slices.Clone(values)}
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
		slices.Sort(buf)
		meds[r] = Quantile(buf, 0.5)
	}
	slices.Sort(meds)
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
