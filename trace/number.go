package trace

import (
	"math"
	"strconv"
)

// numErr classifies why a field is not a valid number.
type numErr int

const (
	numOK        numErr = iota
	numEmpty            // the field is empty
	numSyntax           // not a decimal number
	numNotFinite        // NaN or an infinity
	numRange            // the scaled value does not fit in an int64
	numPrecision        // non-zero digits below the unit's precision
)

// isDigit reports whether c is an ASCII decimal digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isNonFinite reports whether b spells NaN or an infinity, ignoring case.
func isNonFinite(b []byte) bool {
	if len(b) != 3 && len(b) != 8 {
		return false
	}
	var lower [8]byte
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	s := string(lower[:len(b)])
	return s == "nan" || s == "inf" || s == "infinity"
}

// parseFixed parses the decimal number in b (an optional sign, digits, an optional fraction;
// no exponent) and returns its value multiplied by 10^scale, computed exactly in integer
// arithmetic. Fractional digits below 10^-scale must be zero: nothing is ever rounded.
func parseFixed(b []byte, scale int) (int64, numErr) {
	if len(b) == 0 {
		return 0, numEmpty
	}
	neg := false
	i := 0
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		i = 1
	}
	if isNonFinite(b[i:]) {
		return 0, numNotFinite
	}
	// Check the grammar first, so that a typo is reported as such even in a long number.
	intStart := i
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(b) && b[i] == '.' {
		i++
		fracStart = i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		fracEnd = i
	}
	if i != len(b) || (intEnd == intStart && fracEnd == fracStart) {
		return 0, numSyntax
	}
	var mag uint64
	if intEnd-intStart+scale <= 19 {
		// At most 19 digits, below 10^19 < 2^64: one range check at the end (the common case).
		for _, c := range b[intStart:intEnd] {
			mag = mag*10 + uint64(c-'0')
		}
		for k := range scale {
			mag *= 10
			if fracStart+k < fracEnd {
				mag += uint64(b[fracStart+k] - '0')
			}
		}
		if mag > math.MaxInt64 {
			return 0, numRange
		}
		return finishFixed(b, mag, neg, fracStart+scale, fracEnd)
	}
	push := func(d uint64) bool {
		if mag > (math.MaxInt64-d)/10 {
			return false
		}
		mag = mag*10 + d
		return true
	}
	for _, c := range b[intStart:intEnd] {
		if !push(uint64(c - '0')) {
			return 0, numRange
		}
	}
	for k := range scale {
		var d uint64
		if fracStart+k < fracEnd {
			d = uint64(b[fracStart+k] - '0')
		}
		if !push(d) {
			return 0, numRange
		}
	}
	return finishFixed(b, mag, neg, fracStart+scale, fracEnd)
}

// finishFixed checks that the digits b[from:to], below the scale, are zeros and returns mag
// with its sign.
func finishFixed(b []byte, mag uint64, neg bool, from, to int) (int64, numErr) {
	for k := from; k < to; k++ {
		if b[k] != '0' {
			return 0, numPrecision
		}
	}
	v := int64(mag)
	if neg {
		v = -v
	}
	return v, numOK
}

// appendSeconds appends the non-negative duration d as exact decimal seconds, with trailing
// zeros of the fraction (and a bare decimal point) removed.
func appendSeconds(b []byte, d int64) []byte {
	const sec = int64(1e9)
	b = strconv.AppendInt(b, d/sec, 10)
	frac := d % sec
	if frac == 0 {
		return b
	}
	var digits [9]byte
	for k := 8; k >= 0; k-- {
		digits[k] = byte('0' + frac%10)
		frac /= 10
	}
	n := 9
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// divRound returns a/b rounded to the nearest integer, halves away from zero, for a ≥ 0 and b > 0.
func divRound(a, b int64) int64 {
	q, r := a/b, a%b
	if r >= b-r {
		q++
	}
	return q
}
