package trace

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestParseFixedRandom checks parseFixed against exact big-integer arithmetic on random
// numbers of up to 24 integer and 12 fraction digits at every scale, around the overflow
// bound and past the 19 digits up to which it checks for overflow once.
func TestParseFixedRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		return b.String()
	}
	maxMag := new(big.Int).SetInt64(math.MaxInt64)
	for range 200_000 {
		intPart, frac := digits(rng.IntN(25)), ""
		if rng.IntN(2) == 0 {
			frac = digits(rng.IntN(13))
		}
		if intPart == "" && frac == "" {
			continue
		}
		scale := rng.IntN(10)
		sign := [3]string{"", "-", "+"}[rng.IntN(3)]
		in := sign + intPart
		if frac != "" || rng.IntN(4) == 0 {
			in += "." + frac
		}
		// Reference: (int part and the first scale fraction digits) as one integer.
		padded := frac + strings.Repeat("0", scale)
		mag, _ := new(big.Int).SetString("0"+intPart+padded[:scale], 10)
		var want int64
		wantErr := numOK
		switch {
		case strings.Trim(padded[scale:], "0") != "":
			wantErr = numPrecision
		case mag.Cmp(maxMag) > 0:
			wantErr = numRange
		default:
			want = mag.Int64()
			if sign == "-" {
				want = -want
			}
		}
		got, err := parseFixed([]byte(in), scale)
		// An overflow is found before a nonzero digit below the scale.
		if err == numRange && wantErr == numPrecision && mag.Cmp(maxMag) > 0 {
			continue
		}
		if got != want || err != wantErr {
			t.Fatalf("parseFixed(%q, %d) = %d, %d; want %d, %d", in, scale, got, err, want, wantErr)
		}
	}
}
