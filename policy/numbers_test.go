package policy

import (
	"cmp"
	"math"
	"testing"
	"time"
)

// TestRemAtClamp pins RemAt's clamp at zero to math.Max(0, ·) bit for bit, negative zero, NaN
// and infinities included: keys and finish times come from it.
func TestRemAtClamp(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 1e300, -1e300, math.Inf(1), math.Inf(-1), math.NaN(), 5e-324}
	for _, rem := range vals {
		for _, rate := range vals {
			p := Progress{Rem: rem, Rate: rate, At: time.Second}
			got := p.RemAt(3 * time.Second)
			want := math.Max(0, rem-2*rate)
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("Rem %g Rate %g: RemAt = %g (%#x), want %g (%#x)", rem, rate, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
}

// TestCmpA pins cmpA to cmp.Compare on every pair of special and ordinary values.
func TestCmpA(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 1e300, -1e300, math.Inf(1), math.Inf(-1), math.NaN(), 5e-324}
	for _, a := range vals {
		for _, b := range vals {
			if got, want := cmpA(a, b), cmp.Compare(a, b); got != want {
				t.Errorf("cmpA(%g, %g) = %d, want %d", a, b, got, want)
			}
		}
	}
}
