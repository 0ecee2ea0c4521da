// Package clip shortens input echoed in error messages, so that a malformed megabyte-long line
// gives a one-line error of readable length.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of input an error message quotes.
const Max = 256

// Quote returns s quoted like strconv.Quote. Input longer than Max bytes is cut at a character
// boundary, marked with "…" and followed by its length, e.g. "aaaa…" (1048576 bytes).
func Quote[T string | []byte](s T) string {
	if len(s) <= Max {
		return strconv.Quote(string(s))
	}
	n := Max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(string(s[:n])+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// String returns s itself when it has at most Max bytes, else its first Max bytes (cut at a
// character boundary) followed by "…", for text that is not quoted.
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	n := Max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
